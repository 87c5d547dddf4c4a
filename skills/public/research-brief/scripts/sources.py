"""List the uploaded files a research brief may cite, each with its number [n].

Usage: python3 sources.py UPLOADS_DIR

Files are numbered in the order of their paths (sorted), so the numbers are the same each time
this runs and the validator (check_brief.py) finds the same source under the same number. Text
files get a title (their first heading or first line), a word count and the URLs they contain;
other files (images, archives) are listed as not quotable. Hidden files and folders are skipped.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

TEXT = {".md", ".markdown", ".txt", ".html", ".htm", ".csv", ".tsv", ".json", ".rst", ".xml", ".eml", ".log", ".yaml", ".yml"}
URL = re.compile(r"https?://[^\s<>()\"'\]\[]+")
MAX_BYTES = 5_000_000


@dataclass
class Source:
    """One uploaded file: its number, path relative to the uploads folder, title and text."""

    number: int
    name: str
    path: Path
    title: str = ""
    text: str | None = None
    urls: list[str] = field(default_factory=list)


def clean_url(url: str) -> str:
    """A URL without the sentence punctuation that often follows it."""
    return url.rstrip(".,;:!?")


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is not a (small enough) text file."""
    if path.suffix.lower() not in TEXT or path.stat().st_size > MAX_BYTES:
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        text = re.sub(r"(?s)<(script|style).*?</\1>", " ", text)
        text = re.sub(r"<[^>]+>", " ", text)
    return text


def title_of(text: str) -> str:
    """The first heading, else the first non-empty line, cut to 80 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    heading = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), None)
    return (heading or (lines[0] if lines else "(empty)"))[:80]


def list_sources(folder: Path) -> list[Source]:
    """Every regular file under ``folder`` (no symlinks, no hidden files), numbered from 1."""
    files = sorted(
        p for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    sources = []
    for number, path in enumerate(files, 1):
        source = Source(number, path.relative_to(folder).as_posix(), path)
        source.text = read_text(path)
        if source.text is not None:
            source.title = title_of(source.text)
            source.urls = sorted({clean_url(u) for u in URL.findall(source.text)})
        sources.append(source)
    return sources


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python3 sources.py UPLOADS_DIR")
    folder = Path(sys.argv[1])
    if not folder.is_dir():
        sys.exit(f"error: {folder} is not a folder; the uploads are in /mnt/user-data/uploads")
    sources = list_sources(folder)
    if not sources:
        sys.exit(f"error: no files in {folder}; ask the user to upload the sources")
    print(f"{len(sources)} sources in {folder}:")
    for s in sources:
        if s.text is None:
            print(f"[{s.number}] {s.name} - (not a text file; cannot be quoted)")
            continue
        print(f"[{s.number}] {s.name} - {s.title} ({len(s.text.split())} words) path: {s.path}")
        for url in s.urls:
            print(f"      url: {url}")
    print("Cite a source by its number, e.g. [1]; copy its line into ## Sources.")


if __name__ == "__main__":
    main()
