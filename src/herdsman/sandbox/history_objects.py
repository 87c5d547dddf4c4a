"""The object store of a thread's file history: contents and folder listings by SHA-256.

One job: keep immutable objects in ``<history>/objects/<2 hex>/<62 hex>``, each written once
(staged beside, then renamed in), and say which are there; :class:`~herdsman.sandbox.history.FileHistory`
decides what goes in and what may go. Folder listings are stored as canonical JSON, so two
identical folders are one object. Paths are built as strings where a step that changed nothing
looks (Path objects cost there, see ``benchmarks/snapshots.py``). Written by hand: a content
store of this size needs no library, and the layout is the one ``git`` made familiar.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from herdsman.sandbox.base import SandboxError

Entry = list[Any]
"""One entry of a folder listing: ``["f", mode, digest]``, ``["d", mode, digest]`` or ``["l", target]``."""


class HistoryError(SandboxError):
    """A version could not be made or brought back; the message says why and what to do."""


class ObjectStore:
    """The objects of one history's folder (see the module docstring)."""

    def __init__(self, objects: Path) -> None:
        """Keep objects in the folder ``objects`` (made when missing)."""
        self.root = objects
        self.root.mkdir(parents=True, exist_ok=True)
        self._root = str(objects)
        self._new_bytes = 0  # bytes stored since take_new_bytes was last called

    def path(self, digest: str) -> Path:
        """Where object ``digest`` is (or would be) kept."""
        return self.root / digest[:2] / digest[2:]

    def kept(self) -> bool:
        """Whether the store's folder is still there (a thread deleted since has none)."""
        return os.path.isdir(self._root)

    def has(self, digest: str) -> bool:
        """Whether object ``digest`` is stored."""
        return os.path.exists(f"{self._root}/{digest[:2]}/{digest[2:]}")

    def keep(self, tmp: Path, digest: str, size: int) -> None:
        """Move the staged file ``tmp`` (in the store's folder) in as object ``digest``, of
        ``size`` bytes on disk (dropped when it is there already)."""
        target = self.path(digest)
        if target.exists():
            tmp.unlink()
            return
        target.parent.mkdir(exist_ok=True)
        os.replace(tmp, target)
        self._new_bytes += size

    def put_listing(self, listing: dict[str, Entry]) -> str:
        """Store a folder listing; its digest."""
        data = json.dumps(listing, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(data).hexdigest()
        target = f"{self._root}/{digest[:2]}/{digest[2:]}"
        if not os.path.exists(target):  # (strings, not Paths: a new thread's first capture stores four)
            staged = f"{self._root}/.listing-{os.getpid()}-{threading.get_ident()}"  # one at a time per thread
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            try:
                os.mkdir(os.path.dirname(target))
            except FileExistsError:
                pass
            os.replace(staged, target)
            self._new_bytes += len(data)
        return digest

    def listing(self, digest: str) -> dict[str, Entry]:
        """The folder listing ``digest``; HistoryError when it is gone."""
        try:
            listing: dict[str, Entry] = json.loads(self.path(digest).read_bytes())
            return listing
        except FileNotFoundError:
            raise HistoryError(
                f"a folder listing of this version ({digest[:12]}) is gone; the version cannot be restored"
            ) from None

    def take_new_bytes(self) -> int:
        """The bytes stored since the last call."""
        n, self._new_bytes = self._new_bytes, 0
        return n

    def paths(self) -> Iterator[Path]:
        """Every object kept."""
        for sub in self.root.iterdir():
            if sub.is_dir():
                yield from sub.iterdir()

    def sweep(self, keep: set[str], grace: float) -> int:
        """Delete the objects not in ``keep`` that are older than ``grace`` seconds (a capture
        under way may have just stored them); the bytes of the objects left."""
        total = 0
        young = time.time() - grace
        for path in list(self.paths()):
            st = path.stat()
            if path.parent.name + path.name in keep or st.st_mtime > young:
                total += min(st.st_size, st.st_blocks * 512)  # a sparse object costs its data
            else:
                path.unlink(missing_ok=True)
        return total
