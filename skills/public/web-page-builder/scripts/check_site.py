"""Check a static site: every local link and asset exists, pages have a title and viewport,
images have alt text, nothing is loaded from the network. Prints OK or one line per problem.

Usage: python3 check_site.py SITE_DIR
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.title = False
        self.viewport = False
        self.images_without_alt = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "title":
            self.title = True
        if tag == "meta" and a.get("name") == "viewport":
            self.viewport = True
        if tag == "img" and not (a.get("alt") or "").strip():
            self.images_without_alt += 1
        for key in ("href", "src"):
            if a.get(key):
                self.refs.append((tag, a[key] or ""))


def check(site: Path) -> list[str]:
    problems: list[str] = []
    if not (site / "index.html").is_file():
        problems.append(f"{site}/index.html is missing: the entry page must be index.html")
    for page in sorted(site.rglob("*.html")):
        name = page.relative_to(site)
        parser = Page()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        if not parser.title:
            problems.append(f"{name}: no <title>")
        if not parser.viewport:
            problems.append(f'{name}: no <meta name="viewport" content="width=device-width, initial-scale=1">')
        if parser.images_without_alt:
            problems.append(f"{name}: {parser.images_without_alt} image(s) without alt text")
        for tag, ref in parser.refs:
            url = urlparse(ref)
            if url.scheme in ("http", "https") or ref.startswith("//"):
                if tag != "a":
                    problems.append(f"{name}: <{tag}> loads {ref} from the network; copy it into assets/")
                continue
            if url.scheme in ("mailto", "tel", "data", "javascript") or not url.path:
                continue
            target = (site / url.path.lstrip("/")) if url.path.startswith("/") else (page.parent / unquote(url.path))
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{name}: <{tag}> points to {ref}, which does not exist")
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_site.py SITE_DIR")
    site = Path(sys.argv[1])
    if not site.is_dir():
        sys.exit(f"error: {site} is not a directory; write the site there first")
    found = check(site)
    for problem in found:
        print(problem)
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
