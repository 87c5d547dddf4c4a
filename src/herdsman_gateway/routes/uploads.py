"""Uploads: files a user gives a thread, put in its sandbox at ``/mnt/user-data/uploads``.

``POST /api/threads/{id}/uploads`` takes ``multipart/form-data`` (one or more ``files``
fields). The body is parsed with the standard library's MIME parser, so the gateway needs no
extra multipart package; uploads are bounded by ``MAX_UPLOAD_BYTES``. File names are reduced to
their last component, so an upload can never leave the uploads folder. PDF, DOCX, XLSX and PPTX
uploads are also converted to Markdown beside them (``report.pdf.md``) for the agent to read; a
file that cannot be converted is kept, and the response says why.
"""

from __future__ import annotations

import asyncio
import posixpath
from email import policy
from email.parser import BytesParser
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response

from herdsman.sandbox.base import UPLOADS, Sandbox, SandboxError
from herdsman.tools.documents import DocumentConversionError, convert_sandbox_upload
from herdsman_gateway.auth import current_user
from herdsman_gateway.context import Gateway, get_gateway
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/uploads", tags=["uploads"])

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
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


def safe_name(filename: str) -> str:
    """The last component of an uploaded file's name; 400 when nothing usable is left."""
    name = posixpath.basename(filename.replace("\\", "/")).strip()
    if not name or name in (".", "..") or "\x00" in name:
        raise HTTPException(400, f"Upload name {filename!r} is not a usable file name; rename the file and retry")
    return name


def parse_multipart(content_type: str, body: bytes) -> list[tuple[str, bytes]]:
    """The (file name, bytes) of every file part of a ``multipart/form-data`` body."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise HTTPException(415, "Send the files as multipart/form-data (a form with one or more 'files' fields)")
    message = BytesParser(policy=policy.default).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\nMIME-Version: 1.0\r\n\r\n" + body
    )
    if not message.is_multipart():
        raise HTTPException(422, "Invalid request: the multipart body could not be parsed; check its boundary")
    files = []
    for part in message.iter_parts():
        filename = part.get_filename()
        if filename is None:
            continue
        files.append((safe_name(filename), part.get_payload(decode=True) or b""))
    if not files:
        raise HTTPException(422, "Invalid request: no file in the form; send them in fields named 'files' with a filename")
    return files


def write_bytes(sandbox: Sandbox, vpath: str, data: bytes) -> None:
    """Write ``data`` at virtual ``vpath`` (binary through the local sandbox's paths, else as text)."""
    paths = getattr(sandbox, "paths", None)
    if paths is not None:
        host = paths.resolve(vpath, write=True)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_bytes(data)
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(415, "This sandbox provider only accepts text uploads (UTF-8)") from None
    sandbox.write_text(vpath, text)


def describe(sandbox: Sandbox, vpath: str) -> dict[str, Any]:
    """Name, virtual path and size of an uploaded file."""
    paths = getattr(sandbox, "paths", None)
    size = paths.resolve(vpath).stat().st_size if paths is not None else None
    return {"filename": posixpath.basename(vpath), "path": vpath, "size": size}


@router.post("", summary="Upload files to a thread", openapi_extra=MULTIPART_SCHEMA)
async def upload(
    thread_id: str, request: Request, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> dict[str, Any]:
    """Save each file of the form in the thread's uploads folder (same name: replaced)."""
    await load_thread(gw, thread_id, user)
    length = int(request.headers.get("content-length") or 0) if (request.headers.get("content-length") or "0").isdigit() else 0
    if length > MAX_UPLOAD_BYTES:
        raise HTTPException(413, f"Upload too large ({length} bytes); the limit is {MAX_UPLOAD_BYTES} bytes")
    body = await request.body()
    if len(body) > MAX_UPLOAD_BYTES:
        raise HTTPException(413, f"Upload too large; the limit is {MAX_UPLOAD_BYTES} bytes")
    sandbox = gw.sandbox.acquire(thread_id)
    saved = []
    for name, data in parse_multipart(request.headers.get("content-type", ""), body):
        vpath = f"{UPLOADS}/{name}"
        write_bytes(sandbox, vpath, data)
        entry = describe(sandbox, vpath)
        try:
            markdown = await asyncio.to_thread(convert_sandbox_upload, sandbox, vpath)
            if markdown:
                entry["markdown"] = markdown
        except DocumentConversionError as exc:
            entry["conversion_error"] = str(exc)
        saved.append(entry)
    return {"files": saved}


@router.get("", summary="List a thread's uploads")
async def list_uploads(thread_id: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)) -> dict[str, Any]:
    """The files in the thread's uploads folder."""
    await load_thread(gw, thread_id, user)
    sandbox = gw.sandbox.acquire(thread_id)
    entries = [p for p in sandbox.list_dir(UPLOADS, max_depth=1) if not p.endswith("/")]
    return {"files": [describe(sandbox, p) for p in entries]}


@router.delete("/{filename}", status_code=204, response_class=Response, summary="Delete an upload")
async def delete_upload(
    thread_id: str, filename: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """Remove one file from the thread's uploads folder."""
    await load_thread(gw, thread_id, user)
    sandbox = gw.sandbox.acquire(thread_id)
    vpath = f"{UPLOADS}/{safe_name(filename)}"
    paths = getattr(sandbox, "paths", None)
    if paths is None:
        raise HTTPException(501, "This sandbox provider cannot delete files through the gateway")
    try:
        host = paths.resolve(vpath, write=True)
    except SandboxError as exc:
        raise HTTPException(400, str(exc)) from None
    if not host.is_file():
        raise HTTPException(404, f"No upload named {filename!r} on thread {thread_id}; list them with GET /api/threads/{thread_id}/uploads")
    host.unlink()
    return Response(status_code=204)
