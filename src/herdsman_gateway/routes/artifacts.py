"""Artifacts: files of a thread's sandbox (outputs, workspace, uploads) by virtual path.

``GET /api/threads/{id}/artifacts/mnt/user-data/outputs/report.md`` answers the file with the
content type its name implies; ``?download=true`` makes browsers save it instead. Paths leaving
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

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import Response, StreamingResponse

from herdsman import pools
from herdsman.sandbox.base import USER_DATA_ROOT, HostBackedSandbox, SandboxError
from herdsman.sandbox.fs import CHUNK, NotFoundError, ThreadFiles
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/artifacts", tags=["artifacts"])

TEXT_TYPES = {".md": "text/markdown", ".py": "text/x-python", ".ts": "text/typescript", ".yaml": "application/yaml",
              ".yml": "application/yaml", ".jsonl": "application/x-ndjson", ".csv": "text/csv"}


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


@router.get("/{path:path}", summary="Get a file of a thread", response_class=Response,
            responses={200: {"content": {"application/octet-stream": {}}}})
async def get_artifact(
    thread_id: str,
    path: str,
    download: bool = False,
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> Response:
    """The file at virtual ``path`` in the thread's outputs, workspace or uploads."""
    await load_thread(gw, thread_id, user)
    vpath = virtual_path(path)
    sandbox = gw.sandbox.acquire(thread_id)
    name = posixpath.basename(vpath)
    media = content_type(name)
    disposition = "attachment" if download else "inline"
    if not isinstance(sandbox, HostBackedSandbox):
        try:
            return Response(sandbox.read_text(vpath), media_type=media)
        except SandboxError as exc:
            raise HTTPException(404 if "does not exist" in str(exc) else 400, str(exc)) from None
    try:
        fd, size = await pools.run(pools.FILES, user, open_download, sandbox.files, vpath)
    except NotFoundError as exc:
        raise HTTPException(404, f"{exc}; list the thread's files under {USER_DATA_ROOT}") from None
    except SandboxError as exc:
        raise HTTPException(400, str(exc)) from None
    headers = {"content-length": str(size), "content-disposition": content_disposition(disposition, name)}
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
