"""A folder of a thread as one zip: ``GET /api/threads/{id}/archive?path=outputs``.

The web UI's "Download all" asks for the outputs. The folder is walked by descriptors
(``ThreadFiles.walk``): links are left out (one inside the sandbox names a file already in the
archive or elsewhere in the thread; one that leaves it must never be followed), and each file
is opened race-free (``ThreadFiles.open_file``) and copied into the zip from that descriptor.
The archive is bounded (``MAX_FILES`` files, ``MAX_BYTES`` of content): past the bound the
answer is 413 with what to do, not a partial archive. It is built in a spooled temporary file
(memory first, disk past a few MB) and streamed from there. Written with the standard library's
``zipfile``: nothing more is needed.
"""

from __future__ import annotations

import os
import posixpath
import stat
import tempfile
import time
import zipfile
from collections.abc import AsyncIterator
from typing import IO

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import StreamingResponse

from herdsman import pools
from herdsman.sandbox.base import USER_DATA_ROOT, HostBackedSandbox, SandboxError
from herdsman.sandbox.fs import CHUNK, ThreadFiles, WalkStop
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.artifacts import file_headers
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/archive", tags=["artifacts"])

MAX_FILES = 5_000
MAX_BYTES = 512 * 1024 * 1024
SPOOL_BYTES = 8 * 1024 * 1024


class ArchiveTooLarge(Exception):
    """The folder holds more than an archive may."""


def build_zip(files: ThreadFiles, vroot: str) -> IO[bytes]:
    """A zip of the regular files below ``vroot`` (names relative to it), rewound for reading."""
    out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    count = total = 0
    stop = WalkStop()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in files.walk(vroot, limit=MAX_FILES * 4, seconds=30.0, stop=stop):
            if entry.is_link or not stat.S_ISREG(entry.st.st_mode):
                continue
            count += 1
            total += entry.st.st_size
            if count > MAX_FILES or total > MAX_BYTES:
                raise ArchiveTooLarge(
                    f"{vroot} holds more than {MAX_FILES} files or {MAX_BYTES // (1024 * 1024)} MB; download "
                    "the files one by one, or ask the agent to pack the ones you need"
                )
            try:
                _add(archive, files, entry.vpath, posixpath.relpath(entry.vpath, vroot))
            except SandboxError:
                continue  # gone or swapped for a link since the walk met it: left out
    if stop.reason:
        raise ArchiveTooLarge(f"{vroot} could not be walked whole ({stop.reason}); download the files one by one")
    out.seek(0)
    return out


def _add(archive: zipfile.ZipFile, files: ThreadFiles, vpath: str, name: str) -> None:
    """Copy the regular file at ``vpath`` into ``archive`` as ``name``, from a race-free descriptor."""
    with files.open_file(vpath) as (fd, st, _):
        info = zipfile.ZipInfo(name, date_time=time.localtime(max(st.st_mtime, 315532800))[:6])  # zip starts in 1980
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w") as member:
            while chunk := os.read(fd, CHUNK):
                member.write(chunk)


async def stream_file(handle: IO[bytes], user: str | None = None) -> AsyncIterator[bytes]:
    """The bytes of ``handle`` in chunks, read on ``user``'s slots of the file pool; closes it at the end."""
    try:
        while chunk := await pools.run(pools.FILES, user, handle.read, CHUNK):
            yield chunk
    finally:
        handle.close()


@router.get(
    "",
    summary="Download a folder of a thread as a zip",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/zip": {}}}, 413: {"description": "The folder is too large"}},
)
async def get_archive(
    thread_id: str,
    path: str = Query("outputs", description="A folder under /mnt/user-data (outputs, workspace, uploads or below)."),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> StreamingResponse:
    """The folder ``path`` of the thread (default: its outputs) as one zip file."""
    await load_thread(gw, thread_id, user)
    vpath = path.strip() if path.strip().startswith("/") else f"{USER_DATA_ROOT}/{path.strip()}"
    sandbox = await gw.sandbox_of(thread_id, user)
    if not isinstance(sandbox, HostBackedSandbox):
        raise HTTPException(
            400, "this sandbox provider keeps no files on the gateway's host: download the files one by one"
        )
    files = sandbox.files
    try:
        canonical = await pools.run(pools.FILES, user, files.resolve_virtual, vpath)
        if not canonical.startswith(USER_DATA_ROOT + "/"):
            raise HTTPException(400, f"{path}: only the folders below {USER_DATA_ROOT} can be downloaded as an archive")
        st = await pools.run(pools.FILES, user, files.stat, canonical)
        if st is None:
            raise HTTPException(404, f"{canonical} does not exist")
        if not stat.S_ISDIR(st.st_mode):
            raise HTTPException(
                400, f"{canonical} is a file: get it from /api/threads/{thread_id}/artifacts{canonical}"
            )
        handle = await pools.run(pools.FILES, user, build_zip, files, canonical)
    except ArchiveTooLarge as exc:
        raise HTTPException(413, str(exc)) from None
    except SandboxError as exc:
        raise HTTPException(400, str(exc)) from None
    name = f"{posixpath.basename(canonical) or 'files'}.zip"
    return StreamingResponse(
        stream_file(handle, user), media_type="application/zip", headers=file_headers(name, "application/zip")
    )
