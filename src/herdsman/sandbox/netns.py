"""The network of a networked jail: its own network namespace, NATed outward by slirp4netns.

With ``sandbox.network: true`` the bubblewrap jail used to share the host's network namespace
(``--share-net``), so a command reached everything on the host's loopback: the gateway, a
password-less Redis, another thread's listener. Now the jail keeps the fresh network namespace
``--unshare-all`` gives it, and one slirp4netns process per command connects that namespace to
the outside through user-mode NAT:

- bubblewrap reports the sandbox's pid on ``--info-fd`` and holds the command on ``--block-fd``;
- once bubblewrap has brought the namespace's loopback up (its ``127.0.0.1`` shows in
  ``/proc/<pid>/net/fib_trie``: slirp4netns sets ``lo`` up too, and bubblewrap 0.8 dies with
  "loopback: Failed RTM_NEWADDR" when it finds it already up),
  slirp4netns joins the namespace (through the user namespace that owns it), creates ``tap0``
  (10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3), says so on ``--ready-fd``, and only then is
  the command released;
- ``--disable-host-loopback`` refuses connections to the gateway address (10.0.2.2 is otherwise
  the host's 127.0.0.1), and the jail's own ``127.0.0.1``/``::1`` are its own loopback; IPv6
  stays off, so ``::1`` cannot be reached from outside either;
- ``/etc/resolv.conf`` inside names 10.0.2.3, which slirp4netns forwards to the host's resolver;
- when the command ends (or times out, or is cancelled) slirp4netns is killed and reaped; its
  ``--exit-fd`` is a pipe held by this process, so it also ends if the gateway dies.

Why slirp4netns and not pasta (Debian ``passt``, 0.0~git20230309 in bookworm): slirp4netns
has a readiness descriptor (``--ready-fd``) and an exit descriptor that fit bubblewrap's
``--block-fd``, and a single switch that closes the host's loopback. That pasta forwards ports
both ways by default (``-t auto -T auto`` maps the namespace's loopback to the host's), copies
the host's addresses into the namespace, has no readiness descriptor, and when run as root drops
to ``nobody`` before it joins the namespaces, so it could not enter the jail's user namespace.

Like a Docker bridge, the NAT still reaches the host's *non-loopback* addresses: services the
host binds on all interfaces are reachable from a networked jail (see docs/security.md).
Written by hand because no maintained library wires a user-mode network stack into a
bubblewrap jail; the protocol is the one rootless container engines use with slirp4netns.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

from herdsman.logs import get_logger
from herdsman.sandbox.base import SandboxError

log = get_logger(__name__)

PACKAGE = "slirp4netns"
TAP_NAME = "tap0"
JAIL_ADDRESS = "10.0.2.100"
GATEWAY_ADDRESS = "10.0.2.2"
DNS_ADDRESS = "10.0.2.3"
RESOLV_CONF = f"nameserver {DNS_ADDRESS}\noptions timeout:2 attempts:2\n"
SETUP_SECONDS = 10.0
_NS_GET_USERNS = 0xB701  # ioctl_ns(2): _IO(0xb7, 0x1), the user namespace owning a namespace
_TUN = "/dev/net/tun"
_POLL_MS = 50


class NetworkSetupError(SandboxError):
    """The jail's network could not be set up; the command did not run."""


@dataclass(frozen=True)
class StackStatus:
    """Whether a networked jail can get its own network here; why not when it cannot."""

    available: bool
    path: str | None
    reason: str = ""


@functools.cache
def stack_status() -> StackStatus:
    """Find slirp4netns and check (once, cached) that this user may open ``/dev/net/tun``."""
    found = shutil.which(PACKAGE)
    if not found:
        return StackStatus(False, None, f"{PACKAGE} is not installed (apt-get install {PACKAGE})")
    try:
        os.close(os.open(_TUN, os.O_RDWR | os.O_CLOEXEC))
    except OSError as exc:
        return StackStatus(
            False,
            found,
            f"{PACKAGE} cannot open {_TUN} as uid {os.geteuid()} ({exc.strerror}); load the tun module "
            "and make the device read-write for everyone (chmod 0666, as udev does on Debian)",
        )
    return StackStatus(True, found)


def refusal(status: StackStatus) -> str:
    """The message of a local provider that refuses ``sandbox.network: true`` for ``status``."""
    return (
        f"sandbox.network is true but a networked jail cannot get its own network here: {status.reason}. "
        "Commands never share the host's network (its loopback holds the gateway and other users' "
        "services). Fix that, set sandbox.network: false, or use sandbox.provider: docker (its "
        "containers get a network namespace of their own)."
    )


def _slirp_argv(slirp: str, ready_fd: int, exit_fd: int, net_fd: int, user_fd: int) -> list[str]:
    argv = [slirp, "--configure", "--mtu=65520", "--disable-host-loopback"]
    argv += [f"--ready-fd={ready_fd}", f"--exit-fd={exit_fd}", "--enable-seccomp"]
    if os.geteuid() == 0:  # its mount-namespace sandbox needs root (it drops every capability)
        argv.append("--enable-sandbox")
    argv += ["--netns-type=path", f"--userns-path=/proc/self/fd/{user_fd}", f"/proc/self/fd/{net_fd}", TAP_NAME]
    return argv


def _data_fd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _wait_readable(fd: int, deadline: float, stop: threading.Event) -> bool:
    """Whether ``fd`` becomes readable (data or EOF) before ``deadline`` or ``stop``."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while not stop.is_set() and time.monotonic() < deadline:
        if poller.poll(_POLL_MS):
            return True
    return False


def _why_not_ready(process: subprocess.Popen[bytes], errors: IO[bytes], ended: bool) -> str:
    """Why slirp4netns did not get ready: its exit code, or the deadline, and its last words."""
    code = None
    if ended:
        try:
            code = process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
    errors.seek(0)
    said = [ln for ln in errors.read().decode(errors="replace").splitlines() if "WARNING" not in ln]
    why = f"exited with code {code}" if code is not None else "was not ready in time"
    return f"{PACKAGE} {why}" + (f": {'; '.join(said[-3:])}" if said else "")


class _SandboxGone(Exception):
    """The sandbox exited before its network was set up (nothing will run in it)."""


def _wait_for_loopback(pid: int, pidfd: int, deadline: float, stop: threading.Event) -> str | None:
    """Wait until bubblewrap has set up the loopback of the sandbox ``pid``; None when it has,
    else why not (the two would race to bring ``lo`` up)."""
    pause = 0.0005
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/net/fib_trie", "rb") as fh:
                if b"127.0.0.1" in fh.read():
                    return None
        except OSError as exc:
            if select.select([pidfd], [], [], 0)[0]:
                raise _SandboxGone from exc
            return f"cannot read the sandbox's routes ({exc.strerror})"
        if select.select([pidfd], [], [], 0)[0]:
            raise _SandboxGone  # bubblewrap failed on its own; its message tells why
        if time.monotonic() > deadline:
            return "bubblewrap did not set up the sandbox's loopback in time"
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    return None


class JailNetwork:
    """The network of one command's jail: bubblewrap's options, and slirp4netns while it runs.

    Use as a context manager around the command: add :attr:`bwrap_args` to bubblewrap's options
    and :attr:`pass_fds` to its descriptors, call :meth:`start` once bubblewrap is about to
    start, and :meth:`raise_if_failed` after it ended. Leaving the context kills slirp4netns.
    """

    def __init__(self, slirp: str, setup_seconds: float = SETUP_SECONDS) -> None:
        self._slirp = slirp
        self._setup_seconds = setup_seconds
        self._info_r, self._info_w = os.pipe()
        self._block_r, self._block_w = os.pipe()
        self._exit_r, self._exit_w = os.pipe()
        self._resolv = _data_fd("herdsman-resolv-conf", RESOLV_CONF.encode())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._prefix: list[str] = []
        self._preexec_fn: Callable[[], None] | None = None
        self.error: str | None = None

    @property
    def bwrap_args(self) -> list[str]:
        """bubblewrap's options: report the sandbox pid, wait for the network, our resolv.conf."""
        return [
            "--info-fd", str(self._info_w),
            "--block-fd", str(self._block_r),
            "--ro-bind-data", str(self._resolv), "/etc/resolv.conf",
        ]  # fmt: skip

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors bubblewrap must inherit for :attr:`bwrap_args`."""
        return (self._info_w, self._block_r, self._resolv)

    def start(self, prefix: Sequence[str] = (), preexec_fn: Callable[[], None] | None = None) -> None:
        """Wait in the background for the sandbox to appear and connect its namespace.

        ``prefix`` and ``preexec_fn`` are the command's own (``limits.Launch``): slirp4netns joins
        the command's cgroup, so the memory it and its host sockets hold for the jail (every
        connection the jail opens is one of its sockets) counts in the command's limits."""
        self._prefix, self._preexec_fn = list(prefix), preexec_fn
        self._thread = threading.Thread(target=self._attach, name="herdsman-netns", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop waiting for the sandbox (the command has ended); slirp4netns still runs."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def raise_if_failed(self) -> None:
        """After the command: raise :class:`NetworkSetupError` when its network was not set up."""
        self.stop()
        if self.error:
            raise NetworkSetupError(
                f"The sandbox's network could not be set up ({self.error}); the command did not run. "
                "Try again; if it keeps failing, check the gateway's log, or set sandbox.network: false."
            )

    def __enter__(self) -> JailNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop waiting, kill and reap slirp4netns, close every descriptor."""
        self.stop()
        os.close(self._exit_w)  # slirp4netns leaves on its own when this closes
        process, self._process = self._process, None  # the attach thread has ended
        if process is not None:
            try:
                process.kill()
            except ProcessLookupError:
                pass
            process.wait()
        for fd in (self._info_r, self._info_w, self._block_r, self._block_w, self._exit_r, self._resolv):
            os.close(fd)

    # -- the background attach --------------------------------------------------------------

    def _attach(self) -> None:
        """Find the sandbox, connect its namespace, release the command; on failure record why
        and kill the sandbox before the command starts."""
        deadline = time.monotonic() + self._setup_seconds
        pid = self._child_pid(deadline)
        if pid is None:
            if not self._stop.is_set():
                self.error = "bubblewrap did not report its sandbox"
            return
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return  # the sandbox is already gone: nothing will run
        try:
            error = _wait_for_loopback(pid, pidfd, deadline, self._stop) or self._connect(pid, deadline)
        except _SandboxGone:
            error = None
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc.strerror}"
        try:
            if error is None or self._stop.is_set():  # stopped: the command is over already
                os.write(self._block_w, b"1")
                return
            self.error = error
            log.warning("sandbox_network_setup_failed", reason=error)
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass  # the sandbox is gone already
        finally:
            os.close(pidfd)

    def _child_pid(self, deadline: float) -> int | None:
        """The sandbox's pid from bubblewrap's ``--info-fd`` JSON (``child-pid``)."""
        data = b""
        while _wait_readable(self._info_r, deadline, self._stop):
            chunk = os.read(self._info_r, 4096)
            if not chunk:
                return None
            data += chunk
            try:
                return int(json.loads(data)["child-pid"])
            except ValueError:
                continue  # not all of it yet
            except (KeyError, TypeError):
                return None
        return None

    def _connect(self, pid: int, deadline: float) -> str | None:
        """Start slirp4netns on the sandbox's namespace and wait until it is configured;
        None when ready, else why not."""
        net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        ready_r, ready_w = os.pipe()
        try:
            user_fd = fcntl.ioctl(net_fd, _NS_GET_USERNS)
            try:
                argv = _slirp_argv(self._slirp, ready_w, self._exit_r, net_fd, user_fd)
                if self._stop.is_set():
                    return None  # the command is over already
                with tempfile.TemporaryFile() as errors:
                    process = self._process = subprocess.Popen(
                        [*self._prefix, *argv],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=errors,
                        env={"LANG": "C.UTF-8"},
                        pass_fds=(ready_w, self._exit_r, net_fd, user_fd),
                        start_new_session=True,
                        preexec_fn=self._preexec_fn,
                    )
                    os.close(ready_w)
                    ready_w = -1
                    said = b""
                    if _wait_readable(ready_r, deadline, self._stop):
                        said = os.read(ready_r, 1)
                    if said == b"1" or self._stop.is_set():
                        return None
                    return _why_not_ready(process, errors, ended=not said)
            finally:
                os.close(user_fd)
        finally:
            os.close(net_fd)
            os.close(ready_r)
            if ready_w >= 0:
                os.close(ready_w)
