"""Reach a server listening on a jail's own loopback from the gateway, and nothing more.

A bubblewrap jail has a network namespace of its own (``--unshare-all``; ``netns.py``), whose
``127.0.0.1`` no host process can connect to. To preview a server the agent started there, the
gateway needs sockets that live *in that namespace*: a socket belongs to the namespace it was
created in, whichever process uses it afterwards. So one small helper process per background
job enters the jail's network namespace (``setns``; first its user namespace when the gateway is
not root, as slirp4netns does), and does only this: on each byte the gateway sends over a
private socketpair, it creates an unconnected TCP socket and passes it back (``SCM_RIGHTS``).
The gateway then connects it to ``127.0.0.1:<port>`` there, for a port in
``sandbox.preview.ports`` only, and relays HTTP over it (``preview/ports.py`` of the gateway).

Why this way cannot be used from inside the jail to reach the gateway, another thread or the host:

- nothing listens: the helper opens no listening socket, in the jail's namespace or anywhere,
  and adds no interface, route or address to it, so the jail's network is exactly what it was
  (loopback only, or slirp4netns with the host's loopback disabled);
- connections go one way: the gateway connects *into* the jail; no byte the jail sends can make
  the gateway open a connection anywhere else (the port is the gateway's choice, checked against
  the range, the address always the jail's own loopback);
- the helper is out of the jail's reach: it stays in the host's mount and pid namespaces, which
  the jail cannot see (its ``/proc`` is its own pid namespace), so the jail cannot signal,
  trace or talk to it; its only channel is the socketpair held by the gateway;
- one namespace per helper: a helper serves one job of one thread; another thread's jail is
  another namespace, so its sockets never reach it;
- it dies with the job: killed when the job ends; and when the gateway dies, its end of the
  socketpair closes and the helper's read returns end-of-file, so it leaves on its own (not
  ``PR_SET_PDEATHSIG``, which fires when the *thread* that started it ends, a pool's worker).

Written by hand: no library creates sockets in another process's network namespace; the
approach (setns, then pass descriptors) is what ``ip netns exec`` and container engines use.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

from herdsman.sandbox.base import SandboxError

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_NS_GET_USERNS = 0xB701
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
_LIBC = ctypes.CDLL(None, use_errno=True)

# The helper: new TCP sockets over the control socket (fd argv[1]), one per byte received.
_HELPER = """
import socket, sys
ctl = socket.socket(fileno=int(sys.argv[1]))
while ctl.recv(1):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    socket.send_fds(ctl, [b"s"], [s.fileno()])
    s.close()
"""


class PortUnreachable(SandboxError):
    """No server of the thread can be reached on that port; the message says why."""


def socket_inodes(pids: list[int]) -> set[int]:
    """The inodes of the sockets the processes ``pids`` hold open (those still alive)."""
    inodes: set[int] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    return inodes


def listening_in(table: str, owned_by: set[int] | None = None) -> set[int]:
    """The listening ports in ``table``, text in the format of ``/proc/net/tcp`` and ``tcp6``
    (headers are skipped); with ``owned_by`` (socket inodes, :func:`socket_inodes`) only the
    listeners among them."""
    ports: set[int] = set()
    for line in table.splitlines():
        fields = line.split()
        if len(fields) > 9 and fields[3] == _LISTEN and fields[9].isdigit() and ":" in fields[1]:
            if owned_by is None or int(fields[9]) in owned_by:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listening_ports(pid: int, owned_by: set[int] | None = None) -> list[int]:
    """TCP ports listening in the network namespace of ``pid`` (IPv4 and IPv6), sorted; with
    ``owned_by`` only those whose sockets are among these inodes: a namespace several jobs share
    (a container) tells each job's ports apart so."""
    ports: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}", encoding="ascii") as fh:
                ports |= listening_in(fh.read(), owned_by)
        except OSError:
            continue
    return sorted(ports)


def _setns(fd: int, kind: int) -> None:
    if _LIBC.setns(fd, kind) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def entering_network(net_fd: int, then: Callable[[], None] | None = None) -> Callable[[], None]:
    """A ``preexec_fn`` that runs ``then`` (the limiter's) and moves the child into the network
    namespace ``net_fd`` names, before it runs the jail (bubblewrap then keeps that namespace,
    ``--share-net``). Root only: the namespace belongs to the job's user namespace, whose
    capabilities root holds from the initial one."""

    def enter() -> None:
        if then is not None:
            then()
        _setns(net_fd, CLONE_NEWNET)

    return enter


class NamespaceSockets:
    """Unconnected TCP sockets in the network namespace of the jail process ``pid`` (see the
    module docstring); :meth:`close` kills the helper."""

    def __init__(self, pid: int) -> None:
        net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        if os.fstat(net_fd).st_ino == os.stat("/proc/self/ns/net").st_ino:
            os.close(net_fd)  # its pid was reused by a process of ours, or a container on the host's network
            raise PortUnreachable(
                "the sandbox shares the gateway's network, so its ports are not shown "
                "(a container with network_mode host?); give it a network of its own"
            )
        user_fd = -1
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            if os.geteuid() != 0:  # joining the namespace needs its owner's capabilities
                import fcntl

                user_fd = fcntl.ioctl(net_fd, _NS_GET_USERNS)

            def enter() -> None:  # in the child, single-threaded: setns(CLONE_NEWUSER) is allowed
                if user_fd >= 0:
                    _setns(user_fd, CLONE_NEWUSER)
                _setns(net_fd, CLONE_NEWNET)

            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HELPER, str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                pass_fds=(theirs.fileno(),),
                preexec_fn=enter,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
            os.close(net_fd)
            if user_fd >= 0:
                os.close(user_fd)
        self._control = ours
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        """The helper's pid: a child of this process (never reused before :meth:`close` reaps it),
        in the jail's network namespace, so ``/proc/<pid>/net`` shows that namespace."""
        return self._process.pid

    def socket(self) -> socket.socket:
        """A new TCP socket of the jail's namespace (blocking; unconnected)."""
        with self._lock:
            try:
                self._control.send(b"1")
                _, fds, _, _ = socket.recv_fds(self._control, 1, 1)
            except OSError as exc:
                raise PortUnreachable(f"the sandbox's network cannot be reached ({exc.strerror})") from None
        if not fds:
            raise PortUnreachable("the sandbox's network is gone (its server has stopped)")
        return socket.socket(fileno=fds[0])

    def close(self) -> None:
        """Kill the helper and close the control socket."""
        self._control.close()
        try:
            self._process.kill()
        except ProcessLookupError:
            pass
        self._process.wait()


def jail_pids(candidates: Iterator[int] | list[int]) -> list[int]:
    """The pids among ``candidates`` that live in another network namespace than this process."""
    own = os.stat("/proc/self/ns/net").st_ino
    found = []
    for pid in candidates:
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino != own:
                found.append(pid)
        except OSError:
            continue
    return found
