"""The seccomp filter of the bubblewrap jail, modelled on Docker's default profile.

Docker's profile allows a list of system calls and denies the rest; most of what it denies
either needs capabilities the jail never has or opens kernel surface a command never needs.
This filter allows by default and answers ``EPERM`` for that second group, the calls that are
dangerous *without* capabilities or that make the kernel's attack surface larger, checked
against moby's ``profiles/seccomp/default.json``: every call that profile refuses to a process
without capabilities is refused here too (the obsolete ones answer ``EPERM`` as well), and a few
more (``ptrace``, ``process_vm_*``, ``name_to_handle_at``, ``modify_ldt``, clock tuning):

- new namespaces and mounts: ``unshare``, ``setns``, ``clone``/``clone3`` with any
  ``CLONE_NEW*`` flag (``clone3`` answers ``ENOSYS``, its flags sit in memory a filter cannot
  read, so the C library falls back to ``clone``, as under Docker), ``mount``, ``umount2``,
  ``pivot_root``, the new mount API (``fsopen``, ``fsmount``, ``move_mount``, ``open_tree``...);
- other processes and the kernel: ``ptrace``, ``process_vm_readv/writev``, ``kcmp``,
  ``pidfd_getfd``, ``perf_event_open``, ``bpf``, ``userfaultfd``, ``io_uring_*``, keyrings
  (``keyctl``, ``add_key``, ``request_key``), ``kexec_*``, modules, ``open_by_handle_at``,
  ``fanotify_init``, the LSM calls, ``modify_ldt``, NUMA memory policy (``mbind``,
  ``set_mempolicy``, ``move_pages``, ``migrate_pages``...), ``personality`` except the five
  values Docker allows (:data:`PERSONALITY_ALLOWED`), sockets of the kernel crypto API
  (``AF_ALG``) and of the hypervisor (``AF_VSOCK``);
- the machine: ``reboot``, clocks, swap, ``acct``, ``quotactl``, ``syslog``, ``iopl``/``ioperm``,
  host and domain names.

No privilege leaves the jail: a file the command writes lands in the thread's folder on the
host, owned by the user the gateway runs as (root, when it runs as root), so a setuid copy of
``python3`` made there would give root to any local user reaching it. The filter refuses
(``EPERM``) every call that could put ``S_ISUID`` or ``S_ISGID`` on a file: ``chmod``,
``fchmod``, ``fchmodat``, ``fchmodat2`` with either bit in the mode, and the calls that create
files with a mode (``open``, ``openat``, ``creat``, ``mkdir``, ``mkdirat``, ``mknod``,
``mknodat``; the C library passes a mode of 0 when it does not create). ``openat2`` carries its
mode in memory a filter cannot read, so it answers ``ENOSYS`` and callers fall back to
``openat``, as for ``clone3``. Why a filter rather than the other ways: it holds whatever uid
the gateway runs as (a non-root gateway's jail would leave setuid files of *that* user), it is
the same rules in the docker provider's profile (:func:`docker_profile`, ``SCMP_CMP_MASKED_EQ``
on the mode), it needs no privilege on the host (a ``nosuid`` mount of the user data does) and
acts at the call, where stripping bits after each command would leave the file usable while
the command runs. File capabilities need ``CAP_SETFCAP``, which the jail never has; hard links
to the host's setuid programs cross a mount point and fail (``EXDEV``); and the thread folders
are 0700 (``paths.py``), so no other local user reaches the files anyway.
- the ``ioctl`` requests that make a btrfs subvolume or snapshot (:data:`DENIED_IOCTLS`), which
  would leave the thread's quota group on the quota volume.

Calls made for another architecture (the i386 or x32 entry points) are killed: libseccomp's
default for a foreign architecture. The program is built with the ``pyseccomp`` binding of
libseccomp (no hand-written BPF), once per process, and handed to bubblewrap's ``--seccomp``
through a memory file descriptor. :func:`docker_profile` states the same rules in the JSON
profile format of Docker and podman, for the docker provider.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

DENIED = (
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
    # other processes, the kernel's inner workings
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd",
    "perf_event_open", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "lookup_dcookie", "fanotify_init",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "create_module", "get_kernel_syms", "query_module",
    "open_by_handle_at", "name_to_handle_at", "modify_ldt",
    "lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules",
    "mbind", "set_mempolicy", "set_mempolicy_home_node", "get_mempolicy", "move_pages", "migrate_pages",
    # the machine
    "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "vhangup", "nfsservctl", "uselib",
    "sethostname", "setdomainname", "_sysctl", "sysfs", "ustat",
    # obsolete or never implemented (refused by Docker's profile too)
    "afs_syscall", "getpmsg", "putpmsg", "security", "tuxcall", "vserver",
)  # fmt: skip

# Calls newer than the libseccomp of some distributions (Debian 12's 2.5.4 does not name them);
# numbers from 424 on are the same on x86_64 and aarch64.
NEW_SYSCALL_NUMBERS = {
    "lsm_get_self_attr": 459,
    "lsm_set_self_attr": 460,
    "lsm_list_modules": 461,
    "open_tree_attr": 467,
}

# btrfs subvolume and snapshot creation (SNAP_CREATE, SUBVOL_CREATE and their _V2): a new subvolume
# leaves its parent's quota group, so it would escape the disk quota (see volume.py)
DENIED_IOCTLS = (0x50009401, 0x5000940E, 0x50009417, 0x50009418)

CLONE_NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
    "CLONE_NEWTIME": 0x00000080,
}

# Which argument holds the mode, for every call that sets a file's mode or creates a file.
MODE_ARGUMENT = {
    "chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2,
    "creat": 1, "open": 2, "openat": 3, "mkdir": 1, "mkdirat": 2, "mknod": 1, "mknodat": 2,
}  # fmt: skip
PRIVILEGE_BITS = (stat.S_ISUID, stat.S_ISGID)
# Docker's default profile allows personality(2) only with these values: Linux, its 32-bit
# variant (PER_LINUX32), UNAME26 on either, and the query 0xffffffff.
PERSONALITY_ALLOWED = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
DENIED_SOCKET_FAMILIES = {"AF_ALG": 38, "AF_VSOCK": 40}  # as Docker: the crypto API, the hypervisor
_LOW_32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Rule:
    """One refusal: ``name`` answers ``errno``; with ``arg`` = (index, mask, value), only when
    ``argument[index] & mask == value`` (libseccomp's and Docker's ``MASKED_EQ``)."""

    name: str
    errno: int
    arg: tuple[int, int, int] | None = None


def _personality_masks() -> Iterator[tuple[int, int]]:
    """(mask, value) pairs whose union is every 32-bit persona but :data:`PERSONALITY_ALLOWED`.

    A filter rule compares an argument once, so "not one of five values" is spelled as bit
    patterns: the allowed values but 0xffffffff use no bit outside ``0x20008``. With bit 0 clear,
    any other bit outside that set is refused; with bit 0 set (outside it too), any clear bit,
    which leaves only 0xffffffff allowed. The kernel reads the persona as 32 bits.
    """
    kept = 0x20008
    for bit in range(1, 32):
        if not kept & (1 << bit):
            yield (1 << bit) | 1, 1 << bit
    for bit in range(1, 32):
        yield 1 | (1 << bit), 1


def rules() -> tuple[Rule, ...]:
    """Every refusal of the filter, in the order it is built (shared by the jail's program and
    the docker provider's profile)."""
    out = [Rule(name, errno.EPERM) for name in DENIED]
    out += [Rule("clone", errno.EPERM, (0, flag, flag)) for flag in CLONE_NAMESPACE_FLAGS.values()]
    out.append(Rule("clone3", errno.ENOSYS))
    for name, index in MODE_ARGUMENT.items():
        out += [Rule(name, errno.EPERM, (index, bit, bit)) for bit in PRIVILEGE_BITS]
    out.append(Rule("openat2", errno.ENOSYS))
    out += [Rule("personality", errno.EPERM, (0, mask, value)) for mask, value in _personality_masks()]
    out += [Rule("socket", errno.EPERM, (0, _LOW_32, family)) for family in DENIED_SOCKET_FAMILIES.values()]
    # the kernel reads an ioctl request as 32 bits: compare only those
    out += [Rule("ioctl", errno.EPERM, (1, _LOW_32, request)) for request in DENIED_IOCTLS]
    return tuple(out)


class SeccompUnavailable(RuntimeError):
    """libseccomp or its Python binding is missing; the message says what to install."""


@functools.cache
def filter_program() -> bytes:
    """The compiled BPF program (cached); raises SeccompUnavailable when it cannot be built."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError) as exc:  # the binding loads libseccomp.so.2 at import
        raise SeccompUnavailable(
            f"the seccomp filter cannot be built ({exc}); install libseccomp2 (apt-get install "
            "libseccomp2) and the pyseccomp package"
        ) from None
    program = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for rule in rules():
        call: int | str = rule.name
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, rule.name) < 0:
            if rule.name not in NEW_SYSCALL_NUMBERS:
                continue  # a call this architecture does not have (modify_ldt off x86...)
            call = NEW_SYSCALL_NUMBERS[rule.name]
        args = [] if rule.arg is None else [seccomp.Arg(rule.arg[0], seccomp.MASKED_EQ, rule.arg[1], rule.arg[2])]
        program.add_rule(seccomp.ERRNO(rule.errno), call, *args)
    fd = os.memfd_create("herdsman-seccomp-build", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as out:
            program.export_bpf(out)  # libseccomp writes to the descriptor itself
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def program_fd() -> int:
    """A fresh readable descriptor holding the program, positioned at its start (the caller
    passes it to bubblewrap and closes it)."""
    program = filter_program()
    fd = os.memfd_create("herdsman-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@functools.cache
def docker_profile() -> str:
    """The same rules as a Docker/podman seccomp profile (JSON for ``security_opt``), on top
    of allowing everything else: the engine's own default profile is replaced by this one, so
    user namespaces, which the default allows, are refused too. The engine skips the names its
    libseccomp does not know."""
    plain: dict[int, list[str]] = {}
    conditional: list[dict[str, object]] = []
    for rule in rules():
        if rule.arg is None:
            plain.setdefault(rule.errno, []).append(rule.name)
            continue
        index, mask, value = rule.arg
        conditional.append({
            "names": [rule.name], "action": "SCMP_ACT_ERRNO", "errnoRet": rule.errno,
            "args": [{"index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"}],
        })  # fmt: skip
    syscalls = [{"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": code} for code, names in plain.items()]
    return json.dumps(
        {
            "defaultAction": "SCMP_ACT_ALLOW",
            "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"],
            "syscalls": syscalls + conditional,
        }
    )
