"""``outputs/...``, ``uploads/...`` and ``workspace/...`` name the virtual folders, wherever they
are written: in a path a file tool gets, in a command, in the user's request.

A command runs in the workspace, so ``python3 - > outputs/totals.png`` wrote
``/mnt/user-data/workspace/outputs/totals.png`` (and ``mkdir -p outputs/pal.py`` made a folder
there), while the user and the model both meant ``/mnt/user-data/outputs``. The three names are
read as the folders:

* a relative path a file tool gets (``outputs/a.md``, ``./uploads/data.csv``) by
  :func:`~herdsman.sandbox.paths.normalize_virtual`, through :func:`virtual_folder_path`;
* a command, by :func:`rewrite_command`: each such path in it (``outputs/a.md``, ``./outputs/``;
  not ``src/outputs/x``, ``../outputs``, ``~/outputs`` or a URL) becomes the absolute virtual path
  before the command runs, whatever directory it ``cd``s to and in any provider (bubblewrap,
  Docker, Kubernetes), since the text is changed, not the jail;
* a request's file names, by the completion check (``turns/turn.py``), so the file it
  looks for is the one in ``/mnt/user-data/outputs``.

Why rewrite the command rather than make the names exist in the workspace: a bind mount of outputs
at ``workspace/outputs`` needs a mount point the jail's runtime creates in the host's workspace
folder, as the host user (root, for a root gateway or Docker's daemon), on a path the jail controls
between commands (a link swapped in there is the classic mount-destination race), and then ``rm -rf
*`` in the workspace empties the deliverables through it; a link ``workspace/outputs -> ../outputs``
is harmless on the host but shows in every listing of the workspace, and ``workspace -> .`` makes
every recursive glob see each file forty times. A rewritten command touches nothing on disk: the
jail and its rules are unchanged. What it does not reach: a path built at run time, or written in a
script file that a command then runs from the workspace (the script's own ``open('outputs/x')``).
Hand-written: no shell library rewrites words of a command line in place and keeps the rest byte for
byte (``bashlex`` parses, it does not print back).

Text that is no path is left alone where the command line shows it (``echo "save to outputs/x"``
stays as written): the words that only say something, the arguments of ``echo`` and ``printf``
(their redirections are paths and are rewritten), a comment, and the text of a heredoc or a
here-string fed to a command that is no interpreter (``cat > notes.md <<'EOF'``). A heredoc fed
to a shell is a command line again (rewritten by the same rules), one fed to another interpreter
(``python3 - <<'EOF'``) is code whose quoted paths are used, and is rewritten; so is every
other word, quoted or not (``python3 -c "open('outputs/a.txt')"``, ``cp "outputs/a b.txt" .``),
and an argument of echo with a command substitution (``echo "$(cat outputs/a)"``). The command
line is split by :class:`_Scanner` (quotes, escapes, ``$(...)``, operators, heredocs); the name of
each command is unquoted with :func:`shlex.split`. A line the scanner cannot split (an open quote)
is rewritten whole, as before.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from herdsman.sandbox.base import OUTPUTS, UPLOADS, WORKSPACE

FOLDERS = {"outputs": OUTPUTS, "uploads": UPLOADS, "workspace": WORKSPACE}
"""The names that mean a virtual folder when a relative path starts with them."""

# A path starting with a folder's name and a slash, alone or after "./": not part of a longer
# name or path (src/outputs/, ../outputs/, ~/outputs/, $HOME/outputs/, host:outputs/, a URL).
_IN_COMMAND = re.compile(r"(?<![\w.~/$:@-])(?:\./)?(outputs|uploads|workspace)/")


def virtual_folder_path(path: str) -> str | None:
    """The absolute virtual path of a relative ``path`` that starts with a folder's name
    (``outputs/a.md``, ``./outputs``), else None."""
    rest = path[2:] if path.startswith("./") else path
    head, _, tail = rest.partition("/")
    folder = FOLDERS.get(head)
    if folder is None:
        return None
    return f"{folder}/{tail}" if tail else folder


def _rewrite_text(text: str) -> str:
    """``text`` with every folder path in it made absolute (no word is spared)."""
    return _IN_COMMAND.sub(lambda m: FOLDERS[m.group(1)] + "/", text)


TEXT_COMMANDS = frozenset({"echo", "printf"})
"""Commands whose arguments are text to print, never paths."""
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
"""Commands that read a heredoc as a command line."""
_INTERPRETER = re.compile(
    r"^(?:python[\d.]*|node|nodejs|ruby|perl|php|Rscript|R|lua|tclsh|awk|gawk|sqlite3|psql|duckdb)$"
)
"""Commands that read a heredoc as code, whose quoted paths are used."""
_PREFIXES = frozenset(
    {
        "command",
        "builtin",
        "exec",
        "nohup",
        "time",
        "sudo",
        "env",
        "nice",
        "timeout",
        "xargs",
        "{",
        "!",
        "if",
        "then",
        "else",
        "elif",
        "do",
        "while",
        "until",
    }
)
"""Words before a command's name (a prefix command, a keyword of the shell)."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = ";&|()\n"


@dataclass
class _Simple:
    """One simple command: its words as ``(start, end, is_target)`` spans, and its heredocs."""

    words: list[tuple[int, int, bool]] = field(default_factory=list)
    bodies: list[tuple[int, int]] = field(default_factory=list)

    def name(self, line: str) -> str | None:
        """The command's name, unquoted (after assignments and prefixes such as ``env``, ``sudo``)."""
        for start, end, target in self.words:
            word = line[start:end]
            if target or _ASSIGNMENT.match(word) or word.startswith("-"):
                continue
            try:
                parts = shlex.split(word)
            except ValueError:
                return None
            name = parts[0].rsplit("/", 1)[-1] if len(parts) == 1 else None
            if name not in _PREFIXES:
                return name
        return None


class _Scanner:
    """Splits a command line into simple commands (see the module docstring); :attr:`ok` is False
    when it cannot (an open quote, an unclosed ``$(``)."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.commands: list[_Simple] = [_Simple()]
        self.ok = True
        self._pending: list[tuple[str, bool, _Simple]] = []  # heredocs whose body starts at the next newline
        self._scan()

    def _skip_quoted(self, i: int, depth: int = 0) -> int:
        """The index after the quoted or substituted part starting at ``i`` (``'..'``, ``".."``,
        ``$(..)``, backticks); -1 when it does not end, or nests deeper than :data:`MAX_NESTING`
        quotes in substitutions in quotes."""
        line, n = self.line, len(self.line)
        if depth > 4 * MAX_NESTING:
            return -1
        if line[i] == "'":
            end = line.find("'", i + 1)
            return -1 if end < 0 else end + 1
        if line[i] == "`":
            j = i + 1
            while j < n and line[j] != "`":
                j += 2 if line[j] == "\\" else 1
            return -1 if j >= n else j + 1
        if line[i] == '"':
            j = i + 1
            while j < n and line[j] != '"':
                if line[j] == "\\":
                    j += 2
                elif line.startswith("$(", j) or line[j] == "`":
                    j = self._skip_quoted(j + (1 if line[j] == "$" else 0), depth + 1)
                    if j < 0:
                        return -1
                else:
                    j += 1
            return -1 if j >= n else j + 1
        # ( ... ) of $( ... ): to the matching parenthesis, quotes inside skipped
        parens, j = 0, i
        while j < n:
            c = line[j]
            if c in "'\"`":
                j = self._skip_quoted(j, depth + 1)
                if j < 0:
                    return -1
                continue
            if c == "\\":
                j += 2
                continue
            parens += c == "("
            parens -= c == ")"
            j += 1
            if parens == 0:
                return j
        return -1

    def _word_end(self, i: int) -> int:
        """The index after the word starting at ``i``; -1 when a quote in it does not end."""
        line, n = self.line, len(self.line)
        while i < n:
            c = line[i]
            if c in " \t" or c in _SEPARATORS or c in "<>":
                return i
            if c == "\\":
                i += 2
            elif c in "'\"`" or line.startswith("$(", i):
                i = self._skip_quoted(i + (1 if c == "$" else 0))
                if i < 0:
                    return -1
            else:
                i += 1
        return min(i, n)

    def _bodies(self, i: int) -> int:
        """After the newline at ``i - 1``: take the pending heredocs' bodies; the index after them."""
        line = self.line
        for delimiter, strip, owner in self._pending:
            start = i
            while i < len(line):
                end = line.find("\n", i)
                end = len(line) if end < 0 else end
                text = line[i:end]
                if (text.lstrip("\t") if strip else text) == delimiter:
                    owner.bodies.append((start, i))
                    i = min(end + 1, len(line))
                    break
                i = end + 1
            else:
                owner.bodies.append((start, len(line)))
                i = len(line)
        self._pending = []
        return i

    def _scan(self) -> None:
        line, n, i = self.line, len(self.line), 0
        strip = False
        target: str | None = None  # after > or <: "path"; after << or <<<: "heredoc" or "string"
        while i < n:
            c = line[i]
            current = self.commands[-1]
            if c in " \t":
                i += 1
            elif c == "#" and (i == 0 or line[i - 1] in " \t\n;&|()"):
                end = line.find("\n", i)
                i = n if end < 0 else end  # a comment: no word
            elif c in _SEPARATORS:
                if c == "\n" and self._pending:
                    i = self._bodies(i + 1)
                else:
                    i += 1
                if current.words or current.bodies:
                    self.commands.append(_Simple())
                target = None
            elif c in "<>":
                if line.startswith("<<<", i):
                    target, i = "string", i + 3
                elif line.startswith("<<", i):
                    strip = line.startswith("<<-", i)
                    target, i = "heredoc", i + (3 if strip else 2)
                else:
                    target, i = "path", i + 1
                    while i < n and line[i] in "<>&|":
                        i += 1
            else:
                end = self._word_end(i)
                if end < 0:
                    self.ok = False
                    return
                word = line[i:end]
                if target == "heredoc":
                    self._pending.append((word.strip("'\"").replace("\\", ""), strip, current))
                elif target == "string":
                    current.bodies.append((i, end))
                elif word.isdigit() and end < n and line[end] in "<>":
                    pass  # 2>: the number of a file descriptor
                else:
                    current.words.append((i, end, target == "path"))
                target = None
                i = end


MAX_NESTING = 8
"""Heredocs fed to a shell inside one another that are read as command lines; deeper ones are rewritten whole."""


def rewrite_command(command: str, _depth: int = 0) -> str:
    """``command`` with each relative path that starts with a folder's name made absolute
    (``cat > outputs/a.md`` -> ``cat > /mnt/user-data/outputs/a.md``); the rest unchanged, and
    text that is no path left as written (see the module docstring)."""
    if not _IN_COMMAND.search(command):
        return command
    scanner = _Scanner(command)
    if not scanner.ok or _depth > MAX_NESTING:
        return _rewrite_text(command)
    spans: list[tuple[int, int, str]] = []  # (start, end, how): "text" rewritten, "line" a command line again
    for simple in scanner.commands:
        name = simple.name(command)
        for start, end, target in simple.words:
            word = command[start:end]
            if target or name not in TEXT_COMMANDS or "$(" in word or "`" in word or start == _first(simple):
                spans.append((start, end, "text"))
        for start, end in simple.bodies:
            if name in SHELLS:
                spans.append((start, end, "line"))
            elif name is not None and _INTERPRETER.match(name):
                spans.append((start, end, "text"))
    out, at = [], 0
    for start, end, how in sorted(spans):
        out.append(command[at:start])
        part = command[start:end]
        out.append(_rewrite_text(part) if how == "text" else rewrite_command(part, _depth + 1))
        at = end
    out.append(command[at:])
    return "".join(out)


def _first(simple: _Simple) -> int:
    """Where the first word of ``simple`` starts (-1 without words)."""
    return simple.words[0][0] if simple.words else -1
