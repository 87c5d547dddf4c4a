"""Tie a version of the thread's files to each checkpoint, and bring it back on time travel.

:func:`keep_file_versions` wraps the ``put``/``aput`` of one checkpointer instance (not the
class, and nothing at import time): after a checkpoint of a thread's root graph is saved, a
version of the thread's files is captured (:class:`~herdsman.sandbox.history.FileHistory`) and
recorded under that checkpoint's id. Every path that writes checkpoints (gateway runs, the CLI,
``update_state``) gets versions without knowing about them. Runs with versions use
``durability="sync"`` (unless the client asks otherwise): with LangGraph's default, ``async``, a
checkpoint is saved while the next step already works, and its version would hold some of that
step's files (found by red-teaming: 2 of 20 files, every time); sub-agents' checkpoints (their own
namespaces) share the thread's files and the root's next checkpoint captures them.

:meth:`FileVersions.restore` puts the files of a checkpoint back: the run manager calls it before
a run that starts from an earlier checkpoint, the state route before ``update_state`` from one.
A checkpoint whose files are not kept (made before versions were on, or pruned) leaves the files
as they are, with a warning in the log: time travel of the conversation still works.

A step that changed no file costs no capture: the change journal
(:mod:`~herdsman.sandbox.change_journal`) says so on the event loop, without a trip to the
capture pool, and the checkpoint gets the version before it (see :meth:`FileVersions.unchanged`).
Nor a trip to record it: on a checkpointer that writes on a thread of its own (SQLite), the row
saying "this checkpoint has the version recorded last" is written on that thread right after the
checkpoint, in the same hand-off (:meth:`FileVersions.record_now`, which never waits: a history
in use, or a new version, which may call for a prune, is recorded on the capture pool as before;
a new thread's first version, which cannot, is recorded in the hand-off too).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from herdsman import pools
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.history import FileHistory, HistoryError, RestoreReport, thread_history

log = get_logger(__name__)


class FileVersions:
    """The file histories of one home's threads, made on first use (one per thread)."""

    def __init__(self, config: HerdsmanConfig, provider: SandboxProvider) -> None:
        """Versions follow ``config.sandbox.snapshots``; files are reached through ``provider``."""
        self.config = config
        self.provider = provider
        self._histories: dict[str, FileHistory | None] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """``sandbox.snapshots.enabled``."""
        return self.config.sandbox.snapshots.enabled

    def history(self, thread_id: str) -> FileHistory | None:
        """The thread's history; None when versions are off or its files are not on this host.

        Made outside the table's lock: making one acquires the thread's sandbox, which can wait
        long (a jail, the quota volume's lock, a container), and every other thread's captures
        waited for that lock with it. Two callers making the same thread's history at once get
        the same one (the provider and :meth:`FileHistory.of` hand out one per thread)."""
        with self._lock:
            known = thread_id in self._histories
            kept = self._histories.get(thread_id)
        if known and (kept is None or kept.kept()):  # not deleted since
            return kept
        made = thread_history(self.provider, self.config, thread_id)
        with self._lock:
            self._histories[thread_id] = made
        return made

    def _open_history(self, thread_id: str) -> FileHistory | None:
        """The thread's history if it is open here and the table is free now (never waits, never opens one)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._histories.get(thread_id)
        finally:
            self._lock.release()

    def capture(self, thread_id: str, checkpoint_id: str) -> str | None:
        """A version of the thread's files now, for ``checkpoint_id`` (never raises: one that
        cannot be made is None, and logged)."""
        history = self.history(thread_id)
        if history is None:
            return None
        try:
            return history.capture()
        except Exception as exc:  # noqa: BLE001 - a checkpoint must never fail on its files
            log.warning("file_version_not_kept", thread_id=thread_id, checkpoint_id=checkpoint_id, error=str(exc))
            return None

    def unchanged(self, thread_id: str) -> str | None:
        """The thread's last version when nothing changed in its files since, decided without
        waiting (on the event loop, sparing a trip to the capture pool); None: capture."""
        history = self._open_history(thread_id)
        try:
            return history.unchanged() if history is not None else None
        except Exception:  # noqa: BLE001 - the capture on the pool says what is wrong
            return None

    def record(self, thread_id: str, checkpoint_id: str, root: str | None, message_id: str | None = None) -> None:
        """Record ``root`` as the version of the saved checkpoint ``checkpoint_id`` (whose last
        message is ``message_id``), then prune, unless it is the version recorded last (a step
        that changed nothing stored nothing: no bound can have been crossed)."""
        history = self.history(thread_id)
        if history is None:
            return
        if not history.record(checkpoint_id, root, message_id):
            return
        try:
            history.prune()
        except Exception as exc:  # noqa: BLE001 - a version that cannot be pruned now is pruned next time: never fail the checkpoint
            log.warning("file_versions_not_pruned", thread_id=thread_id, error=str(exc))

    def record_now(self, thread_id: str, checkpoint_id: str, root: str | None, message_id: str | None = None) -> bool:
        """:meth:`record` when it needs no waiting and no prune: True when done; False when the
        thread's history is not open or is in use, or ``root`` is a new version other than the
        history's first (then call :meth:`record`, on the capture pool). Cheap enough for the
        checkpointer's own thread."""
        history = self._open_history(thread_id)
        try:
            return history is not None and root is not None and history.record_again(checkpoint_id, root, message_id)
        except Exception:  # noqa: BLE001 - recorded on the pool instead, which says what is wrong
            return False

    def restore(self, thread_id: str, checkpoint_id: str) -> RestoreReport | None:
        """Put back the files of ``checkpoint_id``; None (and a warning) when they are not kept."""
        history = self.history(thread_id)
        if history is None:
            return None
        try:
            root = history.version_of(checkpoint_id)
        except HistoryError as exc:
            log.warning("file_version_missing", thread_id=thread_id, checkpoint_id=checkpoint_id, error=str(exc))
            return None
        return history.restore(root)

    def _required(self, thread_id: str) -> FileHistory:
        """The thread's history; HistoryError (saying why) when there is none."""
        history = self.history(thread_id)
        if history is None:
            raise HistoryError(
                "this thread keeps no file versions (sandbox.snapshots.enabled is off, or its files "
                "are not on this host)"
            )
        return history

    def restore_strict(self, thread_id: str, checkpoint_id: str) -> RestoreReport:
        """Put back the files of ``checkpoint_id``; HistoryError when they are not kept here."""
        history = self._required(thread_id)
        return history.restore(history.version_of(checkpoint_id))

    def kept_checkpoints(self, thread_id: str) -> list[str]:
        """The thread's checkpoints whose files are kept, newest first."""
        history = self.history(thread_id)
        return [c for c, root, _ in reversed(history.versions()) if root is not None] if history else []

    def steps(self, thread_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The thread's last ``limit`` checkpoints with a version, newest first: id, time, whether
        its files are kept, and the files changed since the version before."""
        history = self.history(thread_id)
        if history is None:
            return []
        rows = history.versions_with_messages()[-(limit + 1) :]
        out: list[dict[str, Any]] = []
        previous: str | None = None
        for checkpoint_id, root, created, message_id in rows:
            changes = history.diff(previous, root) if previous and root and previous != root else None
            out.append(
                {
                    "checkpoint_id": checkpoint_id,
                    "version": root,
                    "kept": root is not None,
                    "message_id": message_id,
                    "created_at": datetime.fromtimestamp(created, UTC).isoformat(timespec="seconds"),
                    "changes": changes or {"added": [], "removed": [], "changed": []},
                }
            )
            previous = root or previous
        return list(reversed(out[-limit:]))

    def diff(self, thread_id: str, old: str, new: str) -> dict[str, list[str]]:
        """Files added, removed and changed from checkpoint ``old`` to checkpoint ``new``."""
        history = self._required(thread_id)
        return history.diff(history.version_of(old), history.version_of(new))

    async def collect(self, thread_id: str, saver: BaseCheckpointSaver, user: str | None = None) -> int:
        """Drop the versions of checkpoints the thread no longer has (after a rollback or a
        delete) and free what no kept version uses, on ``user``'s slots of the file pool (None:
        the local user); how many were dropped."""
        if not self.enabled:
            return 0
        live = {
            t.config["configurable"]["checkpoint_id"]
            async for t in saver.alist({"configurable": {"thread_id": thread_id}})
        }
        return await pools.run(pools.FILES, user, self.forget, thread_id, live)

    def forget(self, thread_id: str, live: set[str]) -> int:
        """Drop the versions of the thread's checkpoints not in ``live``; how many were dropped."""
        history = self.history(thread_id)
        return 0 if history is None else history.forget(live)

    def copy_files(self, source: str, target: str) -> None:
        """Give thread ``target`` the files of ``source`` and its versions (same checkpoint ids,
        as :func:`~herdsman.runtime.storage.thread_copy.copy_checkpoints` keeps them)."""
        src, dst = self.history(source), self.history(target)
        if src is None or dst is None:
            return
        now = src.capture()
        src.copy_into(dst)
        dst.restore(now)

    async def arestore(self, thread_id: str, checkpoint_id: str, user: str | None = None) -> RestoreReport | None:
        """:meth:`restore` off the event loop, on ``user``'s slots of the file pool (None: the local user)."""
        return await pools.run(pools.FILES, user, self.restore, thread_id, checkpoint_id)


def _last_message_id(checkpoint: Any) -> str | None:
    values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
    messages = values.get("messages") if isinstance(values, dict) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    return getattr(last, "id", None)


def _root_checkpoint(config: dict[str, Any], checkpoint: Any) -> tuple[str, str] | None:
    """(thread id, checkpoint id) of a checkpoint of a thread's root graph about to be saved."""
    conf = (config or {}).get("configurable") or {}
    checkpoint_id = checkpoint.get("id") if isinstance(checkpoint, dict) else None
    if conf.get("checkpoint_ns", "") or not conf.get("thread_id") or not checkpoint_id:
        return None
    return str(conf["thread_id"]), str(checkpoint_id)


def keep_file_versions(saver: BaseCheckpointSaver, versions: FileVersions) -> BaseCheckpointSaver:
    """Make ``saver`` record a file version with each root checkpoint it saves; returns it."""
    if not versions.enabled:
        return saver
    put, aput = saver.put, saver.aput

    def put_with_files(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        key = _root_checkpoint(config, checkpoint)
        root = versions.capture(*key) if key is not None else None
        saved = put(config, checkpoint, metadata, new_versions)
        if key is not None:
            versions.record(*key, root, _last_message_id(checkpoint))
        return saved

    async def aput_with_files(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        key = _root_checkpoint(config, checkpoint)
        user = pools.user_of(config)  # captures run on their own pool, a few at once per user
        root = versions.unchanged(key[0]) if key is not None else None  # nothing changed: no capture at all
        if key is not None and root is None:
            root = await pools.run(pools.CAPTURES, user, versions.capture, *key)
        if key is None:
            return await aput(config, checkpoint, metadata, new_versions)
        message_id = _last_message_id(checkpoint)
        if (aput_then := getattr(saver, "aput_then", None)) is not None:  # the version's row in the same trip
            saved, done = await aput_then(
                config, checkpoint, metadata, new_versions, lambda: versions.record_now(*key, root, message_id)
            )
        else:
            saved, done = await aput(config, checkpoint, metadata, new_versions), False
        if not done:
            await pools.run(pools.CAPTURES, user, versions.record, *key, root, message_id)
        return saved

    saver.put = put_with_files  # type: ignore[method-assign]  # the checkpointer is wrapped in place: every holder of it gets versions
    saver.aput = aput_with_files  # type: ignore[method-assign]  # the checkpointer is wrapped in place: every holder of it gets versions
    saver.aput_without_files = aput  # type: ignore[attr-defined]  # kept on the instance for the wrapped methods and for tests
    saver.file_versions = versions  # type: ignore[attr-defined]  # kept on the instance for the wrapped methods and for tests
    return saver


def plain_aput(saver: Any) -> Any:
    """``saver.aput`` without the file versions :func:`keep_file_versions` adds."""
    return getattr(saver, "aput_without_files", saver.aput)


def file_versions_of(saver: Any) -> FileVersions | None:
    """The versions :func:`keep_file_versions` attached to ``saver``, if any."""
    return getattr(saver, "file_versions", None)
