"""The seccomp filter of the bubblewrap jail, modelled on Docker's default profile.

Docker's profile allows a list of system calls and denies the rest; most of what it denies
either needs capabilities the jail never has or opens kernel surface a command never needs.
This filter allows by default and answers ``EPERM`` for that second group, the calls that are
dangerous *without* capabilities or that make the kernel's attack surface larger:

- new namespaces and mounts: ``unshare``, ``setns``, ``clone``/``clone3`` with any
  ``CLONE_NEW*`` flag (``clone3`` answers ``ENOSYS``, its flags sit in memory a filter cannot
  read, so the C library falls back to ``clone``, as under Docker), ``mount``, ``umount2``,
  ``pivot_root``, the new mount API (``fsopen``, ``fsmount``, ``move_mount``, ``open_tree``...);
- other processes and the kernel: ``ptrace``, ``process_vm_readv/writev``, ``kcmp``,
  ``pidfd_getfd``, ``perf_event_open``, ``bpf``, ``userfaultfd``, ``io_uring_*``, keyrings
  (``keyctl``, ``add_key``, ``request_key``), ``kexec_*``, modules, ``open_by_handle_at``;
- the machine: ``reboot``, clocks, swap, ``acct``, ``quotactl``, ``syslog``, ``iopl``/``ioperm``;
- the ``ioctl`` requests that make a btrfs subvolume or snapshot (:data:`DENIED_IOCTLS`), which
  would leave the thread's quota group on the quota volume.

Calls made for another architecture (the i386 or x32 entry points) are killed: libseccomp's
default for a foreign architecture. The program is built with the ``pyseccomp`` binding of
libseccomp (no hand-written BPF), once per process, and handed to bubblewrap's ``--seccomp``
through a memory file descriptor. :func:`docker_profile` states the same denials in the JSON
profile format of Docker and podman, for the docker provider.
"""

from __future__ import annotations

import errno
import functools
import json
import os

DENIED = (
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    # other processes, the kernel's inner workings
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "perf_event_open", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "lookup_dcookie",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at",
    # the machine
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "vhangup", "nfsservctl", "uselib",
)  # fmt: skip

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
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    eperm = seccomp.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            rules.add_rule(eperm, name)
        except (RuntimeError, ValueError, OSError):
            continue  # a call this kernel/architecture does not have
    for flag in CLONE_NAMESPACE_FLAGS.values():
        rules.add_rule(eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for request in DENIED_IOCTLS:  # the kernel reads the request as 32 bits: compare only those
        rules.add_rule(eperm, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    fd = os.memfd_create("herdsman-seccomp-build", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as out:
            rules.export_bpf(out)  # libseccomp writes to the descriptor itself
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
    """The same denials as a Docker/podman seccomp profile (JSON for ``security_opt``), on top
    of allowing everything else: the engine's own default profile is replaced by this one, so
    user namespaces, which the default allows, are refused too."""
    rules: list[dict[str, object]] = [
        {"names": list(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
    ]
    for flag in CLONE_NAMESPACE_FLAGS.values():
        rules.append({
            "names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
            "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}],
        })  # fmt: skip
    for request in DENIED_IOCTLS:
        rules.append({
            "names": ["ioctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
            "args": [{"index": 1, "value": 0xFFFFFFFF, "valueTwo": request, "op": "SCMP_CMP_MASKED_EQ"}],
        })  # fmt: skip
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"],
                       "syscalls": rules})
