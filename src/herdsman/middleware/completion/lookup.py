"""The thread's files as the completion check's rules read them, through the sandbox: a file by
its virtual path or by the tail of a name a request gives (``data.csv``, ``src/app.py``), its size,
text and a fingerprint of its content, and whether read before write would refuse an edit of it.
One bounded walk of the sandbox per check, kept on the :class:`FileLookup`."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

from herdsman.middleware.read_before_write import edit_refused
from herdsman.sandbox.base import HostBackedSandbox
from herdsman.sandbox.paths import normalize_virtual
from herdsman.turns.turn import holds_nothing

MAX_HASHED_BYTES = 1_000_000


class FileLookup:
    """Where a thread's files are: exact virtual paths, or any file with a given relative tail."""

    def __init__(self, sandbox: HostBackedSandbox) -> None:
        self.sandbox = sandbox
        self._entries: dict[str, tuple[int, int]] | None = None

    def entries(self) -> dict[str, tuple[int, int]]:
        """Virtual path -> (size, mtime) of the files under /mnt/user-data (bounded walk)."""
        if self._entries is None:
            self._entries = dict(self.sandbox.snapshot().entries)
        return self._entries

    def _stat(self, name: str) -> os.stat_result | None:
        """The stat of the full virtual path ``name`` (links followed in virtual space), or None."""
        try:
            return self.sandbox.files.stat(normalize_virtual(name))
        except Exception:  # noqa: BLE001 - a bad path is a missing file here
            return None

    def size_of(self, name: str) -> int | None:
        """The size of the file ``name`` names (largest match for a bare or relative name), or
        None: a folder of that name is not the file."""
        if name.startswith("/"):
            st = self._stat(name)
            return st.st_size if st is not None and stat.S_ISREG(st.st_mode) else None
        tail = "/" + name.lstrip("./")
        sizes = [size for path, (size, _) in self.entries().items() if path.endswith(tail)]
        return max(sizes) if sizes else None

    def is_folder(self, name: str) -> bool:
        """Whether the full virtual path ``name`` is a folder."""
        st = self._stat(name) if name.startswith("/") else None
        return st is not None and stat.S_ISDIR(st.st_mode)

    def find(self, name: str) -> str | None:
        """The virtual path of the first file ``name`` names (a full path, or a relative tail)."""
        path = normalize_virtual(name) if name.startswith("/") else None
        tail = "/" + name.lstrip("./")
        return next((v for v in self.entries() if v == path or (path is None and v.endswith(tail))), None)

    def unseen(self, files_read: Any) -> Callable[[str], bool]:
        """For :func:`read_first`: whether read before write would refuse an edit of the file a
        name names, given the run's ``files_read`` state (a missing file: no)."""

        def refused(name: str) -> bool:
            vpath = self.find(name)
            return vpath is not None and edit_refused(files_read, self.sandbox, vpath)

        return refused

    def text_of(self, name: str) -> str | None:
        """The text of the (small) file ``name`` names, or None when missing or unreadable."""
        vpath = self.find(name)
        if vpath is None or self.entries()[vpath][0] > MAX_HASHED_BYTES:
            return None
        try:
            return self.sandbox.read_text(vpath)
        except Exception:  # noqa: BLE001 - unreadable (binary): no text
            return None

    def holds_nothing(self, name: str) -> bool:
        """Whether a (small) file holds only an empty value: whitespace, [], {}, "" or null (a
        model asked for a JSON list writes [] and calls it done)."""
        vpath = self.find(name)
        try:
            return vpath is not None and holds_nothing(self.sandbox.read_text(vpath))
        except Exception:  # noqa: BLE001 - unreadable: not known to be empty
            return False

    def fingerprint_of(self, name: str) -> str | None:
        """What the file ``name`` names (first match) holds: a hash of its content when it is
        small, else its size and mtime; None when there is no such file. By content, so that
        writing a file back unchanged does not count as changing it (a model "fixes" a file by
        writing back what it read, perhaps without its final newline)."""
        vpath = self.find(name)
        if vpath is None:
            return None
        size, mtime = self.entries()[vpath]
        if size <= MAX_HASHED_BYTES:
            try:
                text = self.sandbox.read_text(vpath).rstrip()  # a final newline dropped is no change
                return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            except Exception:  # noqa: BLE001 - unreadable (binary): size and mtime
                pass
        return f"{size}:{mtime}"
