"""Background servers: a command the bash tool starts with ``background=true``, left running in a
jail of its own so the user can preview it (``sandbox.preview``).

An ordinary command's jail dies with the command (``process.py``). A background job runs the
same jailed command (same limits, quota watch, network rules) on a thread of its own, for at
most ``sandbox.preview.server_seconds``; the tool waits until the job listens on a port of
``sandbox.preview.ports`` (or ends, or a few seconds pass) and says so. Its jail is found by the
run's marker variable (``HERDSMAN_RUN_ID``, set inside the jail), its listening ports read from
that namespace (as the socket helper, :class:`~herdsman.sandbox.jail_ports.NamespaceSockets`,
sees it), and connections into it made on the helper's sockets. Stopping the job (the thread deleted,
its sandbox released, the run cancelled) kills the jail and the socket helper with it.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from herdsman.logs import get_logger
from herdsman.sandbox.base import ExecResult, SandboxError
from herdsman.sandbox.jail_ports import NamespaceSockets, PortUnreachable, jail_pids, listening_ports
from herdsman.sandbox.process import marked_pids, new_run_id

log = get_logger(__name__)
Runner = Callable[[str, threading.Event], ExecResult]
_POLL_SECONDS = 0.1


class BackgroundJob:
    """One background command of a thread: its jail, its ports, a way into its loopback."""

    def __init__(self, number: int, command: str, run: Runner) -> None:
        self.number = number
        self.command = command
        self.run_id = new_run_id()
        self.cancel = threading.Event()
        self.result: ExecResult | None = None
        self.started_at = time.time()
        self._ended = threading.Event()
        self._sockets: NamespaceSockets | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, args=(run,), name=f"herdsman-bg-{number}", daemon=True)
        self._thread.start()

    def _main(self, run: Runner) -> None:
        try:
            self.result = run(self.run_id, self.cancel)
        except SandboxError as exc:
            self.result = ExecResult(exit_code=1, output=str(exc))
        finally:
            self._ended.set()
            with self._lock:
                sockets, self._sockets = self._sockets, None
            if sockets is not None:
                sockets.close()

    @property
    def running(self) -> bool:
        """Whether the command still runs."""
        return not self._ended.is_set()

    def _namespace(self) -> NamespaceSockets | None:
        """The helper inside the job's network namespace, started once the jail is found (its pid,
        a child of this process, then names the namespace for good: no pid reuse can swap it)."""
        with self._lock:
            if self._sockets is None and self.running:
                for pid in jail_pids(marked_pids(self.run_id)):
                    try:
                        self._sockets = NamespaceSockets(pid)
                        break
                    except (OSError, subprocess.SubprocessError) as exc:  # that process has just ended
                        log.debug("jail_process_gone", pid=pid, error=str(exc))
            return self._sockets

    @property
    def forwarder_pid(self) -> int | None:
        """The pid of the socket helper in the job's namespace, while there is one."""
        sockets = self._sockets
        return sockets.pid if sockets is not None else None

    def ports(self) -> list[int]:
        """The TCP ports listening in the job's jail (none once it has ended)."""
        sockets = self._namespace()
        return listening_ports(sockets.pid) if sockets is not None and self.running else []

    def wait_listening(self, seconds: float) -> list[int]:
        """The ports listening once any is, the job has ended, or ``seconds`` have passed."""
        deadline = time.monotonic() + seconds
        while True:
            ports = self.ports()
            if ports or not self.running or time.monotonic() >= deadline:
                return ports
            self._ended.wait(_POLL_SECONDS)

    def socket(self) -> socket.socket:
        """A new unconnected TCP socket inside the job's jail (blocking)."""
        sockets = self._namespace()
        if sockets is None:
            raise PortUnreachable(f"background job {self.number} has ended")
        return sockets.socket()

    def stop(self, wait: float = 10.0) -> None:
        """Kill the job's jail and wait (at most ``wait`` seconds) until it has ended."""
        self.cancel.set()
        self._ended.wait(wait)

    def describe(self) -> dict[str, Any]:
        """What the Preview tab shows of the job."""
        return {
            "job": self.number,
            "command": self.command,
            "running": self.running,
            "ports": self.ports(),
            "exit_code": None if self.result is None else self.result.exit_code,
            "started_at": self.started_at,
        }
