"""A file of a thread's outputs or workspace for preview, with its relative CSS, JS and images.

``outputs/site/`` and ``outputs/site`` mean ``outputs/site/index.html``, so a page's relative
links resolve beside it. Only ``/mnt/user-data/outputs`` and ``/mnt/user-data/workspace`` are
served: the file is opened by the sandbox's own :class:`~herdsman.sandbox.fs.ThreadFiles`
(descriptors, no symlink followed out of the thread's user data, never check-then-open), and the
canonical path it reached must still be under one of the two, so a link from outputs into
uploads or out of the sandbox is refused like ``..``.
"""

from __future__ import annotations

import os
import posixpath
import stat

from fastapi import HTTPException
from fastapi.responses import Response, StreamingResponse

from herdsman import pools
from herdsman.sandbox.base import OUTPUTS, WORKSPACE, HostBackedSandbox, SandboxError
from herdsman.sandbox.fs import NotFoundError, ThreadFiles
from herdsman_gateway.routes.artifacts import content_type, stream_fd, virtual_path

ROOTS = (OUTPUTS, WORKSPACE)
INDEX = "index.html"


def preview_vpath(path: str) -> str:
    """The virtual path ``path`` names (``outputs/a.html`` or ``/mnt/user-data/outputs/a.html``);
    400 when it is outside outputs and workspace."""
    vpath = posixpath.normpath(virtual_path(path))
    if not _under_roots(vpath):
        raise HTTPException(
            400,
            f"{path!r} is not under outputs or workspace: only {OUTPUTS} and {WORKSPACE} "
            "can be previewed (e.g. outputs/site/index.html)",
        )
    return vpath


def _under_roots(vpath: str) -> bool:
    return any(vpath == root or vpath.startswith(root + "/") for root in ROOTS)


def open_preview(files: ThreadFiles, vpath: str) -> tuple[int, int, str]:
    """A descriptor of the file at ``vpath`` (a folder's ``index.html``), its size and canonical
    virtual path; NotFoundError or SandboxError when it cannot be served."""
    st = files.stat(vpath)
    if st is not None and stat.S_ISDIR(st.st_mode):
        vpath = posixpath.join(vpath, INDEX)
    with files.open_file(vpath) as (fd, st, canonical):
        if not _under_roots(canonical):
            raise SandboxError(f"{vpath} leads outside outputs and workspace; it cannot be previewed")
        return os.dup(fd), st.st_size, canonical


async def file_response(sandbox: object, path: str, user: str | None, headers: dict[str, str]) -> Response:
    """The preview of ``path`` in ``sandbox`` as a streamed response carrying ``headers``."""
    vpath = preview_vpath(path)
    if not isinstance(sandbox, HostBackedSandbox):
        raise HTTPException(501, "this sandbox provider keeps no host files to preview")
    try:
        fd, size, canonical = await pools.run(pools.FILES, user, open_preview, sandbox.files, vpath)
    except NotFoundError as exc:
        raise HTTPException(
            404, f"{exc}; list the thread's HTML outputs with GET /api/threads/{{id}}/preview"
        ) from None
    except SandboxError as exc:
        raise HTTPException(400, str(exc)) from None
    media = content_type(posixpath.basename(canonical))
    return StreamingResponse(stream_fd(fd, user), media_type=media, headers={**headers, "content-length": str(size)})
