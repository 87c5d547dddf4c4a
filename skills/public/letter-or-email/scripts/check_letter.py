"""Open a letter or email (.docx with python-docx, .eml with the email package, .md/.txt as text)
and print it; then ``OK``, or one line per problem and exit status 1.

Usage: python3 check_letter.py FILE

Problems: placeholder text left in (``[Name]``, ``TODO``, ``$date``, ``{name}``), no greeting
or no closing, an empty body, and for .eml a missing To, From or Subject.
"""

from __future__ import annotations

import re
import sys
from email import policy
from email.parser import BytesParser
from pathlib import Path

PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Za-z ]*\]|\bTODO\b|\bTBD\b|\bXXX\b|\$[a-z_]+\b|\{\{?[a-z_]+\}?\}|lorem ipsum", re.IGNORECASE)
GREETING_RE = re.compile(r"^(dear|hello|hi|good (morning|afternoon|evening)|to whom)\b", re.IGNORECASE | re.MULTILINE)
CLOSING_RE = re.compile(r"^(kind|best|warm)?\s*(regards|wishes)|^(yours|sincerely|thank you|thanks|cheers)", re.IGNORECASE | re.MULTILINE)


def read(path: Path) -> tuple[str, list[str]]:
    """``(text, problems)`` of the file; the problems of an .eml's headers are found here."""
    problems: list[str] = []
    suffix = path.suffix.lower()
    if suffix == ".docx":
        try:
            from docx import Document
        except ImportError:
            sys.exit("error: python-docx is not installed in this sandbox; check the .md version instead")
        return "\n".join(p.text for p in Document(str(path)).paragraphs), problems
    if suffix == ".eml":
        message = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
        for header in ("From", "To", "Subject"):
            if not str(message.get(header) or "").strip():
                problems.append(f"the email has no {header} header; fill it in the JSON and build again")
        body = message.get_body(preferencelist=("plain",))
        text = body.get_content() if body is not None else ""
        return f"From: {message['From']}\nTo: {message['To']}\nSubject: {message['Subject']}\n\n{text}", problems
    return path.read_text(encoding="utf-8", errors="replace"), problems


def check(path: Path) -> tuple[str, list[str]]:
    """``(text, problems)`` of the letter or email at ``path``."""
    text, problems = read(path)
    if not GREETING_RE.search(text):
        problems.append("no greeting line (such as 'Dear Ms Smith,'); add one")
    if not CLOSING_RE.search(text):
        problems.append("no closing line (such as 'Kind regards,'); add one")
    if len(text.split()) < 20:
        problems.append("the body is nearly empty; write the paragraphs from the user's notes")
    for placeholder in sorted({m.group(0) for m in PLACEHOLDER_RE.finditer(text)}):
        problems.append(f"placeholder text {placeholder!r} is left in; replace it with the real content")
    return text, problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_letter.py FILE")
    letter = Path(sys.argv[1])
    if letter.suffix.lower() not in (".docx", ".eml", ".md", ".txt"):
        sys.exit(f"error: check_letter.py reads .docx, .eml, .md or .txt, not {letter.name}")
    if not letter.is_file():
        sys.exit(f"error: {letter} does not exist; build it with make_letter.py first")
    content, found = check(letter)
    print(f"{letter.name}: {len(content.split())} words")
    print(content.strip())
    print("---")
    print("\n".join(found))
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
