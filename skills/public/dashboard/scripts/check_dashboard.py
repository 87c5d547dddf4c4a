"""Check a dashboard: parse the HTML and print its cards, charts and table; refuse network loads.

Usage: python3 check_dashboard.py DASHBOARD.html [--rows N]

Exits 1, naming each problem, when the page loads anything from the network (a script, style,
image, font or frame from http(s):// or //), has no chart or no table, or the table holds a
different number of rows than ``--rows``.
"""

from __future__ import annotations

import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

LOADS = {"src", "href", "data", "poster", "action", "srcset", "formaction", "background"}
REMOTE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
CSS_REMOTE = re.compile(r"(@import|url\()\s*['\"]?\s*(https?:)?//", re.IGNORECASE)


class Dashboard(HTMLParser):
    """Counts what a person sees and collects every reference to the network."""

    def __init__(self) -> None:
        super().__init__()
        self.title, self.cards, self.charts, self.rows, self.columns = "", 0, 0, 0, []
        self.remote: list[str] = []
        self._in, self._text = "", []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, value in attrs:
            if value and (name in LOADS and REMOTE.match(value) or name == "style" and CSS_REMOTE.search(value)):
                self.remote.append(f"<{tag} {name}={value!r}>")
        classes = (values.get("class") or "").split()
        self.cards += "kpi" in classes
        self.charts += tag == "svg"
        if tag == "tr" and self._in == "tbody":
            self.rows += 1
        if tag in ("tbody", "thead", "title", "style"):
            self._in, self._text = tag, []
        if tag == "th" and self._in == "thead":
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._in == "thead":
            self.columns.append("".join(self._text).strip())
        if tag == "title" and self._in == "title" and not self.title:
            self.title = "".join(self._text).strip()
        if tag == "style" and CSS_REMOTE.search("".join(self._text)):
            self.remote.append("a <style> block imports from the network")
        if tag in ("tbody", "thead", "title", "style"):
            self._in = ""

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def main() -> None:
    parser = argparse.ArgumentParser(description="Check a self-contained HTML dashboard.")
    parser.add_argument("dashboard")
    parser.add_argument("--rows", type=int, help="the number of table rows expected")
    args = parser.parse_args()
    path = Path(args.dashboard)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; run dashboard.py with --out {path}")
    page = Dashboard()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    print(f"{path.name}: title {page.title!r}, {page.cards} cards, {page.charts} charts, table of {page.rows} rows")
    print("columns: " + ", ".join(page.columns))
    problems = [f"loads from the network: {r}; the dashboard must work offline" for r in page.remote]
    if not page.charts:
        problems.append("no chart; add --chart bar:X:Y")
    if not page.rows:
        problems.append("the table has no rows; check the data file")
    if args.rows is not None and page.rows != args.rows:
        problems.append(f"the table has {page.rows} rows, not {args.rows}; raise --max-rows or check the data")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
