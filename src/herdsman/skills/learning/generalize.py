"""Put parameters in place of the request's values in the commands and scripts that worked.

- A shell command (or a ``.sh`` script) gets the parameter's shell variable where the value was,
  quoted for where it stands: ``"${INPUT}"`` outside quotes, ``${INPUT}`` inside double quotes,
  ``'"${INPUT}"'`` inside single quotes (so ``awk '$3 > 2'`` still receives the number).
- A Python script run without arguments gets a small ``argparse`` prologue (one required
  ``--name`` option per parameter it uses) and ``SKILL_ARGS.name`` in place of each string
  literal that held the value (``'/mnt/user-data/uploads/' + SKILL_ARGS.input`` when the value was
  part of it) and of a number literal equal to a number parameter, when the script holds that
  number once (``range(2)`` beside a factor of 2 stays). A script run with arguments keeps
  its code: the values are in its command line then.

Written by hand on :mod:`tokenize` and :mod:`ast` (standard library): the replacements are made
at the tokens' positions in the original text, so the script keeps its layout and comments.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Sequence

from herdsman.skills.learning.heredoc import around_run, as_written, heredocs
from herdsman.skills.learning.values import AFTER_ESCAPE, Parameter

ARGS_NAME = "SKILL_ARGS"


def _pattern(param: Parameter) -> str:
    value = re.escape(param.value)
    if param.kind == "path":
        return rf"{value}(?![\w./-])"
    if param.kind == "file":
        return rf"(?<![\w.-]){value}(?![\w-])"
    return rf"(?<![\w.]){value}(?![\w])"


def _quote_states(text: str) -> list[str]:
    """The quoting at each character of a shell text: ``""`` (none), ``'`` or ``"``."""
    states: list[str] = []
    state, escaped = "", False
    for char in text:
        states.append(state)
        if escaped:
            escaped = False
        elif char == "\\" and state != "'":
            escaped = True
        elif state == "" and char in "'\"":
            state = char
        elif char == state:
            state = ""
    return states


def _shell_part(text: str, ordered: Sequence[Parameter], in_heredoc: bool = False) -> tuple[str, list[Parameter]]:
    """Shell ``text`` with each value replaced by its variable, quoted for where it stands (in an
    unquoted here-document's body, ``in_heredoc``: ``${NAME}`` wherever it stands, as quotes mean
    nothing to the shell there)."""
    if not ordered:
        return text, []
    combined = re.compile("|".join(f"(?P<p{i}>{_pattern(p)})" for i, p in enumerate(ordered)))
    states = ['"'] * len(text) if in_heredoc else _quote_states(text)
    used: list[Parameter] = []
    out: list[str] = []
    last = 0
    for match in combined.finditer(text):
        start, end = match.span()
        if states[start] != states[end - 1]:  # across a quote: not one value
            continue
        param = ordered[int(next(k for k, v in match.groupdict().items() if v is not None)[1:])]
        ref = {"": f'"${{{param.variable}}}"', '"': f"${{{param.variable}}}", "'": f"'\"${{{param.variable}}}\"'"}
        out += [text[last:start], ref[states[start]]]
        last = end
        if param not in used:
            used.append(param)
    out.append(text[last:])
    return "".join(out), used


def python_options(params: Sequence[Parameter]) -> str:
    """The command-line options that pass ``params`` to a script :func:`python_script` made."""
    return " ".join(f'--{p.name} "${{{p.variable}}}"' for p in params)


def shell_text(
    text: str, params: Sequence[Parameter], save: Callable[[str], str] | None = None
) -> tuple[str, list[Parameter]]:
    """``text`` (shell) with each parameter's value replaced by its variable; and the parameters used.

    A here-document's body is no shell text: a Python program read from one (``python3 - <<'EOF'``)
    becomes a script with ``--name`` options (:func:`python_script`); with ``save`` (the program's
    text -> the path it is saved at) the command runs that file with the options (when the body is
    what Python read: :func:`~herdsman.skills.learning.heredoc.as_written`), else the options
    are passed after the ``-``. The body of another quoted here-document (``<<'EOF'``) is kept as
    it is, as the shell never expands in it; an unquoted one's body gets ``${NAME}``, as the shell
    expands it there."""
    if not params and save is None:
        return text, []
    ordered = sorted(params, key=lambda p: -len(p.value))
    used: list[Parameter] = []
    out: list[str] = []
    last = 0

    def take(part: tuple[str, list[Parameter]]) -> str:
        used.extend(p for p in part[1] if p not in used)
        return part[0]

    for doc in heredocs(text):
        before, body, end = text[last : doc.start], doc.body, doc.end
        parts = around_run(doc.head)
        if parts is not None:
            pre, program, redirect, post = parts
            body, here = python_script(body, ordered, "A learned skill's program.")
            take((body, here))
            options = python_options(here)
            if save is not None and as_written(doc):
                program, redirect, body, end = f"python3 {save(body)}", "", "", ""
            run = " ".join(part for part in (program, options, redirect) if part)
            head = take(_shell_part(before + pre, ordered)) + run + take(_shell_part(post, ordered))
        else:
            head = take(_shell_part(before + doc.head, ordered))
            if not doc.quoted:
                body = take(_shell_part(body, ordered, in_heredoc=True))
        out += [head, body, end]
        last = doc.stop
    out.append(take(_shell_part(text[last:], ordered)))
    return "".join(out), used


def _insert_at(source: str) -> int:
    """The line (0-based) where the prologue goes: after the docstring and ``__future__`` imports."""
    tree = ast.parse(source)
    line = 0
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        line = node.end_lineno or node.lineno
    return line


def _string_value(token: str) -> str | None:
    """The value of a plain string literal token (no f-string, no bytes), else None."""
    prefix = re.match(r"^[A-Za-z]*", token)
    if prefix is None or any(c in prefix.group(0).lower() for c in "fbt"):
        return None
    try:
        value = ast.literal_eval(token)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def _string_expr(value: str, params: Sequence[Parameter]) -> tuple[str, Parameter] | None:
    """The expression for a string literal holding a parameter's value (whole, or as part of a path)."""
    for param in sorted(params, key=lambda p: -len(p.value)):
        if param.kind == "number":
            continue
        if value == param.value:
            return f"{ARGS_NAME}.{param.name}", param
        if param.kind in ("path", "file"):
            match = re.search(_pattern(param), value)
            if match:
                head, tail = value[: match.start()], value[match.end() :]
                parts = [repr(head)] if head else []
                parts.append(f"{ARGS_NAME}.{param.name}")
                if tail:
                    parts.append(repr(tail))
                return "(" + " + ".join(parts) + ")", param
    return None


# Before a word in a literal: no letter, or a regular expression's escape (``r'\\blamp\\b'``).
_WORD_START = rf"(?:{AFTER_ESCAPE}|(?<![A-Za-z0-9_]))"
_LITERAL = re.compile(r"^([A-Za-z]*)('\'\'|\"\"\"|'|\")(.*)\2$", re.DOTALL)


def _word_in_literal(token: str, params: Sequence[Parameter]) -> tuple[str, Parameter] | None:
    """The expression for a string literal holding a text parameter's value as a word among other
    text (``r'\\blamp\\b'``: ``(r'\\b' + SKILL_ARGS.word + r'\\b')``), kept in the literal's own
    prefix and quotes; None when there is none or the expression would not parse."""
    match = _LITERAL.match(token)
    if match is None or any(c in match.group(1).lower() for c in "fbt"):
        return None
    prefix, quote, body = match.groups()
    for param in sorted(params, key=lambda p: -len(p.value)):
        if param.kind != "text":
            continue
        hit = re.search(_WORD_START + re.escape(param.value) + r"(?![A-Za-z0-9_])", body)
        if hit is None:
            continue
        head, tail = body[: hit.start()], body[hit.end() :]
        parts = [f"{prefix}{quote}{head}{quote}"] if head else []
        parts.append(f"{ARGS_NAME}.{param.name}")
        if tail:
            parts.append(f"{prefix}{quote}{tail}{quote}")
        expr = "(" + " + ".join(parts) + ")"
        try:
            ast.parse(expr, mode="eval")
        except SyntaxError:
            return None
        return expr, param
    return None


def python_script(source: str, params: Sequence[Parameter], description: str) -> tuple[str, list[Parameter]]:
    """``source`` reading its parameters from ``--name`` options; and the parameters it uses.
    A script that does not parse, or uses none of them, or already has a ``SKILL_ARGS``, is kept."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        start_line = _insert_at(source)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source, []
    if ARGS_NAME in source or not params:
        return source, []
    numbers = {p.value: p for p in params if p.kind == "number"}
    counts: dict[str, int] = {}
    for tok in tokens:
        if tok.type == tokenize.NUMBER:
            counts[tok.string] = counts.get(tok.string, 0) + 1
    edits: list[tuple[int, int, int, str]] = []  # row, col start, col end, text
    used: list[Parameter] = []
    for tok in tokens:
        if tok.start[0] != tok.end[0]:
            continue
        found: tuple[str, Parameter] | None = None
        if tok.type == tokenize.STRING and (value := _string_value(tok.string)) is not None:
            found = _string_expr(value, params) or _word_in_literal(tok.string, params)
        elif tok.type == tokenize.NUMBER and tok.string in numbers and counts[tok.string] == 1:
            found = f"{ARGS_NAME}.{numbers[tok.string].name}", numbers[tok.string]
        if found is not None:
            edits.append((tok.start[0], tok.start[1], tok.end[1], found[0]))
            if found[1] not in used:
                used.append(found[1])
    if not used:
        return source, []
    lines = source.splitlines(keepends=True)
    for row, col, end, text in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + text + line[end:]
    prologue = _prologue(used, description)
    lines[start_line:start_line] = prologue
    return "".join(lines), used


def _prologue(params: Sequence[Parameter], description: str) -> list[str]:
    lines = [
        "import argparse as _skill_argparse  # added when this script became a skill: its values are parameters\n",
        f"_skill_parser = _skill_argparse.ArgumentParser(description={description!r})\n",
    ]
    for p in params:
        kind = "float" if p.kind == "number" and "." in p.value else ("int" if p.kind == "number" else "str")
        help_text = f"e.g. {p.value}"
        lines.append(
            f"_skill_parser.add_argument({'--' + p.name!r}, dest={p.name!r}, type={kind}, required=True, "
            f"help={help_text!r})\n"
        )
    lines.append(f"{ARGS_NAME} = _skill_parser.parse_args()\n")
    return lines
