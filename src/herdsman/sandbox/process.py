"""Run one command with a deadline, bounded output, and no process left behind.

``subprocess.run(timeout=...)`` is not enough for an agent's shell: it kills only the direct
child, buffers all output in memory, and waits forever for a pipe held open by a background
job. :func:`run_process` instead

- starts the command in a new session (its own process group);
- reads stdout and stderr incrementally from two pipes into :class:`StreamCapture`: the merged
  text (what the model reads) and each stream apart (what a trace shows), each an
  :class:`OutputCapture` that keeps the head and the tail and counts the characters cut between
  them, so a command printing gigabytes costs a few kilobytes. The merged text keeps the order
  in which the pipes were read; writes to both streams within the same instant come stdout first;
- decodes bytes as UTF-8 with ``errors="replace"``, so binary output cannot crash a tool;
- when the command ends or its time is up, SIGKILLs its process group and every process that
  still carries the run's marker variable (``HERDSMAN_RUN_ID``), which catches grandchildren
  that daemonized into another session. Under bubblewrap (``--unshare-pid
  --die-with-parent``) killing bwrap tears down the whole pid namespace, which is the
  reliable version of the same thing.
"""

from __future__ import annotations

import codecs
import os
import selectors
import signal
import subprocess
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from herdsman.sandbox.base import ExecResult

MARKER_ENV = "HERDSMAN_RUN_ID"
_CHUNK = 64 * 1024
_EXIT_GRACE_SECONDS = 0.2
_DRAIN_SECONDS = 1.0


class OutputCapture:
    """Keep the first and last ``max_chars // 2`` characters of a stream and count the rest."""

    def __init__(self, max_chars: int) -> None:
        self._head_limit = max(0, max_chars // 2)
        self._tail_limit = max(0, max_chars - self._head_limit)
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._cut = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    @property
    def cut_chars(self) -> int:
        """How many characters were dropped between head and tail."""
        return self._cut

    def feed(self, data: bytes) -> None:
        """Add raw bytes from the stream."""
        self._add(self._decoder.decode(data))

    def finish(self) -> None:
        """Flush a trailing partial UTF-8 sequence (as a replacement character)."""
        self._add(self._decoder.decode(b"", final=True))

    def _add(self, text: str) -> None:
        if not text:
            return
        room = self._head_limit - self._head_len
        if room > 0:
            taken = text[:room]
            self._head.append(taken)
            self._head_len += len(taken)
            text = text[len(taken) :]
            if not text:
                return
        self._tail.append(text)
        self._tail_len += len(text)
        excess = self._tail_len - self._tail_limit
        while excess > 0:
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                dropped = len(first)
            else:
                self._tail[0] = first[excess:]
                dropped = excess
            self._cut += dropped
            self._tail_len -= dropped
            excess -= dropped

    def text(self) -> str:
        """Head, a note on what was cut (if anything), tail."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self._cut:
            return head + tail
        return f"{head}\n... [{self._cut} characters cut] ...\n{tail}"


STDOUT = 1
STDERR = 2
CANCELLED_NOTE = "\n[cancelled: the process tree was killed]"


class StreamCapture:
    """stdout and stderr of one command: merged in arrival order, and each on its own.

    ``feed(data, stream)`` takes bytes of stream :data:`STDOUT` or :data:`STDERR` (the numbers
    Docker and Kubernetes use too); every text is bounded like :class:`OutputCapture`.
    """

    def __init__(self, max_chars: int) -> None:
        self.merged = OutputCapture(max_chars)
        self.stdout = OutputCapture(max_chars)
        self.stderr = OutputCapture(max_chars)

    @property
    def cut_chars(self) -> int:
        """How many characters of the merged text were dropped between head and tail."""
        return self.merged.cut_chars

    def feed(self, data: bytes, stream: int = STDOUT) -> None:
        """Add raw bytes of ``stream`` (stderr when it is :data:`STDERR`, else stdout)."""
        if not data:
            return
        self.merged.feed(data)
        (self.stderr if stream == STDERR else self.stdout).feed(data)

    def finish(self) -> None:
        """Flush trailing partial UTF-8 sequences."""
        for capture in (self.merged, self.stdout, self.stderr):
            capture.finish()

    def text(self) -> str:
        """The merged text (see :meth:`OutputCapture.text`)."""
        return self.merged.text()

    def result(self, exit_code: int, stopped: str = "exited") -> ExecResult:
        """The :class:`ExecResult` of the command; ``stopped`` says why its output ended: a
        ``timeout``, ``cancelled`` (noted at the end of the merged output), or anything else
        when it ended by itself (``exited``, ``eof``)."""
        return ExecResult(
            exit_code=exit_code,
            output=self.text() + (CANCELLED_NOTE if stopped == "cancelled" else ""),
            timed_out=stopped == "timeout",
            truncated_chars=self.cut_chars,
            stdout=self.stdout.text(),
            stderr=self.stderr.text(),
        )


def new_run_id() -> str:
    """A fresh marker value identifying the processes of one command."""
    return uuid.uuid4().hex


def _has_exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (so its pid and group id stay reserved)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def marked_pids(run_id: str) -> list[int]:
    """Pids of live processes whose environment carries ``MARKER_ENV=run_id``."""
    needle = f"{MARKER_ENV}={run_id}".encode()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def kill_process_tree(pgid: int, run_id: str | None = None) -> None:
    """SIGKILL the process group ``pgid`` and every process marked with ``run_id``.

    The marked scan repeats until it finds nothing, so a process that forks while being killed
    is caught on the next pass.
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if run_id:
        kill_until_gone(lambda: marked_pids(run_id), passes=20)


def kill_until_gone(find_pids: Callable[[], Iterable[int]], passes: int) -> None:
    """SIGKILL what ``find_pids()`` returns, again and again (at most ``passes`` times, from
    0.5 ms apart doubling up to 10 ms) until it returns nothing, so a process that forks while
    being killed is caught too. The first looks come soon: a jail's processes usually take a
    millisecond or two to go once the command has ended."""
    for attempt in range(passes):
        pids = list(find_pids())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(min(0.01, 0.0005 * 2**attempt))


def _read_ready(selector: selectors.BaseSelector, capture: StreamCapture, wait: float) -> bool:
    """Read once from every pipe that is ready within ``wait`` seconds (stdout first).

    A pipe at EOF is unregistered. False when nothing was ready.
    """
    events = selector.select(timeout=wait)
    for key, _ in sorted(events, key=lambda event: event[0].data):
        chunk = os.read(key.fd, _CHUNK)
        if chunk:
            capture.feed(chunk, key.data)
        else:
            selector.unregister(key.fd)
    return bool(events)


def _pump(
    proc: subprocess.Popen[bytes],
    selector: selectors.BaseSelector,
    capture: StreamCapture,
    deadline: float,
    cancel: threading.Event | None,
) -> str:
    """Read output until the command exits, the deadline passes or ``cancel`` is set.

    Returns why it stopped: ``exited``, ``timeout`` or ``cancelled``.
    """
    exited_at: float | None = None
    eof_poll = 0.001  # after EOF, poll for the exit quickly at first, then back off to 20 ms
    while True:
        eof = not selector.get_map()
        now = time.monotonic()
        if exited_at is None and _has_exited(proc.pid):
            exited_at = now
        if exited_at is not None and (eof or now - exited_at > _EXIT_GRACE_SECONDS):
            return "exited"
        if now >= deadline:
            return "timeout"
        if cancel is not None and cancel.is_set():
            return "cancelled"
        wait = min(deadline - now, 0.05)
        if eof:
            time.sleep(min(wait, eof_poll))
            eof_poll = min(eof_poll * 2, 0.02)
            continue
        _read_ready(selector, capture, wait)


def _drain(selector: selectors.BaseSelector, capture: StreamCapture, seconds: float) -> None:
    """Read what is left in the pipes after the writers were killed, for at most ``seconds``."""
    end = time.monotonic() + seconds
    while selector.get_map() and (left := end - time.monotonic()) > 0:
        if not _read_ready(selector, capture, left):
            return


def _exit_code(returncode: int) -> int:
    """A shell-style exit code: killed by signal N becomes 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def run_process(
    argv: Sequence[str],
    *,
    timeout: float,
    max_output_chars: int,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    run_id: str | None = None,
    cancel: threading.Event | None = None,
    preexec_fn: Callable[[], None] | None = None,
    kill_tree: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> ExecResult:
    """Run ``argv`` with a timeout and bounded output (stdout and stderr merged, and apart).

    ``env`` is the complete environment of the command (nothing is inherited); ``run_id`` is
    added to it as ``HERDSMAN_RUN_ID`` so the whole tree can be found and killed. Setting
    ``cancel`` stops the command early (checked every 50 ms). Every process of the command is
    killed when this returns, whether it finished, timed out or was cancelled. ``preexec_fn``
    runs in the child before exec (resource limits, see ``limits.py``). ``kill_tree``,
    when given, replaces the scan of ``/proc`` for marked processes: callers that hold every
    process of the command in a cgroup kill them through it. ``pass_fds`` stay open in the
    command (bubblewrap's ``--args`` and ``--seccomp`` descriptors).
    """
    run_id = run_id or new_run_id()
    full_env = dict(env or {})
    full_env[MARKER_ENV] = run_id
    capture = StreamCapture(max_output_chars)
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=full_env,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        preexec_fn=preexec_fn,
    )
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout.fileno(), selectors.EVENT_READ, STDOUT)
    selector.register(proc.stderr.fileno(), selectors.EVENT_READ, STDERR)
    reason = "exited"
    try:
        reason = _pump(proc, selector, capture, time.monotonic() + timeout, cancel)
    finally:
        kill_process_tree(proc.pid, None if kill_tree else run_id)
        if kill_tree is not None:
            kill_tree()
        try:
            _drain(selector, capture, _DRAIN_SECONDS)
        finally:
            selector.close()
            proc.stdout.close()
            proc.stderr.close()
            returncode = proc.wait()
    capture.finish()
    return capture.result(_exit_code(returncode), reason)
