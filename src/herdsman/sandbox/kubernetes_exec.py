"""Run one command in a pod through the Kubernetes exec websocket, with a deadline.

The official client's ``kubernetes.stream.stream`` opens the exec websocket and hands back a
``WSClient``; this module reads it the way :mod:`~herdsman.sandbox.docker_stream` reads a Docker
exec socket: in small steps (``update(timeout=...)``), stdout and stderr (merged and apart) into a
:class:`~herdsman.sandbox.process.StreamCapture`, stopping at the deadline or on cancel. The
exit status comes from the error channel (a ``Status`` object: ``Success``, or ``Failure`` with
an ``ExitCode`` cause).

:class:`ExecOpener` is the seam: the default opens a real websocket; tests pass an object with
the same small interface (``is_open``, ``update``, ``read_stdout``, ``read_stderr``,
``read_channel``, ``close``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Protocol

from herdsman.sandbox.process import STDERR, STDOUT, StreamCapture

ERROR_CHANNEL = 3
_STEP_SECONDS = 0.05


class ExecStream(Protocol):
    """The part of ``kubernetes.stream.ws_client.WSClient`` used here."""

    def is_open(self) -> bool:
        """Whether the command still runs."""
        ...

    def update(self, timeout: float = 0) -> None:
        """Read what arrived, waiting up to ``timeout`` seconds."""
        ...

    def read_stdout(self, timeout: float | None = None) -> Any:
        """Output received on stdout."""
        ...

    def read_stderr(self, timeout: float | None = None) -> Any:
        """Output received on stderr."""
        ...

    def read_channel(self, channel: int, timeout: float = 0) -> Any:
        """Data received on ``channel`` (3: the exit status)."""
        ...

    def close(self, **kwargs: Any) -> None:
        """Close the stream."""
        ...


class ExecOpener(Protocol):
    """Opens an exec stream running ``argv`` in container ``sandbox`` of ``pod``; ``stdin``,
    when given, is written to the command's standard input once the stream is open."""

    def __call__(self, pod: str, namespace: str, argv: list[str], stdin: bytes | None = None) -> ExecStream:
        """The exec stream of ``argv`` in ``pod`` (``stdin`` written once it is open)."""


class WebsocketExecOpener:
    """The real opener: ``kubernetes.stream.stream(connect_get_namespaced_pod_exec, ...)``."""

    def __init__(self, core_api: Any, container: str = "sandbox") -> None:
        self._core = core_api
        self._container = container

    def __call__(self, pod: str, namespace: str, argv: list[str], stdin: bytes | None = None) -> ExecStream:
        """Open the websocket (binary, no tty; stdin only to send ``stdin``, in the stream's
        frames, never in the request's URL)."""
        from kubernetes.stream import stream

        ws = stream(
            self._core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=self._container,
            command=argv,
            stdin=stdin is not None,
            stdout=True,
            stderr=True,
            tty=False,
            binary=True,
            _preload_content=False,
        )
        if stdin is not None:
            try:
                ws.write_stdin(stdin)
            except Exception:
                ws.close()
                raise
        opened: ExecStream = ws
        return opened


def _as_bytes(data: Any) -> bytes:
    if not data:
        return b""
    return data if isinstance(data, bytes) else str(data).encode()


def exit_code_of(status: Any) -> int | None:
    """The exit code in an error-channel ``Status`` (JSON text or bytes); None when unknown."""
    raw = _as_bytes(status).strip()
    if not raw:
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    if parsed.get("status") == "Success":
        return 0
    for cause in (parsed.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message"))
            except (TypeError, ValueError):
                return None
    return None


def read_exec(
    ws: ExecStream,
    capture: StreamCapture,
    deadline: float,
    cancel: threading.Event | None = None,
) -> tuple[str, int | None]:
    """Read ``ws`` until it closes, ``deadline`` or ``cancel``: (``eof``/``timeout``/``cancelled``, exit code)."""
    status = b""
    reason = "eof"
    while ws.is_open():
        now = time.monotonic()
        if now >= deadline:
            reason = "timeout"
            break
        if cancel is not None and cancel.is_set():
            reason = "cancelled"
            break
        ws.update(timeout=min(_STEP_SECONDS, deadline - now))
        capture.feed(_as_bytes(ws.read_stdout(timeout=0)), STDOUT)
        capture.feed(_as_bytes(ws.read_stderr(timeout=0)), STDERR)
        status += _as_bytes(ws.read_channel(ERROR_CHANNEL))
    capture.feed(_as_bytes(ws.read_stdout(timeout=0)), STDOUT)
    capture.feed(_as_bytes(ws.read_stderr(timeout=0)), STDERR)
    status += _as_bytes(ws.read_channel(ERROR_CHANNEL))
    return reason, exit_code_of(status) if reason == "eof" else None
