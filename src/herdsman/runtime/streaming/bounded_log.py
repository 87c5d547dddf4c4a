"""A replay log in memory, bounded by the number of its entries and by their bytes.

Run streams and thread event logs keep recent events so a client that reconnects can catch up.
A count alone does not bound memory: one ``values`` event carries a thread's whole state, so ten
thousand of them of a long thread are gigabytes. Here the oldest entries go first once either
bound is passed (the newest always stays, whatever its size). ``collections.deque(maxlen=...)``
bounds only the count, hence this small wrapper.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

#: the default byte budget of one log
DEFAULT_MAX_BYTES = 32 * 1024 * 1024


class BoundedLog(Generic[T]):
    """Entries oldest first, at most ``max_items`` of them and about ``max_bytes`` in all."""

    def __init__(self, max_items: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """Bounds: how many entries, and how many bytes their sizes (as given to append) add up to."""
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: deque[tuple[T, int]] = deque()

    def append(self, item: T, size: int) -> int:
        """Add ``item`` of ``size`` bytes; drop the oldest past a bound; how many were dropped."""
        self._entries.append((item, size))
        self.bytes += size
        dropped = 0
        while len(self._entries) > 1 and (len(self._entries) > self.max_items or self.bytes > self.max_bytes):
            _, old_size = self._entries.popleft()
            self.bytes -= old_size
            dropped += 1
        return dropped

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> T:
        return self._entries[index][0]

    def __iter__(self) -> Iterator[T]:
        return (item for item, _ in self._entries)
