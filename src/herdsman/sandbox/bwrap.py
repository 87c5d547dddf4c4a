"""Bubblewrap: is it usable here, and the argv that jails one command of one thread.

The jail shows the command a read-only system (``/usr``, ``/bin``, ``/lib*``, the parts of
``/etc`` programs need), the thread's three user-data directories writable at their virtual
paths, the shared skills and the thread's user's own read-only under ``/mnt/skills``
(``skill_view.py``), a fresh ``/proc`` and read-only ``/dev``, sized tmpfs ``/tmp``, ``/var/tmp``
and ``/dev/shm`` (``sandbox.limits.tmp_mb``), and nothing else: no other thread, no home
directory, no host ``/tmp``, no ``/sys``.
All namespaces are unshared, network included: with ``sandbox.network`` the jail's own network
namespace is connected outward by ``netns.py`` (never the host's, whose loopback holds the
gateway and other users' services), capabilities are
dropped, the command runs in a new session under its own pid namespace, and the jail dies with
its parent, so killing bwrap kills every process the command started.

Never uid 0 inside, whatever uid Herdsman runs as: the command runs as uid/gid 1000 in a user
namespace that maps it to the host user (so files it writes in user-data stay the host user's),
with ``no_new_privs``, no nested user namespaces (``--disable-userns``) and the seccomp filter of
``seccomp.py``. When the host user is root, the kernel still sees root as the *owner* of
root-owned files, so every kernel interface a container runtime masks or makes read-only (the
OCI default lists) is masked or bound read-only here: ``/proc/sys`` (``core_pattern`` ran a
script as root on the host), ``/proc/sysrq-trigger``, ``/proc/kcore``, ``/proc/keys``,
``/proc/timer_list`` and the rest of :data:`MASKED_PROC`/:data:`READ_ONLY_PROC`, and so is every
file of ``/proc`` only root may read (:data:`ROOT_ONLY_PROC`: ``kpageflags``, ``slabinfo``...).
For the same reason nothing the jail writes may carry privilege on the host: the seccomp filter
refuses setuid and setgid bits (see ``seccomp.py`` for why a filter), and the thread's folders
are 0700 (``paths.py``). When the only ``python3`` lives under ``/opt``, only its prefix is bound.

bubblewrap is started with an empty environment and reads its arguments from a descriptor
(``--args``), so ``/proc/1/environ`` and ``/proc/1/cmdline`` inside show nothing of the host. The
host paths of the thread's folders still show in ``/proc/self/mountinfo`` (the kernel names the
source of each bind mount there; see docs/security.md).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from herdsman.sandbox import seccomp, skill_view
from herdsman.sandbox.base import OUTPUTS, SKILLS_ROOT, UPLOADS, WORKSPACE
from herdsman.sandbox.paths import ThreadPaths

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
SANDBOX_UID = 1000
ALIAS_DIR = "/run/herdsman/bin"  # on the jail's own tmpfs root; holds ``python`` -> python3
SANDBOX_GID = 1000
SCRATCH_DIRS = {"MPLCONFIGDIR": "/tmp/matplotlib", "XDG_CACHE_HOME": "/tmp/.cache", "XDG_CONFIG_HOME": "/tmp/.config"}
"""Where programs keep their caches and settings in the jail: the scratch tmpfs, not the workspace (HOME)."""
# The OCI runtime spec's default masked and read-only /proc paths (runc, Docker, podman).
MASKED_PROC = (
    "kcore",
    "keys",
    "latency_stats",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "kmsg",
    "acpi",
    "asound",
    "scsi",
    "sysrq-trigger",
    "kallsyms",
    "config.gz",
    "vmallocinfo",
    "mtrr",
)
# Files of /proc only root may read (mode 0400): the jail of a root gateway is their owner on the
# host, so it could read them (the kernel's page flags and counts, slab and zone statistics).
# Masked too, with any other top-level /proc file this kernel makes root-only (root_only_proc).
ROOT_ONLY_PROC = ("kpageflags", "kpagecount", "kpagecgroup", "slabinfo", "pagetypeinfo")
READ_ONLY_PROC = ("sys", "bus", "fs", "irq", "driver")
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
    "matplotlibrc",  # Debian's python3-matplotlib reads its defaults here: without it every chart failed
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "profile",
    "protocols",
    "services",
    "ssl",
    "timezone",
)
_NETWORK_ETC_ENTRIES = ("gai.conf",)  # resolv.conf comes from netns.py (the stack's DNS)


@dataclass(frozen=True)
class BwrapStatus:
    """Whether bubblewrap can be used, where it is, and why not when it cannot;
    ``disable_userns``: this bubblewrap has ``--disable-userns`` (0.8 and later)."""

    available: bool
    path: str | None
    reason: str = ""
    disable_userns: bool = False


def _proc_args() -> list[str]:
    """A fresh /proc with the OCI default masks and the root-only files masked: files hidden
    behind /dev/null, folders behind an empty read-only tmpfs, the read-only list bound read-only."""
    args = ["--proc", "/proc"]
    for name in READ_ONLY_PROC:
        if os.path.isdir(f"/proc/{name}"):
            args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in dict.fromkeys(MASKED_PROC + ROOT_ONLY_PROC + root_only_proc()):
        path = f"/proc/{name}"
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


@functools.cache
def root_only_proc() -> tuple[str, ...]:
    """Top-level files of this kernel's /proc that others may not read (0400 and the like)."""
    names = []
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit() or entry.name in ("self", "thread-self"):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IROTH:
                names.append(entry.name)
    return tuple(sorted(names))


def _identity_args(disable_userns: bool) -> list[str]:
    """A user namespace in which the command is uid/gid 1000, never 0."""
    args = ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
    if disable_userns:
        args.append("--disable-userns")
    return args


def _system_args() -> list[str]:
    """Read-only binds of the system directories (symlinks such as /bin -> usr/bin kept)."""
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    prefix = _python_prefix_in_opt()
    if prefix:
        args += ["--ro-bind", prefix, prefix]
    return args


def _python_prefix_in_opt() -> str | None:
    """When the only python3 is under /opt (none on the system PATH), its prefix
    (``/opt/python3.12`` for ``/opt/python3.12/bin/python3``): that folder is bound, never all of
    /opt, where other software and its secrets may live."""
    if shutil.which("python3", path=SANDBOX_PATH):
        return None
    found = shutil.which("python3")
    real = os.path.realpath(found) if found else ""
    if not real.startswith("/opt/"):
        return None
    prefix = os.path.dirname(os.path.dirname(real))  # <prefix>/bin/python3.X
    return prefix if prefix.startswith("/opt/") and os.path.isdir(prefix) else None


@functools.cache
def _python_alias() -> str | None:
    """The python3 that ``python`` should name in the jail, when the system has no ``python``
    (Debian ships only ``python3``; a model's ``python -m ...`` then failed with exit 127)."""
    if shutil.which("python", path=SANDBOX_PATH):
        return None
    found = shutil.which("python3", path=SANDBOX_PATH)
    return found


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
    network_args: list[str] | tuple[str, ...] = (),
    read_only_paths: list[str] | tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    seccomp_fd: int | None = None,
    disable_userns: bool = False,
    tmp_bytes: int | None = None,
    joined_network: bool = False,
) -> list[str]:
    """The full argv running ``bash -c command`` jailed for the thread of ``paths``.

    ``env`` holds extra variables set inside (on top of PATH, HOME and LANG); the environment
    is otherwise empty. ``read_only_paths`` are host paths bound read-only at the same place.
    ``seccomp_fd`` is a descriptor holding the filter program (``seccomp.program_fd``).
    ``network``: the jail keeps its own network namespace, which ``network_args``
    (``netns.JailNetwork.bwrap_args``) connect to the outside; never ``--share-net``.
    ``tmp_bytes`` sizes each scratch tmpfs (see :func:`tmpfs_args`). ``joined_network``: the
    jail keeps the network namespace its launcher entered, a background job's jail of the same
    thread (``BwrapShell.run``'s ``netns_fd``), never the host's: the launcher enters it first.
    """
    argv = [bwrap, "--unshare-all"]
    argv += _identity_args(disable_userns)
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
    if network:
        argv += network_args
    elif joined_network:
        argv += ["--share-net"]
    for extra in read_only_paths:
        real = os.path.realpath(os.path.expanduser(extra))
        if os.path.exists(real):
            argv += ["--ro-bind", real, real]
    argv += _proc_args()
    argv += tmpfs_args(tmp_bytes)
    argv += [
        "--bind", str(paths.workspace), WORKSPACE,
        "--bind", str(paths.uploads), UPLOADS,
        "--bind", str(paths.outputs), OUTPUTS,
    ]  # fmt: skip
    if paths.skills is not None:
        argv += skill_args(paths.skills, paths.owner)
    alias = _python_alias()
    if alias:
        argv += ["--dir", ALIAS_DIR, "--symlink", alias, f"{ALIAS_DIR}/python"]
    argv += ["--remount-ro", "/", "--chdir", WORKSPACE, "--clearenv"]
    path = f"{SANDBOX_PATH}:{ALIAS_DIR}" if alias else SANDBOX_PATH
    # caches and settings programs write under HOME (matplotlib's, fontconfig's for graphviz, pulse's for
    # espeak-ng) go to the scratch tmpfs, as in the sandbox image, not into the user's workspace
    variables = {"PATH": path, "HOME": WORKSPACE, "LANG": "C.UTF-8", "TERM": "dumb", **SCRATCH_DIRS}
    variables.update(env or {})
    for key, value in variables.items():
        argv += ["--setenv", key, value]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--", _shell(), "-c", command]
    return argv


def skill_args(skills: Path, owner: str | None) -> list[str]:
    """Arguments binding, read-only, the skills a jail of ``owner``'s thread sees (``skill_view.py``):
    the shared folders and the owner's own, each on its own, so no other user's folder (even
    one made later) is inside a mount; leftovers of the old layout under ``custom/@<user>`` get
    an empty read-only tmpfs laid over them besides."""
    argv = ["--dir", SKILLS_ROOT]
    for virtual, host in skill_view.mounts(skills, owner):
        argv += ["--ro-bind", str(host), virtual]
    try:
        legacy = sorted(e.name for e in os.scandir(skills / "custom") if e.name.startswith(skill_view.LEGACY_PREFIX))
    except OSError:
        legacy = []
    for name in legacy:
        target = f"{SKILLS_ROOT}/custom/{name}"
        argv += ["--tmpfs", target, "--remount-ro", target]
    return argv


def tmpfs_args(tmp_bytes: int | None) -> list[str]:
    """A fresh ``/dev`` made read-only, and the scratch tmpfs mounts ``/dev/shm``, ``/tmp`` and
    ``/var/tmp``, each ``tmp_bytes`` large when given (``--size``, bubblewrap 0.8+).

    A tmpfs holds its files in memory: unsized, each could take half the host's RAM (and
    bubblewrap's ``/dev`` is itself a writable tmpfs holding ``/dev/shm``), whatever the command's
    memory limit when no cgroup counts them. Writing past the size fails with ENOSPC.
    """
    size = ["--size", str(tmp_bytes)] if tmp_bytes else []
    args = ["--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    return args + [*size, "--tmpfs", "/tmp", *size, "--tmpfs", "/var/tmp"]


@functools.cache
def supports_tmpfs_size(bwrap: str) -> bool:
    """Whether this bubblewrap has ``--size`` (0.8 and later; its ``--help`` lists it)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=15, stdin=subprocess.DEVNULL, env={})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--size" in done.stdout + done.stderr


def split_for_args_fd(argv: list[str]) -> tuple[int, list[str]]:
    """bubblewrap's options moved into a descriptor for ``--args FD`` (NUL-separated), and the
    argv that is left: ``[bwrap, "--args", FD, "--", shell, "-c", command]``. The options, host
    paths included, then never show in the jail's ``/proc/1/cmdline``; the caller closes FD."""
    cut = argv.index("--")
    fd = os.memfd_create("herdsman-bwrap-args", 0)
    data = b"".join(arg.encode("utf-8", "surrogateescape") + b"\0" for arg in argv[1:cut])
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd, [argv[0], "--args", str(fd), *argv[cut:]]


def _probe_argv(bwrap: str, disable_userns: bool) -> list[str]:
    argv = [bwrap, "--unshare-all", *_identity_args(disable_userns), "--die-with-parent", "--new-session"]
    argv += ["--cap-drop", "ALL", *_system_args(), *_proc_args(), "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--remount-ro", "/", "--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--", _shell(), "-c", "true"]
    return argv


def _probe(bwrap: str) -> BwrapStatus:
    """Start a jail like the real ones (user namespace, masks) once; why not, when it fails."""
    try:
        seccomp.filter_program()
    except seccomp.SeccompUnavailable as exc:
        return BwrapStatus(False, bwrap, str(exc))
    err = ""
    for disable_userns in (True, False):
        try:
            done = subprocess.run(
                _probe_argv(bwrap, disable_userns), capture_output=True, timeout=15, stdin=subprocess.DEVNULL, env={}
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return BwrapStatus(False, bwrap, f"bubblewrap failed to start: {exc}")
        if done.returncode == 0:
            return BwrapStatus(True, bwrap, disable_userns=disable_userns)
        err = done.stderr.decode(errors="replace").strip()[:300] or str(done.returncode)
    return BwrapStatus(
        False,
        bwrap,
        f"bubblewrap is installed but cannot create a sandbox here ({err}); "
        "unprivileged user namespaces may be disabled",
    )


@functools.cache
def bwrap_status() -> BwrapStatus:
    """Find ``bwrap`` on PATH and check once (cached) that it can really build a sandbox."""
    found = shutil.which("bwrap")
    if not found:
        return BwrapStatus(False, None, "bubblewrap is not installed")
    return _probe(found)
