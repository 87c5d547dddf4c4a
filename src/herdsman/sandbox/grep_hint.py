"""What a search that found nothing was looking at: grep's silence explained from the file.

A small model greps with a guessed pattern (``grep -c 'status: failed' orders.json`` where the
file writes ``"status": "failed"``), reads ``0`` and answers 0 without having seen a line of the
file. When a command ends in a grep that matched no line (exit code 1, or a count of 0 through
``| wc -l``) and that grep reads named files, the bash tool's result gains a short note: the
lines of those files that hold all the pattern's words (up to three), else those of its rarest
word that does appear, or that none of its words appears at all, with the file's first lines (a
model grepping an access log for 'client' learns that its lines begin with the address). The
grep tool adds the same note when it searched one file. The next step can then match the text
as the file writes it.

Language-neutral: the pattern's words are runs of letters and digits in any script (Chinese
included), compared case-insensitively; regular-expression escapes are not words. Only files
on this host (a host-backed sandbox) and of at most :data:`MAX_BYTES` are read, through the
thread's descriptor-based file access (no link out, no fifo or device). The work is bounded by
the files, not by the pattern: the note runs in the gateway's process, outside the jail's CPU
limits, and a grep for 3,000 words scanned a 4 MB file once per word (144 s of CPU for one
command, a red-team finding); only the :data:`MAX_WORDS` longest words and :data:`MAX_FILES`
distinct files are looked at. Hand-written: no library explains why a grep found nothing.
"""

from __future__ import annotations

import re
import shlex
import stat
from collections.abc import Sequence

from herdsman.sandbox.base import HostBackedSandbox, Sandbox, SandboxError
from herdsman.sandbox.paths import normalize_virtual

NO_MATCH_NOTE = "[the search matched no line"
"""How the note begins: a reader of the tool result (the completion check) knows the file was shown."""
MAX_BYTES = 4 * 1024 * 1024
MAX_LINES = 3
MAX_LINE_CHARS = 160
MAX_WORDS = 6
"""The pattern's longest words the note looks for (each is one scan of each file)."""
MAX_FILES = 5
"""The distinct files named that the note reads."""
_GREPS = {"grep", "egrep", "fgrep", "rg"}
_WITH_VALUE = {"-e", "-f", "-m", "-A", "-B", "-C", "--max-count", "--regexp", "--file", "-g", "--glob", "-t", "--type"}
_SPLIT = re.compile(r"\|\||&&|[|;\n]")


def _segments(command: str) -> list[list[str]]:
    """The simple commands of ``command``, as words (unparsable ones left out)."""
    out: list[list[str]] = []
    for part in _SPLIT.split(command):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if words:
            out.append(words)
    return out


def _pattern_and_files(words: Sequence[str]) -> tuple[str | None, list[str]]:
    """A grep's pattern and the files it names (options and their values left out)."""
    pattern: str | None = None
    rest: list[str] = []
    it = iter(words[1:])
    for word in it:
        if word in ("-e", "--regexp"):
            pattern = next(it, None)
        elif word in _WITH_VALUE:
            next(it, None)
        elif word.startswith("--regexp="):
            pattern = word.split("=", 1)[1]
        elif word.startswith("-") and word != "-":
            continue
        else:
            rest.append(word)
    if pattern is None and rest:
        pattern, rest = rest[0], rest[1:]
    return pattern, rest


def _words(pattern: str) -> list[str]:
    """The pattern's words, longest first (escapes such as \\d and \\s are not words)."""
    found = re.findall(r"\w{2,}", re.sub(r"\\.", " ", pattern))
    return sorted(dict.fromkeys(found), key=len, reverse=True)


def _read(sandbox: Sandbox, name: str) -> tuple[str, str] | None:
    """(virtual path, text) of the file ``name`` when it is a small regular file on this host."""
    if not isinstance(sandbox, HostBackedSandbox):
        return None
    try:
        path = normalize_virtual(name)
        st = sandbox.files.stat(path, follow=False)
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        return path, sandbox.read_text(path)
    except (SandboxError, OSError, UnicodeError, ValueError):
        return None


def _found_nothing(segments: list[list[str]], exit_code: int, output: str) -> list[str] | None:
    """The words of the grep that found nothing at the end of the command, or None."""
    last = segments[-1] if segments else []
    if last and last[0] in _GREPS and exit_code == 1 and all(w == "0" or w.endswith(":0") for w in output.split()):
        return last
    counted = len(segments) >= 2 and last[:1] == ["wc"] and "-l" in last and output.strip() == "0"
    if counted and segments[-2][0] in _GREPS:
        return segments[-2]
    return None


def no_match_hint(sandbox: Sandbox, command: str, exit_code: int, output: str) -> str:
    """The note for the model when ``command`` ends in a grep of named files that matched
    nothing (see the module docstring), else ""."""
    segments = _segments(command)
    grep = _found_nothing(segments, exit_code, output)
    if grep is None:
        return ""
    pattern, names = _pattern_and_files(grep)
    if not names:  # reading a pipe: the files a cat before it printed
        names = [w for seg in segments[:-1] if seg[0] == "cat" for w in seg[1:] if not w.startswith("-")]
    return explain_no_match(sandbox, pattern or "", names)


def explain_no_match(sandbox: Sandbox, pattern: str, names: Sequence[str]) -> str:
    """The note on a search for ``pattern`` in the files ``names`` that matched no line (the bash
    tool's grep, or the grep tool on one file): the lines that hold the pattern's words, or, when
    none holds any, how the first file begins, so the next pattern is written from the file's text."""
    words = _words(pattern)[:MAX_WORDS]
    files = [f for f in (_read(sandbox, n) for n in list(dict.fromkeys(names))[:MAX_FILES]) if f is not None]
    if not words or not files:
        return ""
    best: tuple[int, str, str, list[str]] | None = None  # (lines, path, words, lines): fewest lines wins
    for path, text in files:
        lines = text.splitlines()
        lowered = [line.lower() for line in lines]
        for group in ([words] if len(words) > 1 else []) + [[w] for w in words]:
            hits = [lines[i] for i, low in enumerate(lowered) if all(w.lower() in low for w in group)]
            if hits and (best is None or len(group) > 1 or len(hits) < best[0]):
                best = (len(hits), path, " and ".join(repr(w) for w in group), hits)
                if len(group) > 1:
                    break
        if best is not None and " and " in best[2]:
            break
    if best is not None:
        count, path, named, hits = best
        shown = "\n".join(f"  {line.strip()[:MAX_LINE_CHARS]}" for line in hits[:MAX_LINES])
        return (
            f"{NO_MATCH_NOTE}. {path} has {count} line(s) with {named}, written like this:\n"
            f"{shown}\nMatch the text as the file writes it.]"
        )
    listed = ", ".join(repr(w) for w in words[:4])
    path, text = files[0]
    head = "\n".join(f"  {line.strip()[:MAX_LINE_CHARS]}" for line in text.splitlines()[:MAX_LINES] if line.strip())
    begins = f" {path} begins like this:\n{head}\n" if head else ""
    return f"{NO_MATCH_NOTE}, and no line of {', '.join(p for p, _ in files)} contains {listed} at all.{begins}]"
