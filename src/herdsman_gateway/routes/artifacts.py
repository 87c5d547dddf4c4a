"""Artifacts: files of a thread's sandbox (outputs, workspace, uploads) by virtual path.

``GET /api/threads/{id}/artifacts/mnt/user-data/outputs/report.md`` answers the file with the
content type its name implies; ``?download=true`` makes browsers save it instead. The files were
written by the model, or by code it ran: every answer carries ``X-Content-Type-Options: nosniff``
and a sandboxing Content-Security-Policy (:data:`FILE_CSP`, the one raw.githubusercontent.com
serves), and an active type (HTML, SVG, XML, scripts: :func:`is_active`) is an attachment unless
``?preview=true`` asks to show it, still sandboxed (no script, an origin of its own), so a file
opened from the gateway can never run as the gateway's own page. Paths leaving
the thread's user-data folders (``..``, symlinks) are refused like in the sandbox itself. The
file is opened by descriptors (``ThreadFiles``) and streamed from that descriptor, so a link
swapped in while the download runs changes nothing.
``GET /api/threads/{id}/files`` (routes/files.py) lists what there is to get.
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
from collections.abc import AsyncIterator
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import Response, StreamingResponse

from herdsman import pools
from herdsman.sandbox.base import USER_DATA_ROOT, HostBackedSandbox, SandboxError
from herdsman.sandbox.fs import CHUNK, NotFoundError, ThreadFiles
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/artifacts", tags=["artifacts"])

TEXT_TYPES = {
    ".md": "text/markdown",
    ".py": "text/x-python",
    ".ts": "text/typescript",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".jsonl": "application/x-ndjson",
    ".csv": "text/csv",
}


FILE_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
ACTIVE_TYPES = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "image/svg+xml",
        "text/xml",
        "application/xml",
        "text/xsl",
        "application/javascript",
        "text/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "text/ecmascript",
        "application/wasm",
        "message/rfc822",
        "multipart/related",
        "application/x-shockwave-flash",
    }
)


def is_active(media: str) -> bool:
    """Whether a browser shown this media type may run scripts or render it as a document of its own."""
    essence = media.split(";")[0].strip().lower()
    return essence in ACTIVE_TYPES or essence.endswith(("+xml", "/xml"))


def file_headers(name: str, media: str, *, download: bool = True, preview: bool = False) -> dict[str, str]:
    """The headers of a thread's file sent as ``media``: never sniffed, always sandboxed, and an
    attachment when ``download`` is asked for or when it is active and no ``preview`` is."""
    inline = not download and (preview or not is_active(media))
    return {
        "x-content-type-options": "nosniff",
        "content-security-policy": FILE_CSP,
        "content-disposition": content_disposition("inline" if inline else "attachment", name),
    }


def virtual_path(path: str) -> str:
    """``/mnt/user-data/...`` from the URL path (``outputs/a.txt`` is short for it too)."""
    path = "/" + path.lstrip("/")
    if not path.startswith(USER_DATA_ROOT + "/"):
        path = USER_DATA_ROOT + path
    return path


def content_type(name: str) -> str:
    """The media type of a file from its name; text types carry charset=utf-8."""
    ext = posixpath.splitext(name)[1].lower()
    kind = TEXT_TYPES.get(ext) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind in ("application/json", "application/yaml", "application/x-ndjson"):
        kind += "; charset=utf-8"
    return kind


@router.get(
    "/{path:path}",
    summary="Get a file of a thread",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
async def get_artifact(
    thread_id: str,
    path: str,
    download: bool = False,
    preview: bool = Query(
        False,
        description="Show an active file (HTML, SVG, XML, scripts) in the browser, "
        "sandboxed by its Content-Security-Policy, instead of as an attachment.",
    ),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Response:
    """The file at virtual ``path`` in the thread's outputs, workspace or uploads."""
    await load_thread(gw, thread_id, user)
    vpath = virtual_path(path)
    sandbox = await gw.sandbox_of(thread_id, user)
    name = posixpath.basename(vpath)
    media = content_type(name)
    headers = file_headers(name, media, download=download, preview=preview)
    if not isinstance(sandbox, HostBackedSandbox):
        try:
            text = await pools.run(pools.FILES, user, sandbox.read_text, vpath)
            return Response(text, media_type=media, headers=headers)
        except SandboxError as exc:
            raise HTTPException(404 if "does not exist" in str(exc) else 400, str(exc)) from None
    try:
        fd, size = await pools.run(pools.FILES, user, open_download, sandbox.files, vpath)
    except NotFoundError as exc:
        raise HTTPException(404, f"{exc}; list the thread's files under {USER_DATA_ROOT}") from None
    except SandboxError as exc:
        raise HTTPException(400, str(exc)) from None
    headers["content-length"] = str(size)
    return StreamingResponse(stream_fd(fd, user), media_type=media, headers=headers)


def open_download(files: ThreadFiles, vpath: str) -> tuple[int, int]:
    """A descriptor of the regular file at ``vpath`` (opened race-free, its own copy) and its size."""
    with files.open_file(vpath) as (fd, st, _):
        return os.dup(fd), st.st_size


async def stream_fd(fd: int, user: str | None = None) -> AsyncIterator[bytes]:
    """The bytes behind ``fd`` in chunks, read on ``user``'s slots of the file pool; closes it at the end."""
    try:
        while True:
            chunk = await pools.run(pools.FILES, user, os.read, fd, CHUNK)
            if not chunk:
                return
            yield chunk
    finally:
        os.close(fd)


def content_disposition(kind: str, name: str) -> str:
    """A Content-Disposition header for ``name`` (RFC 6266: ASCII fallback plus UTF-8 form)."""
    ascii_name = name.encode("ascii", "replace").decode().replace('"', "_").replace("\\", "_")
    return f"{kind}; filename=\"{ascii_name}\"; filename*=utf-8''{quote(name, safe='')}"
