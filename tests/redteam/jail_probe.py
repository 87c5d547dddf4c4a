"""Runs the jail probes of ``test_jail_bwrap.py`` in a fresh process and prints JSON.

``python -m tests.redteam.jail_probe HOME`` builds a local provider (bubblewrap) with ``HOME`` as
its home, runs each probe as a command of one thread and prints ``{"uid": ..., "probes":
{name: output}, "owner": uid of a file the jail wrote}``. The tests run it as root and, through
``setpriv``, as an unprivileged user: the jail must hold for both. The setuid attack
(:data:`SETUID_ATTACK`) runs as one more probe; :func:`privileged_files` then lists, on the host,
every file it left with a setuid or setgid bit or file capabilities, and the result carries the
modes of the home and thread folders.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider

SYSCALLS = {  # name: (number on x86_64, arguments)
    "mount": (165, (0, 0, 0, 0, 0)),
    "keyctl": (250, (0, 0, 0, 0, 0)),
    "bpf": (321, (0, 0, 0, 0, 0)),
    "perf_event_open": (298, (0, 0, -1, -1, 0)),
    "userfaultfd": (323, (0, 0, 0, 0, 0)),
    "ptrace_attach_1": (101, (16, 1, 0, 0, 0)),
    "unshare_newuser": (272, (0x10000000, 0, 0, 0, 0)),
    "unshare_newns": (272, (0x00020000, 0, 0, 0, 0)),
    "setns": (308, (0, 0, 0, 0, 0)),
    "open_by_handle_at": (304, (0, 0, 0, 0, 0)),
    "kexec_load": (246, (0, 0, 0, 0, 0)),
    "init_module": (175, (0, 0, 0, 0, 0)),
    "io_uring_setup": (425, (0, 0, 0, 0, 0)),
    # dangerous without capabilities (Docker's profile refuses them too)
    "personality_addr_no_randomize": (135, (0x0040000, 0, 0, 0, 0)),
    "personality_read_implies_exec": (135, (0x0400000, 0, 0, 0, 0)),
    "modify_ldt": (154, (0, 0, 0, 0, 0)),
    "mbind": (237, (0, 0, 0, 0, 0)),
    "set_mempolicy": (238, (0, 0, 0, 0, 0)),
    "get_mempolicy": (239, (0, 0, 0, 0, 0)),
    "move_pages": (279, (0, 0, 0, 0, 0)),
    "migrate_pages": (256, (0, 0, 0, 0, 0)),
    "fanotify_init": (300, (0, 0, 0, 0, 0)),
    "socket_af_vsock": (41, (40, 1, 0, 0, 0)),
    "socket_af_alg": (41, (38, 5, 0, 0, 0)),
}
KEPT_SYSCALLS = {  # what Docker's profile allows and programs use: must still work
    "personality_query": (135, (0xFFFFFFFF, 0, 0, 0, 0)),
    "personality_linux": (135, (0, 0, 0, 0, 0)),
    "socket_af_unix": (41, (1, 1, 0, 0, 0)),
}


def syscall_probe(table: dict) -> str:
    """A python3 script calling each system call of ``table`` and printing {name: outcome}."""
    return (
        "import ctypes, json, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "out = {}\n"
        f"for name, (nr, args) in {table!r}.items():\n"
        "    ctypes.set_errno(0)\n"
        "    rc = libc.syscall(nr, *[ctypes.c_long(a) for a in args])\n"
        "    out[name] = 'ok' if rc >= 0 else os.strerror(ctypes.get_errno())\n"
        "print(json.dumps(out))\n"
    )


SYSCALL_PROBE = syscall_probe(SYSCALLS)

# Every way we know to leave a setuid/setgid file (or one with file capabilities) in the thread's
# folder, where the host sees it owned by the gateway's user. Each step may fail; the test then
# looks at the host side.
SETUID_PYTHON = r"""
import ctypes, io, os, platform, tarfile
libc = ctypes.CDLL(None, use_errno=True)
def attempt(step):
    try:
        step()
    except OSError:
        pass
def create(name, flags, mode):
    os.close(os.open(name, flags, mode))
W = os.O_CREAT | os.O_WRONLY
attempt(lambda: create("py-open-suid", W, 0o4755))
attempt(lambda: create("py-open-sgid", W, 0o2755))
attempt(lambda: os.mknod("py-mknod", 0o100000 | 0o4755))
attempt(lambda: os.mkdir("py-mkdir-sgid", 0o2755))
open("plain", "w").close()
attempt(lambda: os.chmod("plain", 0o6755))
def fchmod():
    fd = os.open("plain-fd", W, 0o755)
    try:
        os.fchmod(fd, 0o4755)
    finally:
        os.close(fd)
attempt(fchmod)
def tmpfile():
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)
    os.link(f"/proc/self/fd/{fd}", "py-tmpfile")
attempt(tmpfile)
open("raw-fchmodat2", "w").close()
libc.syscall(452, -100, b"raw-fchmodat2", 0o4755, 0)
if platform.machine() == "x86_64":  # the legacy entry points the C library no longer uses
    open("raw-chmod", "w").close()
    libc.syscall(90, b"raw-chmod", 0o4755)  # chmod
    libc.syscall(2, b"raw-open", W, 0o4755)  # open
    libc.syscall(85, b"raw-creat", 0o4755)  # creat
    libc.syscall(133, b"raw-mknod", 0o100000 | 0o4755, 0)  # mknod
open("capable", "w").close()  # a v2 file capability: effective, CAP_SETUID permitted
attempt(lambda: os.setxattr("capable", "security.capability", bytes.fromhex("01000002" "80000000" + "00" * 12)))
with tarfile.open("suid.tar", "w") as tar:
    for name, kind, mode in (("t-suid", tarfile.REGTYPE, 0o4755), ("t-sgid-dir", tarfile.DIRTYPE, 0o2755)):
        info = tarfile.TarInfo(name)
        info.type, info.mode = kind, mode
        tar.addfile(info, io.BytesIO(b""))
"""
OPENAT2_PROBE = (  # openat2(AT_FDCWD, ".", {flags 0, mode 0, resolve 0}, 24)
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "rc = libc.syscall(437, -100, b'.', b'\\0' * 24, 24)\n"
    "print('ok' if rc >= 0 else os.strerror(ctypes.get_errno()))\n"
)
SETUID_ATTACK = (
    "cp /usr/bin/python3 ./py; chmod 4755 ./py; chmod u+s ./py; "
    "cp /bin/true ./sg; chmod g+s ./sg; mkdir -p sgid-dir; chmod g+s sgid-dir; mkdir -m 2755 sgid-dir2; "
    "install -m 4755 /bin/true ./installed; "
    "system=$(find /usr/bin /bin /usr/sbin -maxdepth 1 -type f -perm -4000 2>/dev/null | head -1); "
    'cp -p "$system" ./copied; cp -a "$system" ./archived; ln "$system" ./hard-link; '
    f"python3 -c {shlex.quote(SETUID_PYTHON)}; "
    "mkdir -p tar-x tar-p; tar xf suid.tar -C tar-x; tar xpf suid.tar -C tar-p; "
    "ls py plain capable suid.tar >/dev/null && echo attempted"
)

PROBES = {
    "id": "id -u; id -g",
    "status": "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
    "core_pattern": "(: >> /proc/sys/kernel/core_pattern) 2>&1 && echo WRITABLE",
    "proc_sys_writable": "find /proc/sys -type f -writable 2>/dev/null | head -5",
    "sysrq": "(: >> /proc/sysrq-trigger) 2>/dev/null && [ -s /proc/sysrq-trigger ] && echo REAL; echo checked",
    "masked_reads": "for f in /proc/kcore /proc/keys /proc/timer_list /proc/kallsyms /proc/sched_debug "
    "/proc/kpageflags /proc/kpagecount /proc/kpagecgroup /proc/slabinfo /proc/pagetypeinfo; do "
    "[ -e $f ] && printf '%s=%s ' $f $(head -c 4096 $f 2>/dev/null | wc -c); done; echo",
    "sys": "ls /sys 2>&1 | head -3",
    "nested_userns": "unshare -U true 2>&1; unshare -r true 2>&1; echo done",
    "syscalls": f"python3 -c {shlex.quote(SYSCALL_PROBE)}",
    "pid1_environ": "tr '\\0' '\\n' < /proc/1/environ",
    "pid1_cmdline": "tr '\\0' ' ' < /proc/1/cmdline",
    "write_file": "echo made > made.txt && echo ok",
    "syscalls_kept": f"python3 -c {shlex.quote(syscall_probe(KEPT_SYSCALLS))}",
    "openat2": f"python3 -c {shlex.quote(OPENAT2_PROBE)}",
    "setuid": SETUID_ATTACK,
}


def privileged_files(root: Path) -> list[str]:
    """Every file under ``root`` (links not followed) that carries a setuid or setgid bit or
    file capabilities, as ``relative path: mode``."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            shown = f"{os.path.relpath(path, root)}: {stat.filemode(st.st_mode)}"
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(shown)
            elif not stat.S_ISLNK(st.st_mode):
                try:
                    os.getxattr(path, "security.capability", follow_symlinks=False)
                    found.append(shown + " with file capabilities")
                except OSError:
                    pass
    return found


def folder_modes(home: Path, thread_id: str) -> dict[str, str]:
    """The modes (octal) of the home, its threads folder and the thread's folder."""
    folders = {"home": home, "threads": home / "threads", "thread": home / "threads" / thread_id}
    return {name: oct(stat.S_IMODE(os.stat(path).st_mode)) for name, path in folders.items()}


def main(home: str) -> None:
    """Run every probe in one thread of a provider homed at ``home``; print the JSON."""
    config = HerdsmanConfig.model_validate(
        {"home": home, "skills": {"enabled": False}, "sandbox": {"isolation": "bwrap", "command_timeout_seconds": 30}}
    )
    provider = LocalSandboxProvider(config)
    sandbox = provider.acquire("probe")
    result = {"uid": os.getuid(), "isolation": provider.isolation, "probes": {}}
    for name, command in PROBES.items():
        # raw output (not scrubbed) is what the attacker sees: run the shell directly
        raw = sandbox._shell.run(sandbox.paths, command, 30)
        result["probes"][name] = raw.output
    made = sandbox.paths.workspace / "made.txt"
    result["owner"] = os.stat(made).st_uid if made.exists() else None
    result["privileged"] = privileged_files(sandbox.paths.user_data)
    result["folder_modes"] = folder_modes(Path(sandbox.paths.home), "probe")
    provider.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
