"""Uploaded documents (PDF, DOCX, XLSX, PPTX) converted to Markdown the agent can read.

:func:`convert_sandbox_upload` is what the uploads path calls after saving a file in a thread's
sandbox (virtual paths in and out, any provider); :func:`convert_upload` does the same for a file on
the local disk. For a convertible file ``report.pdf`` they write ``report.pdf.md`` beside it (the
full name is kept, so ``report.pdf`` and ``report.docx`` never overwrite each other's Markdown, nor
a ``report.md`` the user uploaded) and returns that path. The converter for the file's extension is
called directly (markitdown's own dispatch falls back to reading a damaged file as plain text, which
would hand the agent garbage), so a corrupted or mislabelled file raises
:class:`DocumentConversionError` with a message that says what to do.

Parsers of untrusted documents are the classic bomb target: a 66 KB DOCX holding 18 MB of XML
took the gateway from 147 MB to 796 MB and 63 s. So every conversion runs in a child process
(``python -m herdsman.tools.documents``) that limits itself before it imports a parser:
address space (``RLIMIT_AS``, :data:`MAX_MEMORY_MB`), CPU time (``RLIMIT_CPU``) and output
size, and the parent kills it after :data:`MAX_SECONDS` of wall time. A bomb ends as
"this document could not be converted: ..." and the gateway's memory stays flat.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONVERTIBLE_SUFFIXES = (".pdf", ".docx", ".xlsx", ".pptx")
MAX_DOCUMENT_BYTES = 100 * 1024 * 1024
MAX_MEMORY_MB = 1024  # address space of the converting child (Python and the parsers need ~300 MB)
MAX_CPU_SECONDS = 60
MAX_SECONDS = 90.0  # wall time, then the child is killed
MAX_MARKDOWN_CHARS = 5_000_000


class DocumentConversionError(Exception):
    """A document that could not be converted; the message names the file and what to do."""


def is_convertible(path: str | Path) -> bool:
    """Whether :func:`convert_upload` handles files named like ``path``."""
    return Path(path).suffix.lower() in CONVERTIBLE_SUFFIXES


def markdown_path(path: str | Path) -> Path:
    """Where the Markdown of ``path`` goes: ``<name>.md`` beside it (``a.pdf`` -> ``a.pdf.md``)."""
    path = Path(path)
    return path.with_name(path.name + ".md")


def _converter(suffix: str) -> Any:
    from markitdown.converters import DocxConverter, PdfConverter, PptxConverter, XlsxConverter

    converter: Callable[[], Any] = {
        ".pdf": PdfConverter,
        ".docx": DocxConverter,
        ".xlsx": XlsxConverter,
        ".pptx": PptxConverter,
    }[suffix]
    return converter()


def document_to_markdown(
    path: str | Path,
    *,
    memory_mb: int = MAX_MEMORY_MB,
    cpu_seconds: int = MAX_CPU_SECONDS,
    seconds: float = MAX_SECONDS,
) -> str:
    """The Markdown of the document at ``path`` (PDF, DOCX, XLSX or PPTX), converted in a child
    process under memory, CPU and wall-time limits (see the module docstring)."""
    path = Path(path)
    if path.suffix.lower() not in CONVERTIBLE_SUFFIXES:
        return _convert_here(path)  # raises the "only ... are converted" error
    failed = f"this document could not be converted: {path.name}"
    with tempfile.TemporaryDirectory(prefix="herdsman-convert-") as tmp:
        out = Path(tmp) / "out.json"
        argv = [sys.executable, "-m", "herdsman.tools.documents", str(path), str(out), str(memory_mb), str(cpu_seconds)]
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=seconds,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
        except subprocess.TimeoutExpired:
            raise DocumentConversionError(
                f"{failed} (it took longer than {seconds:g} s); split it into smaller files or convert it yourself"
            ) from None
        if done.returncode != 0 or not out.exists():
            raise DocumentConversionError(f"{failed} ({_why(done.returncode, done.stderr, memory_mb, cpu_seconds)})")
        if out.stat().st_size > 4 * MAX_MARKDOWN_CHARS + 4096:
            raise DocumentConversionError(f"{failed} (its text is larger than {MAX_MARKDOWN_CHARS} characters)")
        answer = json.loads(out.read_text(encoding="utf-8"))
    if "error" in answer:
        raise DocumentConversionError(answer["error"])
    return str(answer["markdown"])


def _why(code: int, stderr: bytes, memory_mb: int, cpu_seconds: int) -> str:
    """What made the converting child fail, from its exit status and its last words."""
    tail = stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
    if code in (-9, -24) or "SIGXCPU" in tail[0]:  # SIGKILL after SIGXCPU, or SIGXCPU
        return f"it needed more than {cpu_seconds} s of CPU time"
    if "MemoryError" in tail[0] or code == 3:
        return f"it needed more than {memory_mb} MB of memory to read"
    if code in (-6, -11):  # a C parser aborting when an allocation fails
        return f"the converter crashed, most likely out of its {memory_mb} MB of memory"
    return f"the converter stopped: {tail[0][:200] or f'exit status {code}'}"


def _convert_here(path: Path) -> str:
    """The conversion itself (in the limited child): the Markdown of ``path``."""
    from markitdown import StreamInfo
    from markitdown._exceptions import MissingDependencyException

    path = Path(path)
    suffix = path.suffix.lower()
    kind = suffix.lstrip(".").upper()
    if suffix not in CONVERTIBLE_SUFFIXES:
        raise DocumentConversionError(
            f"{path.name}: only {', '.join(s.lstrip('.').upper() for s in CONVERTIBLE_SUFFIXES)} files are converted"
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentConversionError(f"{path.name}: cannot be read ({exc.strerror})") from None
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentConversionError(
            f"{path.name} is {size // (1024 * 1024)} MB, more than the {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB "
            "converted; split it into smaller files and upload those"
        )
    try:
        with open(path, "rb") as fh:
            result = _converter(suffix).convert(
                fh, StreamInfo(extension=suffix, filename=path.name, local_path=str(path))
            )
    except MissingDependencyException as exc:
        raise DocumentConversionError(
            f"{path.name}: the {kind} converter is not installed ({exc}); install markitdown[pdf,docx,xlsx,pptx]"
        ) from None
    except MemoryError:
        raise  # the child's limit: reported as such, not as a damaged file
    except Exception as exc:  # noqa: BLE001 - every parser has its own errors; all mean a bad file
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DocumentConversionError(
            f"{path.name} could not be read as a {kind} file ({type(exc).__name__}: {detail}); it may be "
            f"damaged or not really a {kind}: open it on your computer to check, then upload it again"
        ) from None
    text = (result.markdown or "").replace("\x0c", "\n").strip()
    if not text:
        raise DocumentConversionError(
            f"{path.name} has no text that can be extracted (a scanned {kind} holds only images); "
            "upload a version with text, or the pages as images"
        )
    return text + "\n"


def convert_upload(path: str | Path) -> Path:
    """Convert the uploaded document at ``path`` and write ``<name>.md`` beside it; that path.

    Raises :class:`DocumentConversionError` (the upload itself is left as it is).
    """
    path = Path(path)
    text = document_to_markdown(path)
    target = markdown_path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def convert_sandbox_upload(sandbox: Any, path: str) -> str | None:
    """Convert the upload at virtual ``path`` in ``sandbox`` and write ``<path>.md`` beside it.

    Returns the Markdown's virtual path, or None when the file is not a convertible type. Works
    through the Sandbox protocol, so it is the same for every provider; raises
    :class:`DocumentConversionError` (messages name only the file, never a host path).
    """
    from langchain_core.tools import ToolException

    from herdsman.tools.sandbox_files import FileTooLargeError, read_sandbox_bytes

    if not is_convertible(path):
        return None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    try:
        data = read_sandbox_bytes(sandbox, path, MAX_DOCUMENT_BYTES)
    except FileTooLargeError as exc:
        raise DocumentConversionError(
            f"{name} is {exc.size // (1024 * 1024)} MB, more than the {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB "
            "converted; split it into smaller files and upload those"
        ) from None
    except (ToolException, OSError) as exc:
        raise DocumentConversionError(f"{name}: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="herdsman-doc-") as tmp:
        local = Path(tmp) / name
        local.write_bytes(data)
        text = document_to_markdown(local)
    target = f"{path}.md"
    sandbox.write_text(target, text)
    return target


def _child(source: str, target: str, memory_mb: int, cpu_seconds: int) -> int:
    """The child's work: limit this process, convert ``source``, write the answer as JSON."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 1024 * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        text = _convert_here(Path(source))
        if len(text) > MAX_MARKDOWN_CHARS:
            text = text[:MAX_MARKDOWN_CHARS] + f"\n\n[cut at {MAX_MARKDOWN_CHARS} characters]\n"
        answer: dict[str, str] = {"markdown": text}
    except DocumentConversionError as exc:
        answer = {"error": str(exc)}
    except MemoryError:
        return 3
    with open(target, "w", encoding="utf-8") as fh:
        json.dump(answer, fh)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
