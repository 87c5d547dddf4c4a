"""Inventory a code folder for review: files, line counts, and mechanical findings.

Usage: python3 inventory.py REPO_DIR [--long 50]

Lists every source file (skipping .git, virtualenvs, node_modules, caches and binary files) with
its line count, then findings as ``path:line: kind: message``: Python syntax errors (compiled
with py_compile into a temporary folder, so nothing is written into the repository), bare
``except:``, TODO/FIXME/XXX/HACK comments in any file, and Python functions longer than --long
lines (measured with the ast module). check_review.py uses the same walk and findings.
"""

from __future__ import annotations

import argparse
import ast
import py_compile
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", "env", ".tox", ".mypy_cache", ".pytest_cache", "dist", "build"}
TODO = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b[:\s]*(.*)")
MAX_BYTES = 2_000_000
MAX_FILES = 5_000  # beyond this the review covers the first files in path order
SHOWN = 150


@dataclass
class Finding:
    """One mechanical finding at ``path:line``."""

    path: str
    line: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.message}"


def code_files(repo: Path) -> dict[str, list[str]]:
    """Relative path -> lines of every text file under ``repo`` (no symlinks, no binaries)."""
    files: dict[str, list[str]] = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if any(part in SKIP_DIRS for part in rel.parts[:-1]) or path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size > MAX_BYTES:
            continue
        data = path.read_bytes()
        if b"\0" in data[:4096]:
            continue
        files[rel.as_posix()] = data.decode("utf-8", errors="replace").splitlines()
        if len(files) == MAX_FILES:
            break
    return files


def python_findings(repo: Path, name: str, lines: list[str], long: int, scratch: str) -> list[Finding]:
    """Syntax errors, bare excepts and long functions of one Python file."""
    try:
        py_compile.compile(str(repo / name), cfile=str(Path(scratch) / "x.pyc"), doraise=True)
    except py_compile.PyCompileError as error:
        inner = error.exc_value
        line = getattr(inner, "lineno", None) or 1
        message = getattr(inner, "msg", None) or str(inner)
        return [Finding(name, line, "syntax error", f"{message} (the file does not run)")]
    found: list[Finding] = []
    tree = ast.parse("\n".join(lines), filename=name)
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is None:
            found.append(Finding(name, node.lineno, "bare except", "catches everything, even KeyboardInterrupt; name the exception"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > long:
                found.append(Finding(name, node.lineno, "long function", f"{node.name}() is {length} lines; consider splitting it"))
    return found


def inventory(repo: Path, long: int = 50) -> tuple[dict[str, list[str]], list[Finding]]:
    """The files of ``repo`` and the findings, sorted by file and line."""
    files = code_files(repo)
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, lines in files.items():
            if name.endswith(".py"):
                findings += python_findings(repo, name, lines, long, scratch)
            for number, line in enumerate(lines, 1):
                match = TODO.search(line)
                if match and ("#" in line or "//" in line or "<!--" in line or name.endswith((".md", ".txt"))):
                    findings.append(Finding(name, number, match[1].lower(), match[2].strip()[:80] or "(no text)"))
    findings.sort(key=lambda f: (f.path, f.line))
    return files, findings


def main() -> None:
    parser = argparse.ArgumentParser(description="Inventory a code folder for review.")
    parser.add_argument("repo")
    parser.add_argument("--long", type=int, default=50, help="report functions longer than this many lines")
    args = parser.parse_args()
    repo = Path(args.repo)
    if not repo.is_dir():
        sys.exit(f"error: {repo} is not a folder; give the uploaded folder, e.g. /mnt/user-data/uploads/<folder>")
    files, findings = inventory(repo, args.long)
    if not files:
        sys.exit(f"error: no text files in {repo}")
    print(f"{len(files)} files, {sum(len(v) for v in files.values())} lines in {repo}:")
    for name, lines in list(files.items())[:SHOWN]:
        print(f"  {name} ({len(lines)} lines)")
    if len(files) > SHOWN:
        print(f"  ... and {len(files) - SHOWN} more files (see them with ls or glob)")
    kinds = sorted({f.kind for f in findings})
    print(f"{len(findings)} findings" + (f" ({', '.join(f'{sum(f.kind == k for f in findings)} {k}' for k in kinds)})" if kinds else "") + ":")
    for finding in findings:
        print(f"  {finding}")


if __name__ == "__main__":
    main()
