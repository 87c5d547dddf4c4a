"""Runs the jail probes of ``test_jail_bwrap.py`` in a fresh process and prints JSON.

``python -m tests.redteam.jail_probe HOME`` builds a local provider (bubblewrap) with ``HOME`` as
its home, runs each probe as a command of one thread and prints ``{"uid": ..., "probes":
{name: output}, "owner": uid of a file the jail wrote}``. The tests run it as root and, through
``setpriv``, as an unprivileged user: the jail must hold for both.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

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
}

SYSCALL_PROBE = (
    "import ctypes, json, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "out = {}\n"
    f"for name, (nr, args) in {SYSCALLS!r}.items():\n"
    "    ctypes.set_errno(0)\n"
    "    rc = libc.syscall(nr, *[ctypes.c_long(a) for a in args])\n"
    "    out[name] = 'ok' if rc >= 0 else os.strerror(ctypes.get_errno())\n"
    "print(json.dumps(out))\n"
)

PROBES = {
    "id": "id -u; id -g",
    "status": "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
    "core_pattern": "(: >> /proc/sys/kernel/core_pattern) 2>&1 && echo WRITABLE",
    "proc_sys_writable": "find /proc/sys -type f -writable 2>/dev/null | head -5",
    "sysrq": "(: >> /proc/sysrq-trigger) 2>/dev/null && [ -s /proc/sysrq-trigger ] && echo REAL; echo checked",
    "masked_reads": "for f in /proc/kcore /proc/keys /proc/timer_list /proc/kallsyms /proc/sched_debug; do "
                    "[ -e $f ] && printf '%s=%s ' $f $(head -c 4096 $f 2>/dev/null | wc -c); done; echo",
    "sys": "ls /sys 2>&1 | head -3",
    "nested_userns": "unshare -U true 2>&1; unshare -r true 2>&1; echo done",
    "syscalls": f"python3 -c {shlex.quote(SYSCALL_PROBE)}",
    "pid1_environ": "tr '\\0' '\\n' < /proc/1/environ",
    "pid1_cmdline": "tr '\\0' ' ' < /proc/1/cmdline",
    "write_file": "echo made > made.txt && echo ok",
}


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
    provider.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
