"""The Sandbox protocol: what every provider (local, docker, kubernetes) offers the tools.

A sandbox belongs to one thread. All paths in and out of it are virtual
(``/mnt/user-data/{workspace,uploads,outputs}``, ``/mnt/skills/...``); a provider maps them to
real places and never lets a host path show in a result or an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from herdsman.sandbox.fs import ThreadFiles
    from herdsman.sandbox.paths import ThreadPaths
    from herdsman.sandbox.snapshot import FileSnapshot

USER_DATA_ROOT = "/mnt/user-data"
WORKSPACE = f"{USER_DATA_ROOT}/workspace"
UPLOADS = f"{USER_DATA_ROOT}/uploads"
OUTPUTS = f"{USER_DATA_ROOT}/outputs"
SKILLS_ROOT = "/mnt/skills"
# variables the harness sets in every command: a command's extra ``env`` never overrides them
_RESERVED_ENV = re.compile(r"^(?:PATH|HOME|LANG|TERM|MPLCONFIGDIR|SHELL|HERDSMAN_.*|LD_.*|BASH_.*|ENV)$")


def command_variables(env: Mapping[str, str] | None) -> dict[str, str]:
    """The extra variables of one command that may be set: valid names that the harness does not
    set itself (PATH, HOME, HERDSMAN_RUN_ID by which a command's processes are stopped, ...)."""
    return {
        k: v
        for k, v in (env or {}).items()
        if k.isidentifier() and k.isascii() and not _RESERVED_ENV.match(k) and "\x00" not in v
    }


class SandboxError(Exception):
    """An error meant for the model: the message says what failed and what to do.

    It never contains a host path.
    """


class PathEscapeError(SandboxError):
    """A path that leaves the virtual roots (``..``, a symlink, a host path)."""


class CommandNotAllowedError(SandboxError):
    """The shell is off for this sandbox (for example no bubblewrap and no opt-in)."""


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one shell command in a sandbox.

    ``output`` is stdout and stderr merged in the order they came (what the model reads);
    ``stdout`` and ``stderr`` are the same streams apart, each bounded like ``output``, or None
    when a provider cannot tell them apart.
    """

    exit_code: int
    output: str
    timed_out: bool = False
    truncated_chars: int = 0
    stdout: str | None = None
    stderr: str | None = None


@runtime_checkable
class Sandbox(Protocol):
    """Files and a shell for one thread, addressed by virtual paths."""

    thread_id: str

    def execute(self, command: str, timeout: float | None = None, env: Mapping[str, str] | None = None) -> ExecResult:
        """Run ``command`` with bash in the workspace; stdout and stderr merged. ``env`` adds
        variables (a skill's secrets) to this command only (see :func:`command_variables`)."""
        ...

    def read_text(self, path: str) -> str:
        """The whole text of the file at virtual ``path``."""
        ...

    def write_text(self, path: str, content: str, append: bool = False) -> int:
        """Write (or append) ``content`` at virtual ``path``; returns the bytes written."""
        ...

    def list_dir(self, path: str, max_depth: int = 2) -> list[str]:
        """Virtual paths below ``path``, directories ending in ``/``."""
        ...

    def glob(self, pattern: str, path: str) -> list[str]:
        """Virtual paths below ``path`` that match the glob ``pattern``."""
        ...

    def exists(self, path: str) -> bool:
        """Whether virtual ``path`` exists."""
        ...


class PathList(list[str]):
    """Virtual paths from a listing or a search; ``note`` says why it stopped early ("" if it saw all)."""

    note: str = ""


@runtime_checkable
class HostBackedSandbox(Sandbox, Protocol):
    """A sandbox whose files live in host directories the gateway can reach (every provider
    here: the local one, and the docker and kubernetes ones through a bind mount or volume).

    ``files`` is the only way the host touches them (race-free, by descriptors, quota charged);
    ``paths`` names the directories and scrubs host paths from text.
    """

    paths: ThreadPaths
    files: ThreadFiles

    def snapshot(self) -> FileSnapshot:
        """Size and mtime of the files under ``/mnt/user-data`` (bounded)."""
        ...

    def cancel_running(self) -> None:
        """Kill every command of this sandbox that is still running."""
        ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Hands out the sandbox of a thread, creating it on first use."""

    def acquire(self, thread_id: str) -> Sandbox:
        """The sandbox for ``thread_id`` (created if new, reused otherwise)."""
        ...

    def release(self, thread_id: str) -> None:
        """Free what the thread's sandbox holds; its files stay."""
        ...

    def close(self) -> None:
        """Release every sandbox."""
        ...
