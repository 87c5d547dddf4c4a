"""Commands the harness proposes, checked for sense before a note carries them.

A note of the completion check may hand the model a whole command to copy ("run it again with
its output saved: ``python3 - > /mnt/user-data/outputs/report.txt <<'EOF' ...``"). For a text
deliverable that is the shortest way out; for a binary one it is nonsense that a small model
copies faithfully: ``python3 - > outputs/totals.png`` printed the script's text into a PNG. So:

* :func:`binary_file` tells a binary deliverable by its type (from its name, through
  :mod:`mimetypes`: images, audio, video, fonts, PDF, archives, office documents), in any
  language;
* :func:`redirect_targets` lists the files a command's output is sent to (``>``, ``>>``,
  ``tee``), and :func:`senseless` names the first binary one;
* a rule proposing a command for a binary file proposes running the code that saves the file
  itself instead (``completion/files.py``), and :func:`~herdsman.middleware.completion.findings_text.render`
  drops any proposed command :func:`senseless` refuses, whatever rule made it.

Hand-written: a redirection target is one shell word after ``>`` or ``tee``; a shell parser
(``bashlex``) would read more of a command line, and nothing more is needed here.
"""

from __future__ import annotations

import mimetypes
import re

_TEXT_APPLICATION = {
    "json",
    "xml",
    "javascript",
    "ecmascript",
    "x-sh",
    "x-csh",
    "x-python",
    "x-python-code",
    "yaml",
    "x-yaml",
    "toml",
    "sql",
    "x-sql",
    "x-tex",
    "x-latex",
    "x-httpd-php",
    "x-perl",
    "x-ruby",
    "x-javascript",
    "rtf",
    "x-ipynb+json",
    "csv",
    "x-troff",
    "x-subrip",
    "graphql",
    "x-ndjson",
    "jsonl",
}
_BINARY_MAJOR = ("image", "audio", "video", "font", "model")
_TEXT_SUFFIXES = (
    ".ts",
    ".tsx",
    ".md",
    ".r",
    ".rst",
    ".env",
    ".conf",
    ".ini",
    ".cfg",
)  # types some systems call binary (.ts: MPEG)
_REDIRECT = re.compile(r"(?<![<>&\d])(?:\d)?>{1,2}\|?\s*([^\s;|&<>()'\"]+)|\btee\s+(?:-a\s+)?([^\s;|&<>()'\"]+)")


def binary_file(name: str) -> bool:
    """Whether a file named ``name`` holds binary data (a PNG, a PDF, a zip, a .docx...), by the
    type its name gives; an unknown type counts as text (a source file, a log)."""
    if name.lower().endswith(_TEXT_SUFFIXES):
        return False
    kind, encoding = mimetypes.guess_type(name, strict=False)
    if encoding is not None:
        return True  # .gz, .bz2, .xz
    if kind is None:
        return False
    major, _, minor = kind.partition("/")
    if major in _BINARY_MAJOR:
        return not minor.endswith("+xml")  # an SVG is text
    if major == "application":
        return not (minor in _TEXT_APPLICATION or minor.endswith(("+json", "+xml")))
    return False


def redirect_targets(command: str) -> list[str]:
    """The files ``command`` sends its output to (``> f``, ``>> f``, ``tee f``; not ``2>&1`` or ``/dev/null``)."""
    found = [a or b for a, b in _REDIRECT.findall(command)]
    return [f for f in found if f and not f.startswith(("&", "/dev/"))]


def senseless(command: str) -> str | None:
    """The binary file ``command`` would print text into (the first), or None when it makes sense."""
    return next((target for target in redirect_targets(command) if binary_file(target)), None)
