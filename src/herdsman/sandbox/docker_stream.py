"""Read a Docker-API exec stream with a deadline into bounded output.

``exec_run`` in the ``docker`` SDK blocks until the command ends and buffers all of its output.
Here the hijacked exec socket is read with ``select`` so a deadline or a cancel can stop the
wait, and the multiplexed frames (8-byte header: stream, 0, 0, 0, big-endian size) are decoded
incrementally into a :class:`~herdsman.sandbox.process.StreamCapture` (merged, and stdout and
stderr apart), so a command printing gigabytes costs a few kilobytes.

The socket the ``docker`` SDK hands out is the one under the HTTP response it parsed: reading the
response's headers may already have pulled the first frames into ``http.client``'s buffer (a
quick command's whole output arrives with the headers), and a read of the bare socket would
never see them: the command would seem to print nothing. Those buffered bytes are decoded first.
"""

from __future__ import annotations

import select
import struct
import threading
import time
from typing import Any

from herdsman.sandbox.process import STDOUT, StreamCapture

_HEADER = 8
_CHUNK = 64 * 1024


class FrameDecoder:
    """Turns the multiplexed exec stream into payload bytes of stdout and stderr."""

    def __init__(self, capture: StreamCapture) -> None:
        self._capture = capture
        self._buffer = bytearray()
        self._remaining = 0
        self._stream = STDOUT

    def feed(self, data: bytes) -> None:
        """Add raw bytes read from the socket."""
        self._buffer += data
        while self._buffer:
            if self._remaining:
                take = min(self._remaining, len(self._buffer))
                self._capture.feed(bytes(self._buffer[:take]), self._stream)
                del self._buffer[:take]
                self._remaining -= take
                continue
            if len(self._buffer) < _HEADER:
                return
            self._stream, size = struct.unpack(">BxxxL", bytes(self._buffer[:_HEADER]))
            del self._buffer[:_HEADER]
            self._remaining = size


def _already_buffered(stream: Any, sock: Any) -> bytes:
    """What the HTTP response that ``stream`` came from read past its headers (see the module
    docstring); ``b""`` when there is none or the stream is not one of the SDK's."""
    try:
        buffered = stream._response.raw._fp.fp  # the SDK keeps the response on the socket it returns
        peek = buffered.peek
    except AttributeError:
        return b""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # take only what is buffered: an empty buffer must not wait for the command
    try:
        data = peek()
        return buffered.read(len(data)) if data else b""
    except (BlockingIOError, OSError, ValueError):
        return b""
    finally:
        sock.settimeout(timeout)


class StreamReader:
    """Reads one hijacked exec socket; :meth:`read` until the end, :meth:`drain` after a kill."""

    def __init__(self, stream: Any, capture: StreamCapture) -> None:
        self._stream = stream
        self._sock = getattr(stream, "_sock", stream)
        self._decoder = FrameDecoder(capture)
        self.eof = False
        self._decoder.feed(_already_buffered(stream, self._sock))

    def _read_once(self, wait: float) -> bool:
        """Wait up to ``wait`` seconds for data; False when nothing came."""
        ready, _, _ = select.select([self._sock], [], [], wait)
        if not ready:
            return False
        chunk = self._sock.recv(_CHUNK)
        if chunk:
            self._decoder.feed(chunk)
        else:
            self.eof = True
        return True

    def read(self, deadline: float, cancel: threading.Event | None = None) -> str:
        """Read until EOF, ``deadline`` (monotonic) or ``cancel``: ``eof``, ``timeout`` or ``cancelled``."""
        while not self.eof:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if cancel is not None and cancel.is_set():
                return "cancelled"
            self._read_once(min(deadline - now, 0.05))
        return "eof"

    def drain(self, seconds: float) -> bool:
        """Read what is left after the command was killed, for at most ``seconds``; True at EOF."""
        end = time.monotonic() + seconds
        while not self.eof and (left := end - time.monotonic()) > 0:
            if not self._read_once(left):
                return False
        return self.eof

    def close(self) -> None:
        """Close the socket (ends the exec's attachment, not the command)."""
        for closer in (self._stream, self._sock):
            try:
                closer.close()
            except OSError:
                pass
