"""The checks of the agent task benchmark: pure functions over the thread's files and the answer.

Each check parses what the agent delivered (a file's lines, JSON, CSV, an INI section, a zip's
names, a PNG header, an HTML title, a skill's front matter) or runs it (``run``: the fixed script,
the task's own tests, in a throwaway copy of the workspace), and compares values, numbers within a
tolerance. ``answer_number`` is kept for questions whose deliverable is a number: the numbers in
the final answer must include the expected one; ``answer_value`` also takes a name, a path or a
date (found as a whole token, in any language's sentence) and, with ``just``, wants the answer to
be that value alone. ``executable`` and ``mode`` read permission bits, ``tar_names`` a tarball's
names, ``text_absent`` greps a folder for text that must be gone. No check looks for a phrase in
prose.
"""

from __future__ import annotations

import configparser
import csv
import html.parser
import io
import json
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


class CheckFailed(AssertionError):
    """A check that did not pass; the message says what was found."""


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` (thousands separators allowed)."""
    out = []
    for match in NUMBER.findall(text):
        try:
            out.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return out


def _read(root: Path, rel: str) -> str:
    path = root / rel
    if not path.is_file():
        raise CheckFailed(f"{rel} does not exist")
    return path.read_text(errors="replace")


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= tol
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=False))
    return a == b


def file_lines(root: Path, answer: str, path: str, lines: list[str]) -> None:
    """The file's non-empty lines, stripped, are exactly ``lines``."""
    found = [line.strip() for line in _read(root, path).splitlines() if line.strip()]
    if found != lines:
        raise CheckFailed(f"{path}: expected {len(lines)} lines {lines[:3]}..., found {len(found)}: {found[:3]}...")


def file_text(root: Path, answer: str, path: str, text: str) -> None:
    """The file holds ``text`` (surrounding whitespace and quotes aside)."""
    found = _read(root, path).strip().strip("\"'`").strip()
    if found != text.strip():
        raise CheckFailed(f"{path}: expected {text.strip()!r}, found {found[:80]!r}")


def file_number(root: Path, answer: str, path: str, value: float, tolerance: float = 0.0) -> None:
    """The file holds one number, equal to ``value``."""
    found = numbers_in(_read(root, path))
    if len(found) != 1 or not _close(found[0], value, tolerance):
        raise CheckFailed(f"{path}: expected the number {value}, found {found[:5]}")


def answer_number(root: Path, answer: str, value: float, tolerance: float = 0.0) -> None:
    """The final answer states ``value`` (among the numbers it writes)."""
    found = numbers_in(answer)
    if not any(_close(n, value, tolerance) for n in found):
        raise CheckFailed(f"answer: expected the number {value}, found {found[:8]}")


_EDGES = "*`\"'“”‘’「」『』 \t\n"


def answer_value(root: Path, answer: str, value: float | str, just: bool = False, tolerance: float = 0.0) -> None:
    """The final answer states ``value``: a number among the numbers it writes, or a string as a
    whole token (case aside; not part of a longer name, path or number, so ``b.log`` is not found
    in ``b.log.1``; a path may come with a prefix, ``x/services/api.env`` states ``services/api.env``).
    With ``just`` the answer must be the value alone (Markdown emphasis, quotes and a final full
    stop aside), as when the user asked for nothing but the value."""
    if just:
        bare = answer.strip().rstrip(".。").strip(_EDGES).rstrip(".。").strip(_EDGES)
        if isinstance(value, (int, float)):
            ok = bool(NUMBER.fullmatch(bare)) and _close(float(bare.replace(",", "")), value, tolerance)
        else:
            ok = bare.casefold() == str(value).casefold()
        if not ok:
            raise CheckFailed(f"answer: expected just {value!r}, found {answer.strip()[:80]!r}")
        return
    if isinstance(value, (int, float)):
        answer_number(root, answer, value, tolerance)
        return
    token = rf"(?<![\w.\-]){re.escape(str(value))}(?![\w]|[.\-/]\w)"
    if not re.search(token, answer, re.IGNORECASE | re.ASCII):
        raise CheckFailed(f"answer: expected {value!r} in it, found {answer.strip()[:120]!r}")


def executable(root: Path, answer: str, paths: list[str]) -> None:
    """Every path is a file its owner may execute."""
    missing = [p for p in paths if not (root / p).is_file()]
    if missing:
        raise CheckFailed(f"missing: {missing}")
    not_x = [p for p in paths if not (root / p).stat().st_mode & stat.S_IXUSR]
    if not_x:
        raise CheckFailed(f"not executable: {[f'{p} ({oct((root / p).stat().st_mode & 0o777)})' for p in not_x]}")


def mode(root: Path, answer: str, paths: list[str], mode: str) -> None:
    """Every path is a file whose permission bits are exactly ``mode`` (octal, like ``600``)."""
    missing = [p for p in paths if not (root / p).is_file()]
    if missing:
        raise CheckFailed(f"missing: {missing}")
    wrong = {
        p: f"{(root / p).stat().st_mode & 0o777:o}" for p in paths if (root / p).stat().st_mode & 0o777 != int(mode, 8)
    }
    if wrong:
        raise CheckFailed(f"expected mode {mode}, found {wrong}")


def tar_names(root: Path, answer: str, path: str, names: list[str]) -> None:
    """The tar archive (compressed or not) holds files with these base names."""
    try:
        with tarfile.open(root / path) as tf:
            found = sorted(Path(m.name).name for m in tf.getmembers() if m.isfile())
    except (OSError, tarfile.TarError) as exc:
        raise CheckFailed(f"{path}: not a tar archive ({exc})") from None
    if found != sorted(names):
        raise CheckFailed(f"{path}: expected {sorted(names)}, found {found}")


def text_absent(root: Path, answer: str, path: str, text: str) -> None:
    """No file under the folder ``path`` contains ``text`` (the folder must exist)."""
    folder = root / path
    if not folder.is_dir():
        raise CheckFailed(f"{path} does not exist")
    hits = sorted(
        str(f.relative_to(root)) for f in folder.rglob("*") if f.is_file() and text in f.read_text(errors="replace")
    )
    if hits:
        raise CheckFailed(f"{text!r} is still in {hits}")


def json_file(root: Path, answer: str, path: str, equals: Any, tolerance: float = 0.0) -> None:
    """The file parses as JSON equal to ``equals`` (numbers within ``tolerance``; a number written
    as a string counts as that number)."""
    try:
        data = json.loads(_read(root, path))
    except json.JSONDecodeError as exc:
        raise CheckFailed(f"{path} is not JSON: {exc}") from None
    if not _close(_numeric(data), _numeric(equals), tolerance):
        raise CheckFailed(f"{path}: expected {json.dumps(equals)[:120]}, found {json.dumps(data)[:120]}")


def _numeric(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _numeric(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numeric(v) for v in value]
    if isinstance(value, str) and re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()):
        return float(value)
    return value


def csv_rows(root: Path, answer: str, path: str, header: list[str], rows: list[list[str]]) -> None:
    """The file parses as CSV with ``header`` and exactly ``rows``."""
    parsed = [[c.strip() for c in r] for r in csv.reader(io.StringIO(_read(root, path))) if any(c.strip() for c in r)]
    if not parsed or parsed[0] != header:
        raise CheckFailed(f"{path}: expected header {header}, found {parsed[:1]}")
    if parsed[1:] != rows:
        raise CheckFailed(
            f"{path}: expected {len(rows)} rows like {rows[:2]}, found {len(parsed) - 1} like {parsed[1:3]}"
        )


def exists(root: Path, answer: str, paths: list[str]) -> None:
    """Every path exists."""
    missing = [p for p in paths if not (root / p).exists()]
    if missing:
        raise CheckFailed(f"missing: {missing}")


def absent(root: Path, answer: str, paths: list[str]) -> None:
    """No path exists."""
    present = [p for p in paths if (root / p).exists()]
    if present:
        raise CheckFailed(f"still there: {present}")


def run(root: Path, answer: str, command: str, cwd: str, stdout: str | None = None) -> None:
    """``command`` exits 0 in a copy of the folder ``cwd`` (and prints ``stdout``, stripped)."""
    source = root / cwd
    if not source.is_dir():
        raise CheckFailed(f"{cwd} does not exist")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "w"
        shutil.copytree(source, work, symlinks=True)
        try:
            out = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True, timeout=30, check=False)
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"{command!r} timed out") from None
    if out.returncode != 0:
        raise CheckFailed(f"{command!r} exited {out.returncode}: {(out.stderr or out.stdout)[-200:]}")
    if stdout is not None and out.stdout.strip() != stdout.strip():
        raise CheckFailed(f"{command!r} printed {out.stdout.strip()[:120]!r}, expected {stdout.strip()[:120]!r}")


def labelled_numbers(root: Path, answer: str, path: str, values: dict[str, float], tolerance: float = 0.0) -> None:
    """Each ``Label: number`` line of the file holds the expected number."""
    text = _read(root, path)
    for label, value in values.items():
        match = re.search(rf"{re.escape(label)}\W*?:?\s*\**\s*\$?\s*(-?[\d,]+(?:\.\d+)?)", text, re.IGNORECASE)
        if not match or not _close(float(match.group(1).replace(",", "")), value, tolerance):
            raise CheckFailed(f"{path}: expected {label}: {value}, found {match.group(0) if match else 'no such line'}")


def markdown_numbers(root: Path, answer: str, path: str, numbers: list[float], tolerance: float = 0.0) -> None:
    """The Markdown file has a heading and states each of ``numbers``."""
    text = _read(root, path)
    if not re.search(r"^#{1,3} \S", text, re.MULTILINE):
        raise CheckFailed(f"{path} has no Markdown heading")
    found = numbers_in(text)
    for value in numbers:
        if not any(_close(n, value, tolerance) for n in found):
            raise CheckFailed(f"{path}: does not state {value}")


def ini(root: Path, answer: str, path: str, section: str, values: dict[str, str]) -> None:
    """The INI file's ``section`` has exactly ``values``."""
    parser = configparser.ConfigParser()
    try:
        parser.read_string(_read(root, path))
    except configparser.Error as exc:
        raise CheckFailed(f"{path} does not parse: {exc}") from None
    found = dict(parser[section]) if parser.has_section(section) else {}
    if {k: v.strip().lower() for k, v in found.items()} != {k: v.lower() for k, v in values.items()}:
        raise CheckFailed(f"{path} [{section}]: expected {values}, found {found}")


def zip_names(root: Path, answer: str, path: str, names: list[str]) -> None:
    """The zip holds files with these base names."""
    try:
        with zipfile.ZipFile(root / path) as zf:
            found = sorted(Path(n).name for n in zf.namelist() if not n.endswith("/"))
    except (OSError, zipfile.BadZipFile) as exc:
        raise CheckFailed(f"{path}: not a zip ({exc})") from None
    if found != sorted(names):
        raise CheckFailed(f"{path}: expected {sorted(names)}, found {found}")


def png(root: Path, answer: str, path: str) -> None:
    """The file is a PNG image of some size."""
    file = root / path
    if not file.is_file():
        raise CheckFailed(f"{path} does not exist")
    data = file.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) < 100:
        raise CheckFailed(f"{path} is not a PNG image")


class _Title(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def html_page(root: Path, answer: str, path: str, title_contains: str) -> None:
    """The HTML page parses, has a body and a title naming ``title_contains``."""
    parser = _Title()
    parser.feed(_read(root, path))
    if "body" not in parser.tags or title_contains.lower() not in parser.title.lower():
        raise CheckFailed(f"{path}: title {parser.title.strip()!r}, tags {parser.tags[:8]}")


def skill_md(root: Path, answer: str, path: str, name: str) -> None:
    """The SKILL.md has YAML front matter with this name and a description."""
    text = _read(root, path)
    match = re.match(r"---\n(.*?)\n---", text, re.DOTALL)
    meta = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(meta, dict) or meta.get("name") != name or not str(meta.get("description", "")).strip():
        raise CheckFailed(f"{path}: front matter {meta!r}")


CHECKS: dict[str, Callable[..., None]] = {
    f.__name__: f
    for f in (
        file_lines,
        file_text,
        file_number,
        answer_number,
        json_file,
        csv_rows,
        exists,
        absent,
        run,
        labelled_numbers,
        markdown_numbers,
        ini,
        zip_names,
        png,
        html_page,
        skill_md,
        answer_value,
        executable,
        mode,
        tar_names,
        text_absent,
    )
}


def check(spec: dict | list, root: Path, answer: str) -> str | None:
    """None when the task's check passes on ``root`` (the thread's user-data folder) and
    ``answer``; otherwise why not."""
    for item in spec if isinstance(spec, list) else [spec]:
        args = {k: v for k, v in item.items() if k != "type"}
        try:
            CHECKS[item["type"]](root, answer, **args)
        except CheckFailed as exc:
            return str(exc)
    return None
