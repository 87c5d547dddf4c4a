"""Write a letter or an email from a JSON of its parts, through the templates of this skill.

Usage: python3 make_letter.py LETTER.json OUT.docx|OUT.md|OUT.eml|OUT.txt

LETTER.json:
    {"from": {"name": "Ana Silva", "address": ["1 Main St", "Lisbon"], "email": "ana@example.org"},
     "to": {"name": "Mr Jones", "address": ["Acme Ltd", "2 High St", "Leeds"], "email": "jones@example.org"},
     "date": "2 December 2026", "subject": "Delivery of order 1234",
     "greeting": "Dear Mr Jones,", "paragraphs": ["First paragraph.", "Second paragraph."],
     "closing": "Kind regards,", "signature": "Ana Silva"}
"address", "email" and "date" are optional (the date defaults to today). ``.docx`` is a Word
letter (python-docx), ``.md`` fills templates/letter.md, ``.txt`` fills templates/email.md (an
email to paste), ``.eml`` is an email a mail program opens (the standard library's email
package; it needs both "email" addresses) whose text is templates/email.md's body. Every mistake exits with status 1 and says what to fix.
"""

from __future__ import annotations

import datetime
import json
import sys
from email.message import EmailMessage
from email.utils import formataddr, formatdate
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
REQUIRED = ("from", "to", "subject", "greeting", "paragraphs", "closing", "signature")


def fail(message: str) -> None:
    """Exit with ``error: message`` and status 1."""
    sys.exit(f"error: {message}")


def load(path: Path) -> dict:
    """The letter's parts from ``path``, checked."""
    if not path.is_file():
        fail(f"{path} does not exist; write the letter's parts there first")
    try:
        parts = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; fix it and run again")
    if not isinstance(parts, dict):
        fail(f"{path}: the file must hold one JSON object with the fields {', '.join(REQUIRED)}")
    missing = [k for k in REQUIRED if not parts.get(k)]
    if missing:
        fail(f"{path}: missing or empty: {', '.join(missing)}; fill them from the user's notes (ask if you do not know them)")
    for side in ("from", "to"):
        if not isinstance(parts[side], dict) or not str(parts[side].get("name") or "").strip():
            fail(f'{path}: "{side}" must be an object with at least a "name", e.g. {{"name": "Ana Silva"}}')
    if isinstance(parts["paragraphs"], str):
        parts["paragraphs"] = [p for p in parts["paragraphs"].split("\n\n") if p.strip()]
    parts.setdefault("date", datetime.date.today().strftime("%-d %B %Y"))
    return parts


def address_line(person: dict) -> str:
    """``Name <email>``, or the name alone when there is no address."""
    email = str(person.get("email") or "").strip()
    return formataddr((str(person["name"]), email)) if email else str(person["name"])


def block(person: dict) -> list[str]:
    """The lines of a name-and-address block."""
    address = person.get("address") or []
    return [str(person["name"])] + ([address] if isinstance(address, str) else [str(a) for a in address])


def fill(template: str, parts: dict) -> str:
    """``templates/<template>`` with the parts in place."""
    sender, recipient = parts["from"], parts["to"]
    return Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(
        sender_block="  \n".join(block(sender)),
        recipient_block="  \n".join(block(recipient)),
        sender_line=address_line(sender),
        recipient_line=address_line(recipient),
        date=parts["date"], subject=parts["subject"], greeting=parts["greeting"],
        body="\n\n".join(str(p) for p in parts["paragraphs"]),
        closing=parts["closing"], signature=parts["signature"],
    )


def write_docx(parts: dict, out: Path) -> None:
    """A Word letter: sender block on the right, date, recipient, subject in bold, body, signature."""
    try:
        from docx import Document
        from docx.enum.text import WD_ALIGN_PARAGRAPH
    except ImportError:
        fail("python-docx is not installed in this sandbox; write the letter as .md instead, or tell the user to run scripts/install-system.sh")
    document = Document()
    document.core_properties.title = str(parts["subject"])
    document.core_properties.author = str(parts["from"]["name"])
    for line in block(parts["from"]) + [parts["date"]]:
        document.add_paragraph(line).alignment = WD_ALIGN_PARAGRAPH.RIGHT
    for line in block(parts["to"]):
        document.add_paragraph(line)
    document.add_paragraph().add_run(f"Subject: {parts['subject']}").bold = True
    for text in [parts["greeting"], *parts["paragraphs"], parts["closing"], "", parts["signature"]]:
        document.add_paragraph(str(text))
    document.save(str(out))


def write_eml(parts: dict, out: Path) -> None:
    """An RFC 5322 email with a plain-text body, ready to open in a mail program."""
    for side in ("from", "to"):
        if "@" not in str(parts[side].get("email") or ""):
            fail(f'an .eml needs "{side}": {{"email": "..."}}; add the address, or write .md instead')
    message = EmailMessage()
    try:
        message["From"], message["To"] = address_line(parts["from"]), address_line(parts["to"])
        message["Subject"] = str(parts["subject"])
    except ValueError as exc:  # a line break in a header would let the text add headers of its own
        fail(f'{exc}: keep "subject", the names and the addresses on one line each')
    message["Date"] = formatdate(localtime=False)
    message.set_content(fill("email.md", parts).split("\n\n", 1)[1].lstrip("\n"))
    out.write_bytes(bytes(message))


def main(argv: list[str]) -> None:
    """``make_letter.py LETTER.json OUT``."""
    if len(argv) != 2:
        fail("usage: make_letter.py LETTER.json OUT.docx|OUT.md|OUT.eml|OUT.txt")
    source, out = Path(argv[0]), Path(argv[1])
    kind = out.suffix.lower()
    if kind not in (".docx", ".md", ".eml", ".txt"):
        fail(f"the output {out} must end in .docx or .md (a letter), .eml (an email file) or .txt (an email's text)")
    parts = load(source)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if kind == ".docx":
            write_docx(parts, out)
        elif kind == ".eml":
            write_eml(parts, out)
        else:
            out.write_text(fill("letter.md" if kind == ".md" else "email.md", parts), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}; write it under /mnt/user-data/outputs")
    print(f"wrote {out}: to {parts['to']['name']}, subject {parts['subject']!r}, {len(parts['paragraphs'])} paragraph(s)")
    print(f"check it with: python3 {Path(__file__).with_name('check_letter.py')} {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
