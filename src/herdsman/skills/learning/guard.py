"""What a learned skill may not hold: secrets, and paths outside the virtual folders.

:func:`scrub` takes secrets out of a text before it is kept: the values of secrets the harness
knows (the user's skill secrets, the process's environment variables whose names say secret),
values assigned to such a name (``API_KEY=...``, ``token = "..."``: the name stays, read from the
environment), and strings shaped like well-known keys (``sk-...``, ``ghp_...``, ``AKIA...``,
private key blocks). The names taken this way become the skill's ``env:``, so its user sets them as
skill secrets (never in the text).

:func:`problems` says why a text cannot be part of a proposal: an absolute path outside
``/mnt/user-data``, the shared skills and the owner's own skills (``/tmp`` and ``/dev/null`` pass),
any ``..`` path part, or a secret left after scrubbing. A proposal with one is not kept; an edited
one is refused at accept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|ACCESS_KEY|PRIVATE_KEY|SECRET(?:_KEY)?|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(?:_|$)",
    re.IGNORECASE,
)  # by whole parts of the name: api_key, OPENAI_API_KEY, auth_token; not sort_key, monkey
_SHELL_ASSIGN = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|'\"]+)")
_PY_ASSIGN = re.compile(
    r"""\b([A-Za-z_][A-Za-z0-9_]*)(\s*[:=]\s*|["']\s*:\s*)(["'])([^"'\n]{4,})\3""",
)
_KEY_SHAPES = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|xox[abposr]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{20,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/-]{16,}=*"
)
REDACTED = "REDACTED"
_PATH = re.compile(r"(?<![\w.:/~$})\]>\\-])/[\w.@+-]+(?:/[\w.@+-]*)*")
_DOTDOT = re.compile(r"(?:^|[\s/'\"=:(,])\.\.(?:/|$|[\s'\")])")
ALLOWED_ROOTS = ("/mnt/user-data", "/mnt/skills/public", "/mnt/skills/custom", "/tmp")
ALLOWED_FILES = frozenset(
    "/dev/null /dev/stdin /dev/stdout /dev/stderr /usr/bin/env /usr/bin/python3 /usr/bin/python /bin/bash /bin/sh "
    "/usr/bin/bash /usr/bin/sh".split()
)
MIN_SECRET = 6


@dataclass
class Scrubbed:
    """A text with its secrets out, and the variable names it now reads them from."""

    text: str
    names: list[str] = field(default_factory=list)
    removed: int = 0


def known_secrets(environ: Mapping[str, str], skill_secrets: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Name -> value of the secrets to look for: every skill secret of the user, and the
    environment's variables whose names say secret (``*_API_KEY``, ``*TOKEN``...)."""
    found = {name: value for name, value in environ.items() if SECRET_NAME.search(name)}
    for variables in skill_secrets.values():
        found.update(variables)
    return {name: value for name, value in found.items() if len(value) >= MIN_SECRET}


def scrub(text: str, secrets: Mapping[str, str]) -> Scrubbed:
    """``text`` without secrets (see the module docstring)."""
    out = Scrubbed(text)

    def note(name: str) -> None:
        out.removed += 1
        if name not in out.names:
            out.names.append(name)

    for name, value in sorted(secrets.items(), key=lambda kv: -len(kv[1])):
        if value in out.text:
            out.text = out.text.replace(value, f"${{{name}}}")
            note(name)

    def shell(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if not SECRET_NAME.search(name) or value.strip("'\"").startswith("$"):
            return match.group(0)
        note(name.upper())
        return f'{name}="${{{name.upper()}}}"'

    def python(match: re.Match[str]) -> str:
        name, sep, quote, value = match.groups()
        if not SECRET_NAME.search(name) or value.startswith("$") or " " in value:
            return match.group(0)
        note(name.upper())
        return f"{name}{sep}__import__('os').environ.get({name.upper()!r}, '')"

    out.text = _SHELL_ASSIGN.sub(shell, out.text)
    out.text = _PY_ASSIGN.sub(python, out.text)
    out.text, shapes = _KEY_SHAPES.subn(REDACTED, out.text)
    out.removed += shapes
    return out


def _allowed(path: str, own: str | None) -> bool:
    if path in ALLOWED_FILES:
        return True
    roots = (*ALLOWED_ROOTS, own) if own else ALLOWED_ROOTS
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def problems(text: str, own_dir: str | None, where: str) -> list[str]:
    """Why ``text`` (of the file ``where``) cannot be kept: paths outside the virtual folders
    (``own_dir``, ``/mnt/skills/users/<owner>``, is allowed too), ``..`` parts, secrets left."""
    found: list[str] = []
    outside = sorted({p for p in _PATH.findall(text) if not _allowed(p.rstrip("/.") or "/", own_dir)})
    if outside:
        found.append(
            f"{where} names {', '.join(outside[:3])}: a skill may use only /mnt/user-data, /mnt/skills and /tmp"
        )
    if _DOTDOT.search(text):
        found.append(f"{where} has a '..' path part, which could leave the virtual folders")
    if _KEY_SHAPES.search(text):
        found.append(f"{where} holds what looks like a key or token; take it out (skills read secrets from env)")
    return found


def all_problems(files: Mapping[str, str], own_dir: str | None) -> list[str]:
    """:func:`problems` of every text file of a skill folder (name -> text)."""
    return [p for name, text in files.items() for p in problems(text, own_dir, name)]


RISKY = (
    (re.compile(r"\b(?:curl|wget|nc|ncat|ssh|scp|rsync|ftp)\b"), "reaches the network"),
    (re.compile(r"\b(?:pip3?|npm|apt(?:-get)?|uv)\s+(?:install|add)\b"), "installs packages"),
    (re.compile(r"\brm\s+-[a-zA-Z]*[rf]"), "deletes files recursively or by force"),
    (re.compile(r"\b(?:sudo|su|chmod|chown)\b"), "changes permissions or users"),
    (re.compile(r"\b(?:eval|exec)\b|base64\s+(?:-d|--decode)|\|\s*(?:ba)?sh\b"), "runs code it builds or downloads"),
    (re.compile(r"\b(?:requests|urllib|httpx|socket)\b"), "reaches the network"),
)


def review_notes(files: Iterable[tuple[str, str]]) -> list[str]:
    """What a person should look at before accepting: commands that reach the network, install,
    delete, change permissions or run built code (by file)."""
    notes: list[str] = []
    for name, text in files:
        for pattern, what in RISKY:
            if pattern.search(text):
                note = f"{name} {what}"
                if note not in notes:
                    notes.append(note)
    return notes
