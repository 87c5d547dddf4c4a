"""Uploads: files a user gives a thread, put in its sandbox at ``/mnt/user-data/uploads``.

``POST /api/threads/{id}/uploads`` takes ``multipart/form-data`` (one or more ``files``
fields). The body is streamed, never held in memory: ``python-multipart``'s push parser (the one
Starlette uses) cuts it into parts chunk by chunk, and each file part is written as it arrives
to a staging folder beside the thread's user data (outside every virtual path, so neither the
agent nor the file listing sees half-written files). Reading stops as soon as the body passes
``gateway.max_upload_bytes`` or its files ``gateway.max_upload_files`` (config.yaml;
``GET /api/limits`` tells clients): the answer is 413 and the staging folder is removed, so
nothing partial is left. Only a complete body moves
its files into the uploads folder, all or nothing: every target is checked first (a folder of
the same name refuses the request with 409), then each file moves with an atomic rename.

File names are reduced to their last component, so an upload can never leave the uploads
folder, and checked before anything is written: a name the filesystem would refuse (longer than
:data:`MAX_NAME_BYTES` in UTF-8, a NUL, text that is not Unicode) is a 400 that says to rename.
PDF, DOCX, XLSX and PPTX uploads are also converted to Markdown beside them
(``report.pdf.md``) for the agent to read; a file that cannot be converted is kept, and the
response says why.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO, cast

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from pydantic import BaseModel, Field
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header

from herdsman import pools
from herdsman.config.schema import GatewayConfig
from herdsman.sandbox.base import UPLOADS, HostBackedSandbox, Sandbox, SandboxError
from herdsman.sandbox.quota import QuotaExceededError, Usage
from herdsman.tools.documents import DocumentConversionError, convert_sandbox_upload, is_convertible
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(tags=["uploads"])

ROUTE = "/api/threads/{thread_id}/uploads"
MAX_NAME_BYTES = 255 - len(".md")  # a file name's limit (NAME_MAX), less the Markdown copy's suffix
STAGING_PREFIX = ".upload-"  # folders beside a thread's user data holding uploads still arriving
MULTIPART_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
                    "required": ["files"],
                }
            }
        },
    }
}


class Limits(BaseModel):
    """Limits of this gateway that a client should check before sending."""

    max_upload_bytes: int = Field(description="Largest upload request in bytes (all files of one request together).")
    max_upload_files: int = Field(description="Most files in one upload request.")


FRAMING_BYTES_PER_FILE = 16 * 1024  # a part's boundary and headers (its file name included), generously


def max_request_bytes(config: GatewayConfig) -> int:
    """The request body limit of these routes (FastAPI's ``max_body_size``): the files' limit plus
    their multipart framing, so the upload's own checks, with their own words, refuse first (the
    body is streamed to disk, never held in memory)."""
    return config.max_upload_bytes + config.max_upload_files * FRAMING_BYTES_PER_FILE + 1024 * 1024


def megabytes(size: int) -> str:
    """``size`` in MB (2**20 bytes) for messages: ``50 MB``, ``0.5 MB``."""
    value = size / 2**20
    return f"{value:.0f} MB" if value >= 10 or value == int(value) else f"{value:.1f} MB"


def too_large(limit: int) -> HTTPException:
    """The 413 an upload over ``limit`` bytes gets, naming the limit and what to do."""
    return HTTPException(
        413,
        f"Upload too large: the limit is {megabytes(limit)} ({limit} bytes) per upload request, set by "
        "gateway.max_upload_bytes in config.yaml; nothing was kept. Send fewer or smaller files at a time.",
    )


def too_many(limit: int) -> HTTPException:
    """The 413 an upload of more than ``limit`` files gets, naming the limit and what to do."""
    return HTTPException(
        413,
        f"Too many files: the limit is {limit} files per upload request, set by gateway.max_upload_files in "
        "config.yaml; nothing was kept. Send the files in several requests, or as one archive.",
    )


def safe_name(filename: str) -> str:
    """The last component of an uploaded file's name; 400 when the filesystem could not take it."""
    name = posixpath.basename(filename.replace("\\", "/")).strip()
    shown = repr(filename if len(filename) <= 60 else filename[:57] + "...")
    if not name or name in (".", "..") or "\x00" in name:
        raise HTTPException(400, f"Upload name {shown} is not a usable file name; rename the file and retry")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise HTTPException(400, f"Upload name {shown} is not valid Unicode text; rename the file and retry") from None
    if size > MAX_NAME_BYTES:
        raise HTTPException(
            400,
            f"Upload name {shown} is too long ({size} bytes in UTF-8, at most {MAX_NAME_BYTES}); "
            "rename the file to a shorter name and retry (nothing was kept)",
        )
    return name


def _decode(raw: bytes) -> str:
    """A header parameter as sent by browsers (UTF-8), else as HTTP's latin-1."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


class _Stager:
    """The callbacks of the multipart parser: each file part goes to its own file in ``folder``."""

    def __init__(self, folder: Path, max_files: int) -> None:
        self.folder = folder
        self.max_files = max_files
        self.files: list[tuple[str, Path]] = []
        self._headers: dict[str, str] = {}
        self._field = b""
        self._value = b""
        self._out: BinaryIO | None = None

    def callbacks(self) -> dict[str, Any]:
        """The callback table :class:`MultipartParser` takes."""
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda data, start, end: self._add("_field", data[start:end]),
            "on_header_value": lambda data, start, end: self._add("_value", data[start:end]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self.close,
        }

    def _add(self, attr: str, data: bytes) -> None:
        setattr(self, attr, getattr(self, attr) + data)

    def _part_begin(self) -> None:
        self._headers = {}

    def _header_end(self) -> None:
        self._headers[self._field.decode("latin-1").lower()] = self._value.decode("latin-1")
        self._field = self._value = b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get("content-disposition"))
        if b"filename" not in options:
            return  # a plain form field: not a file, skipped
        if len(self.files) >= self.max_files:
            raise too_many(self.max_files)  # before this part is written
        name = safe_name(_decode(options[b"filename"]))
        target = self.folder / f"{len(self.files)}.part"
        self._out = target.open("wb")
        self.files.append((name, target))

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._out is not None:
            self._out.write(data[start:end])

    def close(self) -> None:
        """Close the file being written, if any."""
        if self._out is not None:
            self._out.close()
            self._out = None


@asynccontextmanager
async def staged_upload(
    request: Request, staging_root: Path | None, limit: int, max_files: int, user: str | None = None
) -> AsyncIterator[list[tuple[str, Path]]]:
    """Stream the multipart body of ``request`` into a temporary folder under ``staging_root``.

    Yields the (safe file name, staged file) of every file part. Raises 413 as soon as more than
    ``limit`` bytes or ``max_files`` files arrived, 400 for a file name the filesystem would refuse,
    415 or 422 for bodies that are not usable forms; the staging folder is removed on the way out in
    every case (move the files out of it to keep them).
    """
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data":
        raise HTTPException(415, "Send the files as multipart/form-data (a form with one or more 'files' fields)")
    boundary = params.get(b"boundary")
    if not boundary:
        raise HTTPException(422, "Invalid request: the multipart/form-data content type has no boundary")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)  # refused before reading anything
    folder = await pools.run(pools.FILES, user, staging_folder, staging_root)
    stager = _Stager(folder, max_files)
    try:
        parser = MultipartParser(boundary, cast(Any, stager.callbacks()))  # the callbacks dict the parser documents
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise too_large(limit)
            if chunk:
                try:
                    await pools.run(pools.FILES, user, parser.write, chunk)
                except MultipartParseError as exc:
                    raise HTTPException(
                        422, f"Invalid request: the multipart body could not be parsed ({exc}); check its boundary"
                    ) from None
        if parser.state != MultipartState.END:
            raise HTTPException(
                422, "Invalid request: the multipart body ended early or could not be parsed; check its boundary"
            )
        if not stager.files:
            raise HTTPException(
                422, "Invalid request: no file in the form; send them in fields named 'files' with a filename"
            )
        yield stager.files
    finally:
        stager.close()
        await pools.run(pools.FILES, user, shutil.rmtree, folder, True)


def staging_folder(staging_root: Path | None) -> Path:
    """A new, empty folder under ``staging_root`` (made if missing; None: the system's temporary
    folder) for the files of one upload as they arrive."""
    if staging_root is not None:
        staging_root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=staging_root))


def upload_target(sandbox: Sandbox, vpath: str, staged: Path) -> str | None:
    """Check where the staged file will go: None for a sandbox with host-backed files (checked
    through its descriptors), else its text for a provider that only takes text. Raises the
    HTTP error that refuses it; moves nothing."""
    if isinstance(sandbox, HostBackedSandbox):
        try:
            st = sandbox.files.stat(vpath)
        except SandboxError as exc:
            raise HTTPException(400, str(exc)) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise HTTPException(409, f"{vpath} is a folder; rename the file and retry (nothing was kept)")
        return None
    try:
        return staged.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(415, "This sandbox provider only accepts text uploads (UTF-8); nothing was kept") from None


def check_quota(sandbox: Sandbox, staged: list[Path]) -> None:
    """Refuse the whole request (413) when its files would take the thread past its disk quota."""
    if not isinstance(sandbox, HostBackedSandbox) or sandbox.files.quota is None:
        return
    quota = sandbox.files.quota
    if not quota.enabled:
        return
    usage = quota.usage(fresh=True)
    after = Usage(usage.bytes + sum(p.stat().st_size for p in staged), usage.files + len(staged))
    if quota.over(after):
        raise HTTPException(413, f"{quota.error('the upload was refused (nothing was kept)', usage)}")


def store_uploads(sandbox: Sandbox, files: list[tuple[str, Path]]) -> list[str]:
    """Put every staged file in the uploads folder, all or nothing: every target (and the
    quota) is checked first, so a refused file (a folder of that name, a provider that takes
    text only) keeps none; the files then move with an atomic rename each, by descriptor.
    The virtual paths written, in order."""
    targets = [(f"{UPLOADS}/{name}", staged) for name, staged in files]
    checked = [(vpath, staged, upload_target(sandbox, vpath, staged)) for vpath, staged in targets]
    check_quota(sandbox, [staged for _, staged in targets])
    for vpath, staged, text in checked:
        if text is None:
            assert isinstance(sandbox, HostBackedSandbox)
            folder = os.open(staged.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                sandbox.files.move_in(folder, staged.name, vpath)
            except QuotaExceededError as exc:
                raise HTTPException(413, str(exc)) from None
            except SandboxError as exc:
                raise HTTPException(400, str(exc)) from None
            except IsADirectoryError:
                raise HTTPException(409, f"{vpath} is a folder; rename the file and retry") from None
            except OSError as exc:
                raise HTTPException(400, f"{vpath} could not be stored ({exc.strerror}); rename it and retry") from None
            finally:
                os.close(folder)
        else:
            sandbox.write_text(vpath, text)
    return list(dict.fromkeys(vpath for vpath, _ in targets))


def describe(sandbox: Sandbox, vpath: str) -> dict[str, Any]:
    """Name, virtual path and size of an uploaded file."""
    st = sandbox.files.stat(vpath) if isinstance(sandbox, HostBackedSandbox) else None
    return {"filename": posixpath.basename(vpath), "path": vpath, "size": st.st_size if st is not None else None}


@router.get(
    "/api/limits",
    summary="Limits clients should check before sending",
    response_model=Limits,
    dependencies=[Depends(current_user)],
)
async def limits(gw: Gateway = Depends(get_gateway)) -> Limits:
    """The largest upload request this gateway accepts (``gateway.max_upload_bytes``, ``max_upload_files``)."""
    return Limits(
        max_upload_bytes=gw.config.gateway.max_upload_bytes, max_upload_files=gw.config.gateway.max_upload_files
    )


@router.post(
    ROUTE,
    summary="Upload files to a thread",
    openapi_extra=MULTIPART_SCHEMA,
    responses={
        413: {"description": "The upload is over gateway.max_upload_bytes or max_upload_files; nothing was kept."}
    },
)
async def upload(
    thread_id: str, request: Request, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Save each file of the form in the thread's uploads folder (same name: replaced)."""
    await load_thread(gw, thread_id, user)
    sandbox = await gw.sandbox_of(thread_id, user)
    staging_root = sandbox.paths.user_data.parent if isinstance(sandbox, HostBackedSandbox) else None
    saved = []
    limits = gw.config.gateway
    async with staged_upload(request, staging_root, limits.max_upload_bytes, limits.max_upload_files, user) as files:
        stored = await pools.run(pools.FILES, user, store_uploads, sandbox, files)
    for vpath in stored:
        entry = await pools.run(pools.FILES, user, describe, sandbox, vpath)
        if not is_convertible(vpath):  # nothing to convert: never wait for the conversions pool
            saved.append(entry)
            continue
        try:
            markdown = await pools.run(pools.CONVERSIONS, user, convert_sandbox_upload, sandbox, vpath)
            if markdown:
                entry["markdown"] = markdown
        except DocumentConversionError as exc:
            entry["conversion_error"] = str(exc)
        saved.append(entry)
    return {"files": saved}


@router.get(ROUTE, summary="List a thread's uploads")
async def list_uploads(
    thread_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """The files in the thread's uploads folder."""
    await load_thread(gw, thread_id, user)
    sandbox = await gw.sandbox_of(thread_id, user)

    def listing() -> list[dict[str, Any]]:
        entries = [p for p in sandbox.list_dir(UPLOADS, max_depth=1) if not p.endswith("/")]
        return [describe(sandbox, p) for p in entries]

    return {"files": await pools.run(pools.FILES, user, listing)}


@router.delete(ROUTE + "/{filename}", status_code=204, response_class=Response, summary="Delete an upload")
async def delete_upload(
    thread_id: str, filename: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Remove one file from the thread's uploads folder."""
    await load_thread(gw, thread_id, user)
    sandbox = await gw.sandbox_of(thread_id, user)
    vpath = f"{UPLOADS}/{safe_name(filename)}"
    if not isinstance(sandbox, HostBackedSandbox):
        raise HTTPException(501, "This sandbox provider cannot delete files through the gateway")
    files = sandbox.files

    def remove() -> None:
        st = files.stat(vpath, follow=False)
        if st is None or not stat.S_ISREG(st.st_mode):
            raise HTTPException(
                404,
                f"No upload named {filename!r} on thread {thread_id}; "
                f"list them with GET /api/threads/{thread_id}/uploads",
            )
        files.unlink(vpath)

    try:
        await pools.run(pools.FILES, user, remove)
    except SandboxError as exc:
        raise HTTPException(400, str(exc)) from None
    return Response(status_code=204)
