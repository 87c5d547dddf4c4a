"""Check a code review against the repository it reviews.

Usage: python3 check_review.py REVIEW.md --repo REPO_DIR

Checks: a ``# `` title and the sections Summary, Findings and Suggestions; every finding line
has a severity (**high**, **medium**, **low**) and a ``path:line`` reference; every ``path:line``
in the review and every file a finding names exists in the repository, every line number within
its file (a suggestion may name a file to create); every Python
syntax error inventory.py finds is named in a **high** finding; no template ``<placeholder>`` is
left. Prints the findings per severity, then OK or each problem with what to fix.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inventory import inventory  # noqa: E402

SECTIONS = ("Summary", "Findings", "Suggestions")
SEVERITIES = ("high", "medium", "low")
EXTENSIONS = "py|pyi|js|jsx|ts|tsx|mjs|cjs|java|kt|go|rs|rb|php|c|h|cc|cpp|hpp|cs|swift|sh|bash|sql|html|css|scss|md|rst|txt|toml|yaml|yml|json|ini|cfg|xml|lock"
REF = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:{EXTENSIONS}))(?::(\d+)(?:-(\d+))?)?(?![\w-])")


def references(line: str) -> list[tuple[str, int | None, int | None]]:
    """(path, first line, last line) of every file reference in ``line``."""
    return [(m[1], int(m[2]) if m[2] else None, int(m[3]) if m[3] else None) for m in REF.finditer(line)]


def resolve(name: str, files: dict[str, list[str]], repo: Path) -> str | None:
    """The repository path ``name`` refers to: as given, or with the folder's own path before it."""
    for prefix in (f"{repo.as_posix().rstrip('/')}/", f"{repo.name}/", ""):
        if name.startswith(prefix) and name[len(prefix):] in files:
            return name[len(prefix):]
    return None


def check(text: str, repo: Path) -> tuple[list[str], dict[str, int]]:
    """Problems with the review ``text`` and the number of findings per severity."""
    problems: list[str] = []
    files, found = inventory(repo)
    if not text.lstrip().startswith("# "):
        problems.append("start the review with '# Code review: <folder>'")
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        else:
            sections.setdefault(current, []).append(line)
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        problems.append(f"add the sections {', '.join('## ' + s for s in missing)}")
    counts = dict.fromkeys(SEVERITIES, 0)
    findings = [line.strip() for line in sections.get("Findings", []) if line.strip().startswith(("-", "*"))]
    if "Findings" in sections and not findings:
        problems.append("list the findings under ## Findings as '- **high** `path:line` - ...' lines")
    high_files: set[str] = set()
    for n, line in enumerate(findings, 1):
        severity = next((s for s in SEVERITIES if f"**{s}**" in line.lower()), None)
        if severity is None:
            problems.append(f"finding {n} has no severity; start it with **high**, **medium** or **low**")
        else:
            counts[severity] += 1
        if not any(start for _, start, _ in references(line)):
            problems.append(f"finding {n} names no `path:line`; add the file and line it is about")
        if severity == "high":
            high_files |= {resolve(name, files, repo) for name, _, _ in references(line)}
    named = [ref for line in text.splitlines() for ref in references(line) if ref[1] is not None]
    named += [ref for line in findings for ref in references(line) if ref[1] is None]
    for name, start, end in named:
        path = resolve(name, files, repo)
        if path is None:
            problems.append(f"{name} is not a file in the repository; use a path from inventory.py")
            continue
        size = len(files[path])
        for number in (start, end):
            if number is not None and not 1 <= number <= size:
                problems.append(f"{name}:{number} is past the end; {path} has {size} lines")
    for finding in found:
        if finding.kind == "syntax error" and finding.path not in high_files:
            problems.append(f"{finding.path}:{finding.line} has a syntax error; add it as a **high** finding")
    placeholders = sorted(set(re.findall(r"<[A-Z][^<>]{0,40}>", text)))
    if placeholders:
        problems.append(f"replace the placeholders {', '.join(placeholders)}")
    return list(dict.fromkeys(problems)), counts


def main() -> None:
    parser = argparse.ArgumentParser(description="Check a code review against the repository.")
    parser.add_argument("review")
    parser.add_argument("--repo", required=True, help="the reviewed folder (as given to inventory.py)")
    args = parser.parse_args()
    path, repo = Path(args.review), Path(args.repo)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; write the review there first")
    if not repo.is_dir():
        sys.exit(f"problem: --repo {repo} is not a folder")
    problems, counts = check(path.read_text(encoding="utf-8"), repo)
    print(f"{path.name}: {sum(counts.values())} findings ({', '.join(f'{v} {k}' for k, v in counts.items())})")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
