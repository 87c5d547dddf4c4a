"""Check meeting notes written from the template: structure, action items, owners, due dates.

Usage: python3 check_notes.py NOTES.md [--source RAW_NOTES.txt] [--csv ACTIONS.csv]

The notes must have, in this order: a ``# Title - YYYY-MM-DD`` line, an ``**Attendees:**`` line,
and the sections Summary, Decisions, Action items (a table ``| # | Owner | Task | Due |``) and
Open questions. Every action item needs an owner, a task and a due date (YYYY-MM-DD, a real
date) or TBD; no ``<placeholder>`` of the template may be left. With ``--source`` every owner
must be named in the raw notes (no invented people). With ``--csv`` the action items are also
written as a CSV a spreadsheet opens, once there is no problem. Prints the action items, then OK or each problem.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from datetime import date
from pathlib import Path

SECTIONS = ("Summary", "Decisions", "Action items", "Open questions")
TITLE = re.compile(r"^# (?P<title>.+?)\s+[-\u2013\u2014]\s+(?P<date>\d{4}-\d{2}-\d{2})\s*$")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def real_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def check(text: str, source: str | None) -> tuple[list[str], list[dict[str, str]], int]:
    """Problems, action items and the number of decisions in the notes ``text``."""
    lines = text.splitlines()
    problems: list[str] = []
    title = next((line for line in lines if line.startswith("# ")), "")
    match = TITLE.match(title)
    if not match:
        problems.append("the first line must be '# <Meeting title> - YYYY-MM-DD' (the meeting's date)")
    elif not real_date(match["date"]):
        problems.append(f"the title's date {match['date']} is not a real date")
    if not any(line.startswith("**Attendees:**") and line[14:].strip() for line in lines):
        problems.append("add a line '**Attendees:** <names>' under the title")
    headings = [line[3:].strip() for line in lines if line.startswith("## ")]
    missing = [s for s in SECTIONS if s not in headings]
    if missing:
        problems.append(f"missing sections: {', '.join('## ' + s for s in missing)}")
    elif [h for h in headings if h in SECTIONS] != list(SECTIONS):
        problems.append(f"put the sections in this order: {', '.join(SECTIONS)}")
    body: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if line.startswith("## "):
            current = line[3:].strip()
            body[current] = []
        elif current and line.strip():
            body[current].append(line.strip())
    decisions = [line for line in body.get("Decisions", []) if line.startswith(("-", "*"))]
    if "Decisions" in body and not decisions:
        problems.append("list each decision as '- ...' under ## Decisions (write '- None' if there was none)")
    items: list[dict[str, str]] = []
    table = [line for line in body.get("Action items", []) if line.startswith("|")]
    if "Action items" in body:
        if not table or [c.lower() for c in cells(table[0])] != ["#", "owner", "task", "due"]:
            problems.append("## Action items needs the table header '| # | Owner | Task | Due |'")
        else:
            for n, line in enumerate(table[2:], 1):
                row = cells(line)
                if len(row) != 4:
                    problems.append(f"action item {n}: give 4 cells (# | Owner | Task | Due), found {len(row)}")
                    continue
                item = dict(zip(("number", "owner", "task", "due"), row))
                items.append(item)
                if not item["owner"]:
                    problems.append(f"action item {n} has no owner; name the person (from the notes) or write 'Unassigned'")
                if not item["task"]:
                    problems.append(f"action item {n} has no task")
                if item["due"] != "TBD" and not real_date(item["due"]):
                    problems.append(f"action item {n}: due {item['due']!r} must be YYYY-MM-DD or TBD")
                if source is not None and item["owner"] not in ("", "Unassigned"):
                    for person in re.split(r"\s*(?:,|&|\band\b)\s*", item["owner"]):
                        if person and person.lower() not in source.lower():
                            problems.append(f"action item {n}: owner {person!r} is not in the raw notes; use a name from the notes")
            if not items:
                problems.append("no action items in the table; add a row per task (or one row: | 1 | Unassigned | None | TBD |)")
    placeholders = sorted(set(re.findall(r"<[A-Z][^<>]{0,60}>", text)))
    if placeholders:
        problems.append(f"replace the template's placeholders: {', '.join(placeholders)}")
    return problems, items, len(decisions)


def main() -> None:
    parser = argparse.ArgumentParser(description="Check meeting notes made from the template.")
    parser.add_argument("notes")
    parser.add_argument("--source", help="the raw notes, to check that every owner is named there")
    parser.add_argument("--csv", help="also write the action items to this CSV file")
    args = parser.parse_args()
    path = Path(args.notes)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; write the notes there first")
    source = None
    if args.source:
        if not Path(args.source).is_file():
            sys.exit(f"problem: --source {args.source} does not exist")
        source = Path(args.source).read_text(encoding="utf-8", errors="replace")
    problems, items, decisions = check(path.read_text(encoding="utf-8"), source)
    print(f"{path.name}: {decisions} decisions, {len(items)} action items")
    for item in items:
        print(f"  {item['number']}. {item['owner']}: {item['task']} (due {item['due']})")
    if args.csv and items and not problems:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=["number", "owner", "task", "due"])
            writer.writeheader()
            writer.writerows(items)
        print(f"wrote {args.csv}")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        if args.csv:
            print(f"{args.csv} is written once there is no problem left")
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
