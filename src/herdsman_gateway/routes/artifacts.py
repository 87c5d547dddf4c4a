"""Artifacts: files of a thread's sandbox (outputs, workspace, uploads) by virtual path.

``GET /api/threads/{id}/artifacts/mnt/user-data/outputs/report.md`` answers the file with the
content type its name implies; ``?download=true`` makes browsers save it instead. Paths leaving
the thread's user-data folders (``..``, symlinks) are refused like in the sandbox itself.
``GET /api/threads/{id}/files`` (routes/files.py) lists what there is to get.
"""

from __future__ import annotations

import mimetypes
import posixpath

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse, Response

from herdsman.sandbox.base import USER_DATA_ROOT, SandboxError
from herdsman_gateway.auth import current_user
from herdsman_gateway.context import Gateway, get_gateway
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
    paths = getattr(sandbox, "paths", None)
    try:
        if paths is None:
            return Response(sandbox.read_text(vpath), media_type=media)
        host = paths.resolve(vpath)
    except SandboxError as exc:
        raise HTTPException(404 if "does not exist" in str(exc) else 400, str(exc)) from None
    if not host.is_file():
        raise HTTPException(404, f"{vpath} is not a file of thread {thread_id}; list files under {USER_DATA_ROOT}/outputs")
    return FileResponse(host, media_type=media, filename=name, content_disposition_type=disposition)
