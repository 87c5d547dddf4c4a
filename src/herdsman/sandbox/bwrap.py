"""Bubblewrap: is it usable here, and the argv that jails one command of one thread.

The jail shows the command a read-only system (``/usr``, ``/bin``, ``/lib*``, the parts of
``/etc`` programs need), the thread's three user-data directories writable at their virtual
paths, the skills folder read-only at ``/mnt/skills``, a fresh ``/proc`` and ``/dev``, a tmpfs
``/tmp``, and nothing else: no other thread, no home directory, no host ``/tmp``. All
namespaces are unshared (network too, unless ``sandbox.network`` is true), capabilities are
dropped, the command runs in a new session under its own pid namespace, and the jail dies with
its parent, so killing bwrap kills every process the command started.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from herdsman.sandbox.base import OUTPUTS, SKILLS_ROOT, UPLOADS, WORKSPACE
from herdsman.sandbox.paths import ThreadPaths

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_ENTRIES = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "fonts",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "profile",
    "protocols",
    "services",
    "ssl",
    "timezone",
)
_NETWORK_ETC_ENTRIES = ("resolv.conf", "gai.conf")


@dataclass(frozen=True)
class BwrapStatus:
    """Whether bubblewrap can be used, where it is, and why not when it cannot."""

    available: bool
    path: str | None
    reason: str = ""


def _system_args() -> list[str]:
    """Read-only binds of the system directories (symlinks such as /bin -> usr/bin kept)."""
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    if os.path.isdir("/opt") and _python_lives_in_opt():
        args += ["--ro-bind", "/opt", "/opt"]
    return args


def _python_lives_in_opt() -> bool:
    """True when the only python3 on the system PATH is under /opt (bind /opt then)."""
    if shutil.which("python3", path=SANDBOX_PATH):
        return False
    found = shutil.which("python3")
    return bool(found and os.path.realpath(found).startswith("/opt/"))


def _etc_args(network: bool) -> list[str]:
    entries = _ETC_ENTRIES + (_NETWORK_ETC_ENTRIES if network else ())
    args: list[str] = []
    for name in entries:
        path = f"/etc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def _shell() -> str:
    for candidate in ("/bin/bash", "/usr/bin/bash", "/bin/sh"):
        if os.path.exists(candidate):
            return candidate
    return "bash"


def build_bwrap_argv(
    bwrap: str,
    paths: ThreadPaths,
    command: str,
    *,
    network: bool = False,
    read_only_paths: list[str] | tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> list[str]:
    """The full argv running ``bash -c command`` jailed for the thread of ``paths``.

    ``env`` holds extra variables set inside (on top of PATH, HOME and LANG); the environment
    is otherwise empty. ``read_only_paths`` are host paths bound read-only at the same place.
    """
    argv = [bwrap, "--unshare-all"]
    if network:
        argv.append("--share-net")
    argv += [
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
    ]
    argv += _system_args()
    argv += _etc_args(network)
    for extra in read_only_paths:
        real = os.path.realpath(os.path.expanduser(extra))
        if os.path.exists(real):
            argv += ["--ro-bind", real, real]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    argv += [
        "--bind", str(paths.workspace), WORKSPACE,
        "--bind", str(paths.uploads), UPLOADS,
        "--bind", str(paths.outputs), OUTPUTS,
    ]  # fmt: skip
    if paths.skills is not None:
        argv += ["--ro-bind", str(paths.skills), SKILLS_ROOT]
    argv += ["--remount-ro", "/", "--chdir", WORKSPACE, "--clearenv"]
    variables = {"PATH": SANDBOX_PATH, "HOME": WORKSPACE, "LANG": "C.UTF-8", "TERM": "dumb"}
    variables.update(env or {})
    for key, value in variables.items():
        argv += ["--setenv", key, value]
    argv += ["--", _shell(), "-c", command]
    return argv


def _probe(bwrap: str) -> BwrapStatus:
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += _system_args()
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/"]
    argv += ["--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--", _shell(), "-c", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return BwrapStatus(False, bwrap, f"bubblewrap failed to start: {exc}")
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()[:300]
        return BwrapStatus(
            False,
            bwrap,
            f"bubblewrap is installed but cannot create a sandbox here ({err or done.returncode}); "
            "unprivileged user namespaces may be disabled",
        )
    return BwrapStatus(True, bwrap)


@functools.cache
def bwrap_status() -> BwrapStatus:
    """Find ``bwrap`` on PATH and check once (cached) that it can really build a sandbox."""
    found = shutil.which("bwrap")
    if not found:
        return BwrapStatus(False, None, "bubblewrap is not installed")
    return _probe(found)
