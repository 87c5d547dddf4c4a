"""Background servers: a command the bash tool starts with ``background=true``, left running in the
sandbox so the user can preview it (``sandbox.preview``).

An ordinary command's processes die with the command (``process.py``, ``container_scripts.py``).
A background job runs the same command (same limits, quota watch, network rules) on a thread of
its own, for at most ``sandbox.preview.server_seconds``; the tool waits until the job listens on a
port of ``sandbox.preview.ports`` (or ends, or a few seconds pass) and says so. Stopping the job
(the thread deleted, its sandbox released, the run cancelled) kills its processes and the way in.

Where the job's network is, and how the gateway reaches it, is the shell's (a :class:`JobNetwork`):

- :class:`NamespaceNetwork`: the job's processes run on this machine, in a bubblewrap jail of
  their own or in the thread's container on a local engine. They are found by the run's marker
  variable (``HERDSMAN_RUN_ID``, set in the job's environment), their listening ports read from
  their network namespace, and connections into it made on sockets of the helper that enters
  it (:class:`~herdsman.sandbox.jail_ports.NamespaceSockets`, whose docstring says why nothing
  there can be turned around). In a container several jobs share one namespace, so a job's
  ports are those whose sockets its own processes hold.
- the kubernetes provider's (``kubernetes_ports.py``): the pod's ports read by exec, connections
  through the API server's port-forward.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from herdsman.logs import get_logger
from herdsman.sandbox.base import ExecResult, SandboxError
from herdsman.sandbox.jail_ports import (
    NamespaceSockets,
    PortUnreachable,
    jail_pids,
    listening_ports,
    socket_inodes,
)
from herdsman.sandbox.process import marked_pids, new_run_id

log = get_logger(__name__)
Runner = Callable[[str, threading.Event], ExecResult]
_POLL_SECONDS = 0.1
CONNECT_SECONDS = 5.0


class JobNetwork(Protocol):
    """How the gateway reaches the network of one background job (see the module docstring)."""

    isolated: bool  # the job has a network of its own: the thread's other commands cannot reach it

    def ports(self) -> list[int]:
        """The TCP ports the job listens on now, sorted."""
        ...

    def connect(self, port: int) -> socket.socket:
        """A blocking socket connected to the job's ``port`` on its own loopback; PortUnreachable
        saying why when that fails."""
        ...

    def close(self) -> None:
        """Give up the way in (the job has ended)."""
        ...


def connect_socket(sock: socket.socket, port: int, what: str) -> socket.socket:
    """``sock`` connected to ``127.0.0.1:port`` (bounded by :data:`CONNECT_SECONDS`), blocking;
    closed, and PortUnreachable saying why, when that fails."""
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(("127.0.0.1", port))
        sock.settimeout(None)
    except OSError as exc:
        sock.close()
        raise PortUnreachable(
            f"nothing accepts connections on port {port} in {what} ({exc.strerror or 'timed out'})"
        ) from None
    return sock


class NamespaceNetwork:
    """A job whose processes run on this machine, reached through their network namespace.

    ``shared``: the namespace holds other jobs too (the thread's container), so only the ports
    whose sockets the job's own processes hold are its."""

    def __init__(self, run_id: str, shared: bool = False) -> None:
        self.run_id = run_id
        self.shared = shared
        self.isolated = not shared
        self._sockets: NamespaceSockets | None = None
        self._closed = False
        self._lock = threading.Lock()

    def _namespace(self) -> NamespaceSockets | None:
        """The helper inside the job's network namespace, started once a process of the job is
        found (its pid, a child of this process, then names the namespace for good: no pid reuse
        can swap it)."""
        with self._lock:
            if self._sockets is None and not self._closed:
                for pid in jail_pids(marked_pids(self.run_id)):
                    try:
                        self._sockets = NamespaceSockets(pid)
                        break
                    except (OSError, subprocess.SubprocessError) as exc:  # that process has just ended
                        log.debug("jail_process_gone", pid=pid, error=str(exc))
            return self._sockets

    @property
    def pid(self) -> int | None:
        """The pid of the socket helper in the job's namespace, while there is one."""
        sockets = self._sockets
        return sockets.pid if sockets is not None else None

    def ports(self) -> list[int]:
        """See :meth:`JobNetwork.ports`."""
        sockets = self._namespace()
        if sockets is None:
            return []
        owned = socket_inodes(marked_pids(self.run_id)) if self.shared else None
        return listening_ports(sockets.pid, owned)

    def connect(self, port: int) -> socket.socket:
        """See :meth:`JobNetwork.connect`."""
        sockets = self._namespace()
        if sockets is None:
            raise PortUnreachable("the background server has ended")
        return connect_socket(sockets.socket(), port, "the sandbox")

    def namespace_fd(self) -> int | None:
        """A new descriptor of the job's network namespace (the caller closes it), or None when
        there is none. Opened under the lock while the socket helper lives: the helper is an
        unreaped child of this process, killed and reaped only by :meth:`close` after it took the
        helper away under the same lock, so its pid cannot name another process's namespace."""
        self._namespace()
        with self._lock:
            if self._sockets is None or self._closed:
                return None
            try:
                return os.open(f"/proc/{self._sockets.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None

    def close(self) -> None:
        """Kill the socket helper."""
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, None
        if sockets is not None:
            sockets.close()


class BackgroundJob:
    """One background command of a thread: its jail, its ports, a way into its loopback."""

    def __init__(
        self, number: int, command: str, run: Runner, network: Callable[[str], JobNetwork] = NamespaceNetwork
    ) -> None:
        self.number = number
        self.command = command
        self.run_id = new_run_id()
        self.cancel = threading.Event()
        self.result: ExecResult | None = None
        self.started_at = time.time()
        self.network = network(self.run_id)
        self._ended = threading.Event()
        self._end_told = threading.Lock()
        self._told = False
        self._thread = threading.Thread(target=self._main, args=(run,), name=f"herdsman-bg-{number}", daemon=True)
        self._thread.start()

    def _main(self, run: Runner) -> None:
        try:
            self.result = run(self.run_id, self.cancel)
        except SandboxError as exc:
            self.result = ExecResult(exit_code=1, output=str(exc))
        finally:
            try:
                self.network.close()  # the helper is gone before anyone is told the job ended
            finally:
                self._ended.set()

    @property
    def running(self) -> bool:
        """Whether the command still runs."""
        return not self._ended.is_set()

    def end_news(self) -> ExecResult | None:
        """The job's result the first time it is asked for once the job has ended, else None: a
        later command's result says once that the job ended (the shell's "[1]+ Done")."""
        with self._end_told:
            if self.running or self._told:
                return None
            self._told = True
        return self.result or ExecResult(exit_code=1, output="")

    @property
    def isolated(self) -> bool:
        """Whether the job has a network of its own (the thread's other commands cannot reach it)."""
        return self.network.isolated

    def network_fd(self) -> int | None:
        """A new descriptor of the job's network namespace (the caller closes it), or None once
        the job has ended or its network is no namespace on this machine (see
        :meth:`NamespaceNetwork.namespace_fd`)."""
        opener = getattr(self.network, "namespace_fd", None)
        return opener() if opener is not None and self.running else None

    @property
    def forwarder_pid(self) -> int | None:
        """The pid of the socket helper in the job's namespace, while there is one (local jobs)."""
        return getattr(self.network, "pid", None)

    def ports(self) -> list[int]:
        """The TCP ports the job listens on (none once it has ended)."""
        return self.network.ports() if self.running else []

    def wait_listening(self, seconds: float) -> list[int]:
        """The ports listening once any is, the job has ended, or ``seconds`` have passed."""
        deadline = time.monotonic() + seconds
        while True:
            ports = self.ports()
            if ports or not self.running or time.monotonic() >= deadline:
                return ports
            self._ended.wait(_POLL_SECONDS)

    def connect(self, port: int) -> socket.socket:
        """A blocking socket connected to ``port`` inside the job's sandbox."""
        if not self.running:
            raise PortUnreachable(f"background job {self.number} has ended")
        return self.network.connect(port)

    def stop(self, wait: float = 10.0) -> None:
        """Kill the job's jail and wait (at most ``wait`` seconds) until it has ended."""
        self.cancel.set()
        self.wait_ended(wait)

    def wait_ended(self, seconds: float) -> bool:
        """Wait (at most ``seconds``) until the job has ended and its helper is gone; whether it has."""
        return self._ended.wait(max(0.0, seconds))

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
