"""Reach a background server in a thread's pod: its ports read by exec, connections through the
API server's port-forward.

A pod's network is on a node the gateway may not be on, so nothing of ``jail_ports.py`` applies.
Instead:

- **which ports a job listens on**: one exec in the pod (:data:`PORTS_SCRIPT`) prints the socket
  inodes the job's processes hold (found by the run's marker variable, as the sweeps find them)
  and the pod's ``/proc/net/tcp`` and ``tcp6``; the listeners among those inodes are the job's
  (all of a pod's jobs share its network). The answer is kept :data:`PORTS_SECONDS`, so a page
  loading its assets does not run one exec per request;
- **a connection**: ``kubernetes.stream.portforward`` asks the API server to forward one
  connection to the pod's port (``pods/portforward``, the RBAC verb ``create``, as ``kubectl
  port-forward`` does); the client hands back one end of a socketpair it relays over the
  websocket.

Why another thread or user cannot reach it: nothing is exposed. No Service, no ``hostPort`` and
no NetworkPolicy change: the sandboxes' policy still denies all ingress (the kubelet connects to
the pod's port from inside the pod's network namespace, which that policy does not filter); the
only way in is an API request carrying the gateway's service-account credentials, made by the
gateway for the thread's owner, to that thread's pod, on a port of ``sandbox.preview.ports``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from herdsman.sandbox.container_scripts import MARKER
from herdsman.sandbox.jail_ports import PortUnreachable, listening_in

PORTS_SECONDS = 2.0
_SEPARATOR = "--herdsman-net--"
PORTS_SCRIPT = (  # $1: the run id; POSIX sh (busybox, dash), readlink from busybox or coreutils
    f'for f in $(grep -lzx "{MARKER}=$1" /proc/[0-9]*/environ 2>/dev/null); do '
    'for l in "${f%/environ}"/fd/*; do readlink "$l" 2>/dev/null; done; done; '
    f"echo {_SEPARATOR}; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true"
)


def ports_argv(run_id: str) -> list[str]:
    """The exec argv printing what :func:`parse_ports` reads for the job ``run_id``."""
    return ["/bin/sh", "-c", PORTS_SCRIPT, "herdsman", run_id]


def parse_ports(output: str) -> list[int]:
    """The job's listening ports from the output of :data:`PORTS_SCRIPT`, sorted."""
    links, _, table = output.partition(_SEPARATOR)
    inodes = {int(line[8:-1]) for line in links.split() if line.startswith("socket:[") and line[8:-1].isdigit()}
    return sorted(listening_in(table, inodes))


class PortForwarder(Protocol):
    """Opens one connection to ``port`` of ``pod`` (a connected, blocking socket)."""

    def __call__(self, pod: str, namespace: str, port: int) -> socket.socket:
        """A connected socket to ``port`` of ``pod``."""


class WebsocketPortForwarder:
    """The real forwarder: ``kubernetes.stream.portforward(connect_get_namespaced_pod_portforward, ...)``."""

    def __init__(self, core_api: Any) -> None:
        self._core = core_api

    def __call__(self, pod: str, namespace: str, port: int) -> socket.socket:
        """One forwarded connection: the client's end of its socketpair (unwrapped from the
        client's ``_Socket``, so asyncio can use it; closing it ends the forward)."""
        from kubernetes.stream import portforward

        forward = portforward(self._core.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port))
        end = forward.socket(port)
        plain: socket.socket = getattr(end, "_socket", end)
        return plain


class PodNetwork:
    """The network of one background job in the thread's pod (see the module docstring)."""

    isolated = False  # the pod's other commands reach it on 127.0.0.1

    def __init__(
        self, run_id: str, exec_text: Callable[[list[str]], str], forward: Callable[[int], socket.socket]
    ) -> None:
        self.run_id = run_id
        self._exec_text = exec_text
        self._forward = forward
        self._seen: tuple[float, list[int]] | None = None
        self._lock = threading.Lock()

    def ports(self) -> list[int]:
        """See :meth:`~herdsman.sandbox.background.JobNetwork.ports` (kept :data:`PORTS_SECONDS`)."""
        with self._lock:
            if self._seen is not None and time.monotonic() - self._seen[0] < PORTS_SECONDS and self._seen[1]:
                return self._seen[1]
            ports = parse_ports(self._exec_text(ports_argv(self.run_id)))
            self._seen = (time.monotonic(), ports)
            return ports

    def connect(self, port: int) -> socket.socket:
        """See :meth:`~herdsman.sandbox.background.JobNetwork.connect`."""
        try:
            return self._forward(port)
        except PortUnreachable:
            raise
        except Exception as exc:  # noqa: BLE001 - the client wraps every failure in ApiException
            raise PortUnreachable(
                f"the API server did not forward port {port} to the sandbox pod ({type(exc).__name__}); "
                "check that the gateway may create pods/portforward (deploy/kubernetes/rbac.yaml)"
            ) from None

    def close(self) -> None:
        """Nothing to give up: each connection is its own forward."""
        self._seen = None
