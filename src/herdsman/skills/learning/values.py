"""The values of a request that become a learned skill's parameters.

A value is a candidate when the request names it: a path under ``/mnt/user-data``, a file name
(``sales.csv``), a quoted string, a number, or a word that a script uses whole as a string
(``'amount'``) or a command as one of its words (``grep ERROR``). It becomes a parameter only when
the steps that worked use it (:func:`parameters`), so a word of the request that the work never
touched stays out. Each parameter is named from its role (``input``, ``output``) or from the
word before it in the request (``factor 2``: ``factor``), as an identifier a script and a shell
both accept.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from herdsman.skills.learning.heredoc import python_programs

Kind = Literal["path", "file", "number", "text"]

_PATH = re.compile(r"/mnt/user-data/(?:uploads|workspace|outputs)/[^\s'\"`,;:()\[\]<>|&]+")
_FILE = re.compile(r"(?<![\w/.-])[A-Za-z0-9_][\w-]*(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,4}(?![\w/-])")
_QUOTED = re.compile(r"'([^'\n]{1,60})'|\"([^\"\n]{1,60})\"|`([^`\n]{1,60})`|“([^”\n]{1,60})”")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z0-9_]{2,40}(?![\w/])")
_NAME_WORD = re.compile(r"[A-Za-z][A-Za-z_]{2,20}")
STOP = frozenset(
    """a an the of to in on at by for from with into onto as and or but not no is are be was were it its
    this that these those each every all any some my your our their his her them they me you we i than then
    so per via out up down over under about after before again only just also very more most less least
    please can could would should will shall may might must do does did done make made create write read
    put give get take turn convert extract resize count sum find filter sort keep list show compute group
    select save use using file files folder data new same one two three lines line times time above below
    greater smaller higher lower equal where which when what there here""".split()
)
ROLE_BY_FOLDER = {"uploads": "input", "workspace": "work_file", "outputs": "output"}
MAX_PARAMETERS = 8
MAX_REQUEST = 4000
"""Characters of the request searched for values: a skill's values are in what the user typed,
and the search is quadratic in the number of values (a pasted document would take minutes)."""


@dataclass(frozen=True)
class Parameter:
    """A value of the request the steps use: ``name`` (an identifier), ``value`` as written,
    ``kind``, and ``words``: the request around it, to describe it."""

    name: str
    value: str
    kind: Kind
    words: str

    @property
    def variable(self) -> str:
        """The shell variable that holds it (``INPUT``)."""
        return self.name.upper()


RESERVED = frozenset(
    """skill_args help path home ifs shell uid euid ppid pwd oldpwd user lang term tmpdir random seconds
    lineno hostname hosttype ostype bash shlvl ps1 ps2 ps4 opterr optind pipestatus groups""".split()
)
"""Names a parameter may not take: argparse's ``--help``, and shell variables that setting (or
trying to, for the read-only ones) would break the skill's block (``PATH=old``)."""


def _identifier(word: str) -> str:
    """``word`` as a name both Python and a shell accept (``class``: ``class_value``, ``path``:
    ``path_value``)."""
    name = re.sub(r"[^a-z0-9]+", "_", word.lower()).strip("_")
    name = name if name and name[0].isalpha() else f"value_{name}".strip("_")
    reserved = keyword.iskeyword(name) or name in RESERVED or name.startswith(("ld_", "python", "bash_"))
    return f"{name}_value" if reserved else name


def _word_before(request: str, start: int, values: Sequence[tuple[int, int]] = ()) -> str | None:
    """The nearest telling word in the three words before ``start`` (``factor of 2``: factor), not
    counting words inside the request's other ``values`` (the spans of those the steps use): in
    ``columns 'name' and 'age'`` the word before ``age`` is ``columns``, not the value ``name``."""
    words: list[str] = []
    offset = max(0, start - 400)  # three words are well within it
    for m in reversed(list(re.finditer(r"[A-Za-z_]+", request[offset:start]))):
        if not any(s <= offset + m.start() < e for s, e in values):
            words.append(m.group(0))
            if len(words) == 3:
                break
    for word in words:
        if _NAME_WORD.fullmatch(word) and word.lower() not in STOP:
            return word
    return None


def _around(request: str, start: int, end: int) -> str:
    """The value with up to four words before it and three after, as the request has them."""
    left = re.search(r"(?:\S+\s+){0,4}\S*$", request[:start])
    right = re.match(r"\S*(?:\s+\S+){0,3}", request[end:])
    return " ".join(((left.group(0) if left else "") + request[start:end] + (right.group(0) if right else "")).split())


def candidates(request: str) -> list[tuple[int, int, str, Kind]]:
    """``(start, end, value, kind)`` of each candidate in ``request``, in order, none inside another."""
    found: list[tuple[int, int, str, Kind]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, value: str, kind: Kind) -> None:
        if value and not any(s < end and start < e for s, e in taken):
            taken.append((start, end))
            found.append((start, end, value, kind))

    for m in _PATH.finditer(request):
        value = m.group(0).rstrip(".")
        add(m.start(), m.start() + len(value), value, "path")
    for m in _QUOTED.finditer(request):
        group = next(i for i in range(1, 5) if m.group(i) is not None)
        add(m.start(group), m.end(group), m.group(group).strip(), "text")
    for m in _FILE.finditer(request):
        add(m.start(), m.end(), m.group(0), "file")
    for m in _NUMBER.finditer(request):
        add(m.start(), m.end(), m.group(0), "number")
    for m in _WORD.finditer(request):
        if m.group(0).lower() not in STOP:
            add(m.start(), m.end(), m.group(0), "text")
    return sorted(found)


def _literals(sources: Iterable[str]) -> set[str]:
    """Every string that a script holds whole between quotes."""
    out: set[str] = set()
    for text in sources:
        out.update(a or b for a, b in re.findall(r"'([^'\n]*)'|\"([^\"\n]*)\"", text))
    return out


AFTER_ESCAPE = r"(?<=\\[bBsSwWdD])"
"""Before a word a regular expression's escape ends (``\\blamp``): the word starts there too."""


def _used(value: str, kind: Kind, commands: list[str], literals: set[str], sources: list[str]) -> bool:
    """Whether the steps use ``value``: as a path or file name anywhere, a number or a word as a
    whole token of a command or a script (a word in a script: only as a whole string)."""
    if kind in ("path", "file"):
        return any(value in text for text in [*commands, *sources])
    token = re.compile(rf"(?:{AFTER_ESCAPE}|(?<![\w.])){re.escape(value)}(?![\w])")
    if any(token.search(c) for c in commands):
        return True
    if kind == "number":
        return any(token.search(s) for s in sources)
    escaped = re.compile(rf"{AFTER_ESCAPE}{re.escape(value)}(?![\w])")
    return value in literals or any(escaped.search(literal) for literal in literals)


def _role(
    value: str,
    kind: Kind,
    request: str,
    start: int,
    commands: list[str],
    sources: list[str],
    values: Sequence[tuple[int, int]],
) -> str:
    if kind == "path":
        return ROLE_BY_FOLDER[value.split("/")[3]]
    if kind == "file":
        after_outputs = re.compile(rf"/outputs/(?:[^\s'\"]*/)?{re.escape(value)}")
        return "output" if any(after_outputs.search(t) for t in [*commands, *sources]) else "input"
    word = _word_before(request, start, values)
    return _identifier(word) if word else ("number" if kind == "number" else "value")


def parameters(request: str, commands: list[str], sources: list[str]) -> list[Parameter]:
    """The request's values that the steps' ``commands`` and scripts' ``sources`` use, named,
    at most :data:`MAX_PARAMETERS`, in the order the request gives them (its first
    :data:`MAX_REQUEST` characters); each value once. The
    Python programs a command feeds to ``python3 -`` count as scripts, not as shell words (a word
    of their comments is no use of it)."""
    shell: list[str] = []
    sources = list(sources)
    for command in commands:
        text, programs = python_programs(command)
        shell.append(text)
        sources += programs
    commands = shell
    literals = _literals(sources)
    request = request[:MAX_REQUEST]
    found = [c for c in candidates(request) if _used(c[2], c[3], commands, literals, sources)]
    spans = [(start, end) for start, end, _, _ in found]
    out: list[Parameter] = []
    names: set[str] = set()
    values: set[str] = set()
    for start, end, value, kind in found:
        if value in values:
            continue
        base = _role(value, kind, request, start, commands, sources, spans)
        name, n = base, 2
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.add(name)
        values.add(value)
        out.append(Parameter(name, value, kind, _around(request, start, end)))
        if len(out) == MAX_PARAMETERS:
            break
    return out
