"""A thread's files as a directory listing: ``GET /api/threads/{id}/files?path=...&depth=...``.

The web UI's files panel shows the thread's workspace, outputs and uploads as a tree built from
this listing. ``path`` is a virtual directory (``/mnt/user-data`` by default, or one of its
folders; ``outputs`` is short for ``/mnt/user-data/outputs``) and is resolved by the sandbox's own
:class:`~herdsman.sandbox.fs.ThreadFiles` (by descriptors, race-free), so ``..`` and symlinks that
leave the thread's user data are refused with 400 exactly as the agent's file tools refuse them. The walk goes breadth
first (top folders before their contents), never follows a symlink into a folder, leaves out
links that point outside the sandbox, and stops at ``MAX_ENTRIES`` with ``truncated: true``.
Download or preview a listed file with ``GET /api/threads/{id}/artifacts/<path>``.
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from herdsman import pools
from herdsman.sandbox.base import USER_DATA_ROOT, HostBackedSandbox, PathEscapeError, Sandbox, SandboxError
from herdsman.sandbox.fs import ThreadFiles, WalkStop
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.artifacts import content_type
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/files", tags=["files"])

MAX_ENTRIES = 2000
MAX_DEPTH = 12


class FileEntry(BaseModel):
    """One file or folder of a thread, by virtual path."""

    path: str = Field(description="Virtual path, e.g. /mnt/user-data/outputs/report.md.")
    name: str = Field(description="Last component of the path.")
    kind: Literal["file", "dir"]
    size: int | None = Field(None, description="Bytes (files only; unknown for some sandbox providers).")
    modified: datetime | None = Field(None, description="Last modification time (UTC).")
    content_type: str | None = Field(None, description="Media type implied by the file name (files only).")


class FileListing(BaseModel):
    """The entries below one virtual directory."""

    path: str = Field(description="The listed virtual directory (canonical form).")
    entries: list[FileEntry]
    truncated: bool = Field(description=f"True when more than {MAX_ENTRIES} entries were found and the rest left out.")


def _entry(vpath: str, st: os.stat_result) -> FileEntry:
    is_dir = stat.S_ISDIR(st.st_mode)
    name = vpath.rsplit("/", 1)[-1]
    return FileEntry(
        path=vpath,
        name=name,
        kind="dir" if is_dir else "file",
        size=None if is_dir else st.st_size,
        modified=datetime.fromtimestamp(st.st_mtime, tz=UTC),
        content_type=None if is_dir else content_type(name),
    )


def walk(files: ThreadFiles, vroot: str, depth: int, limit: int | None = None) -> tuple[list[FileEntry], bool]:
    """Entries below virtual ``vroot``, breadth first, ``depth`` levels deep, at most ``limit``
    of them (default ``MAX_ENTRIES``); the flag says whether some were left out.

    The walk goes by descriptors (``ThreadFiles.walk``): a symlink is resolved in virtual space,
    one that leaves the sandbox is left out, one that stays in is listed as what it points to
    but never descended into.
    """
    limit = MAX_ENTRIES if limit is None else limit
    found: list[FileEntry] = []
    stop = WalkStop()
    for entry in files.walk(vroot, max_depth=depth, limit=limit * 4, seconds=10.0, stop=stop, breadth_first=True):
        st = entry.st
        if entry.is_link:
            try:
                target = files.stat(entry.vpath)
            except SandboxError:
                continue  # a link leaving the sandbox
            if target is None:
                continue  # a dangling link
            st = target
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            continue  # sockets, pipes, devices
        if len(found) >= limit:
            return found, True
        found.append(_entry(entry.vpath, st))
    return found, bool(stop.reason)


def _listing_without_paths(sandbox: Sandbox, vpath: str, depth: int) -> FileListing:
    """The listing from ``Sandbox.list_dir`` for providers without host paths (no sizes or times)."""
    try:
        listed = sandbox.list_dir(vpath, max_depth=depth)
    except SandboxError as exc:
        raise HTTPException(404 if "does not exist" in str(exc) else 400, str(exc)) from None
    entries = [
        FileEntry(
            path=p.rstrip("/"),
            name=p.rstrip("/").rsplit("/", 1)[-1],
            kind="dir" if p.endswith("/") else "file",
            content_type=None if p.endswith("/") else content_type(p),
        )
        for p in listed[:MAX_ENTRIES]
    ]
    return FileListing(path=vpath, entries=entries, truncated=len(listed) > MAX_ENTRIES)


@router.get("", summary="List a thread's files", response_model=FileListing)
async def list_files(
    thread_id: str,
    path: str = Query(
        USER_DATA_ROOT,
        description="A virtual directory: /mnt/user-data or a folder below it "
        "(a relative path such as outputs is taken from /mnt/user-data).",
    ),
    depth: int = Query(1, ge=1, le=MAX_DEPTH, description="How many levels to list (1: the folder's own entries)."),
    gw: Gateway = Depends(get_gateway),
    user: str | None = Depends(current_user),
) -> FileListing:
    """Files and folders below ``path`` in the thread's workspace, uploads and outputs."""
    await load_thread(gw, thread_id, user)
    sandbox = await gw.sandbox_of(thread_id, user)
    vpath = path.strip() if path.strip().startswith("/") else f"{USER_DATA_ROOT}/{path.strip()}"
    if not isinstance(sandbox, HostBackedSandbox):
        return await pools.run(pools.FILES, user, _listing_without_paths, sandbox, vpath, depth)
    files = sandbox.files

    def listing() -> FileListing:
        try:
            canonical = files.resolve_virtual(vpath)
            if canonical != USER_DATA_ROOT and not canonical.startswith(USER_DATA_ROOT + "/"):
                raise PathEscapeError(f"{path}: only {USER_DATA_ROOT} and the folders below it are listed here")
            st = files.stat(canonical)
        except SandboxError as exc:
            raise HTTPException(400, str(exc)) from None
        if st is None:
            raise HTTPException(
                404, f"{canonical} does not exist in thread {thread_id}; list {USER_DATA_ROOT} to see its folders"
            )
        if not stat.S_ISDIR(st.st_mode):
            raise HTTPException(
                400, f"{canonical} is a file, not a folder; get it from /api/threads/{thread_id}/artifacts{canonical}"
            )
        entries, truncated = walk(files, canonical, depth)
        return FileListing(path=canonical, entries=entries, truncated=truncated)

    return await pools.run(pools.FILES, user, listing)
