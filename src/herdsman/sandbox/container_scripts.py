"""The shell snippets that run, and clean up after, one command inside a container or pod.

A container engine's exec has no timeout and no notion of "the processes this command
started", so each command is wrapped in a small POSIX ``sh`` script (it works with busybox,
dash and bash):

- the command runs with ``bash -c`` (``sh -c`` where the image has no bash) in its own session,
  started by ``setsid`` and carrying ``HERDSMAN_RUN_ID=<run id>`` in its environment;
- when it ends, the wrapper kills its session with the ``kill`` builtin (no fork needed, so it
  works when a fork bomb filled the pid limit) and then every process still carrying the marker
  (one ``grep -lz`` over ``/proc/*/environ``; GNU grep and busybox both have ``-z``), so
  background jobs and daemonized grandchildren end with their command, as they do in the local
  bubblewrap sandbox;
- on a timeout or a cancel, the provider runs :func:`sweep_argv` in a second exec, which kills
  the marked processes; when even that cannot start (pid limit), the provider restarts the
  container (see the providers).

An exec that carries no environment (Kubernetes: a value on the command line would be in the API
server's request log) gets a command's extra variables on its standard input instead, one line
the wrapper reads and evaluates before anything runs (:func:`env_line`).

The marker is the command's own environment, which a process can clear (``setsid env -i ...``,
a double fork): so once a container has had no command for a moment, the docker provider also
runs :func:`sweep_all_argv`, which kills every process but the container's init and main
process, whatever its environment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from herdsman.sandbox.base import WORKSPACE

MARKER = "HERDSMAN_RUN_ID"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_SWEEP = (
    f'for f in $(grep -lzx "{MARKER}=$1" /proc/[0-9]*/environ 2>/dev/null); do '
    'n="${f#/proc/}"; n="${n%/environ}"; [ "$n" = "$$" ] || kill -9 "$n" 2>/dev/null; '
    "done; true"
)

_WRAPPER = (
    'id="$1"; cmd="$2"; '
    "if command -v bash >/dev/null 2>&1; then shell=bash; else shell=sh; fi; "
    f'{MARKER}="$id" setsid "$shell" -c "$cmd" </dev/null & child=$!; '
    'wait "$child"; rc=$?; '
    'kill -9 -- "-$child" 2>/dev/null; '
    f"{_SWEEP}; "
    'exit "$rc"'
)


_ENV_FROM_STDIN = 'IFS= read -r vars || exit 125; eval "$vars"; '  # the one line of env_line()


def wrapped_argv(command: str, run_id: str, env_on_stdin: bool = False) -> list[str]:
    """The exec argv running ``command`` under the wrapper described in the module docstring.

    ``env_on_stdin``: the wrapper first reads one line, :func:`env_line`, from its standard
    input and exports the variables it sets (for an exec API that carries no environment)."""
    script = _ENV_FROM_STDIN + _WRAPPER if env_on_stdin else _WRAPPER
    return ["/bin/sh", "-c", script, "herdsman", run_id, command]


def env_line(env: Mapping[str, str]) -> bytes:
    """One line of ``sh`` setting and exporting ``env`` (names already checked by
    ``base.command_variables``), for :func:`wrapped_argv` with ``env_on_stdin``.

    Each value is written as octal escapes for the shell's ``printf``: the line holds only
    digits, backslashes and the names, whatever the value (quotes, newlines, ``$(...)``), so
    evaluating it sets the value byte for byte and runs nothing else. A trailing ``x`` keeps
    the value's own trailing newlines through the command substitution."""
    parts = []
    for name, value in env.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a variable name")
        octal = "".join(f"\\{byte:03o}" for byte in value.encode())
        parts.append(f'{name}="$(printf \'{octal}x\')"; {name}="${{{name}%x}}"; export {name}; ')
    return ("".join(parts) + "\n").encode("ascii")


def sweep_argv(run_id: str) -> list[str]:
    """The exec argv killing every process of the container that carries ``run_id``."""
    return ["/bin/sh", "-c", _SWEEP, "herdsman", run_id]


_SWEEP_ALL = (  # builtins only (it must run when the pid limit is full): the main process is init's oldest child
    "read -r kids < /proc/1/task/1/children; main=; "
    'for k in $kids; do if [ -z "$main" ] || [ "$k" -lt "$main" ]; then main=$k; fi; done; '
    'for p in /proc/[0-9]*; do n="${p#/proc/}"; '
    '[ "$n" = 1 ] || [ "$n" = "$main" ] || [ "$n" = "$$" ] || kill -9 "$n" 2>/dev/null; '
    "done; true"
)


def sweep_all_argv() -> list[str]:
    """The exec argv killing every process of the container but its init (pid 1) and main
    process (init's oldest child: it started before any command)."""
    return ["/bin/sh", "-c", _SWEEP_ALL, "herdsman"]


def exec_environment() -> dict[str, str]:
    """The environment of every command: nothing from the gateway leaks in."""
    return {"PATH": CONTAINER_PATH, "HOME": WORKSPACE, "LANG": "C.UTF-8", "TERM": "dumb"}
