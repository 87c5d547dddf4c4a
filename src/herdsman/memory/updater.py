"""Apply pending updates: the memory model reads queued turns and the user's memory is rewritten.

:class:`MemoryUpdater` does one pass over the due rows of the queue (``run_pending``). Each row
is read by the memory model, filtered, written to the store, and only then removed from the queue. A
fact is kept only with the user's words that say it (:mod:`herdsman.memory.support`): one without
them is refused, and the audit trail records the refusal and its reason, as it records the quote of
each fact kept. A reply that is not JSON, a model error or a store error is recorded on the row,
which is retried later and dropped after ``memory.max_attempts``; a failure never reaches the user's
turn.
:class:`MemoryWorker` runs passes in the background of the agent's event loop (or a thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel

from herdsman.config.schema import MemoryConfig
from herdsman.logs import get_logger
from herdsman.memory.audit import Origin, record
from herdsman.memory.extraction import MemoryUpdate, build_prompt, filter_facts, parse_reply, reply_text, structured
from herdsman.memory.facts import Fact, fact_id
from herdsman.memory.graph import GraphStore
from herdsman.memory.grounding import STATED, grounded_relations
from herdsman.memory.queue import PendingUpdate, QueueClosedError, UpdateQueue
from herdsman.memory.retention import apply_retention
from herdsman.memory.store import MemoryStore, user_label
from herdsman.memory.support import unsupported

log = get_logger(__name__)


def user_texts(update: PendingUpdate) -> list[str]:
    """What the user said in the update's turns (a fact's quote must come from there)."""
    return [str(m.get("content", "")) for m in update.messages if str(m.get("role", "user")) in ("user", "human")]


def run_of(update: PendingUpdate) -> str | None:
    """The run that queued the newest of the update's turns (the queue keeps it on user turns)."""
    return next((str(m["run_id"]) for m in reversed(update.messages) if m.get("run_id")), None)


class MemoryUpdater:
    """Turns queued conversation into facts with the memory model."""

    def __init__(self, store: MemoryStore, queue: UpdateQueue, model: BaseChatModel, config: MemoryConfig) -> None:
        """``model`` writes the updates; ``config`` gives thresholds and retention."""
        self.store = store
        self.queue = queue
        self.model = model
        self.config = config

    def _apply(self, update: PendingUpdate, reply_text: str) -> int:
        user = update.user_id
        if not self.store.enabled_for(user):
            return 0  # the user turned memory off after the turn was queued: learn nothing
        if not self.queue.holds(update):
            return 0  # the user's memory was purged while the memory model read the turn
        result = parse_reply(reply_text, update.thread_id)
        origin = Origin("updater", update.thread_id, run_of(update))
        existing = self.store.facts(user)
        known = [user, self.store.summary(user), *(f.content for f in existing)]  # where the user's name may come from
        result.facts = self._supported(update, result, origin, known)
        known_ids = {f.id for f in existing}
        for fid in result.forget:
            if fid in known_ids:
                self.store.delete(user, fid, origin)
        fresh = filter_facts(
            result.facts, [f for f in existing if f.id not in result.forget], self.config.min_confidence
        )
        for fact in fresh:
            # keyed by the id of what the model wrote (a duplicate of a known fact takes that fact's id)
            self.store.put(user, fact, origin, quote=result.quotes.get(fact_id(fact.content)))
        if result.summary:
            self.store.set_summary(user, result.summary, origin)
        if self.config.graph:
            self._apply_graph(update, result, origin)
        self.store.prune(user, self.config.max_facts)
        apply_retention(self.store, self.config, user)
        return len(fresh)

    def _supported(self, update: PendingUpdate, result: MemoryUpdate, origin: Origin, known: list[str]) -> list[Fact]:
        """The facts of ``result`` whose quote is the user's words and says them (their confidence
        capped at what a stated fact gets); the others are refused, with the reason in the audit.
        ``known``: the user's id and what memory holds of them already (where their name may come from)."""
        said = user_texts(update)
        kept = []
        for fact in result.facts:
            quote = result.quotes.get(fact.id, "")
            reason = unsupported(fact.content, quote, said, known)
            if reason is None:
                kept.append(replace(fact, confidence=min(fact.confidence, STATED)))
                continue
            log.info("memory_fact_unsupported", fact_id=fact.id, reason=reason)
            record(
                self.store.store,
                user_label(update.user_id),
                "refuse",
                "fact",
                fact.id,
                origin,
                detail={"content": fact.content, "quote": quote, "reason": reason},
            )
        return kept

    def _apply_graph(self, update: PendingUpdate, result: MemoryUpdate, origin: Origin) -> None:
        """Write the entities and the relations the user's words support."""
        graph = GraphStore(self.store.store)
        for entity in result.entities:
            graph.put_entity(update.user_id, entity, origin)
        for relation in grounded_relations(result.relations, update.messages):
            if relation.confidence >= self.config.min_confidence:
                graph.put_relation(update.user_id, relation, origin)
        for ended in grounded_relations(result.ended, update.messages):  # after the new ones: what is still open
            if ended.confidence >= self.config.min_confidence:
                graph.end(update.user_id, ended, origin)

    def _prompt(self, update: PendingUpdate) -> str:
        return build_prompt(self.store.summary(update.user_id), self.store.facts(update.user_id), update.messages)

    def _failed(self, update: PendingUpdate, exc: Exception) -> None:
        dropped = self.queue.fail(update, f"{type(exc).__name__}: {exc}", self.config.max_attempts)
        log.warning("memory_update_failed", thread_id=update.thread_id, error=str(exc), dropped=dropped)

    def run_pending(self, now: float | None = None) -> int:
        """Process every due update once; returns how many were written."""
        done = 0
        for update in self.queue.claim(now=now):
            try:
                reply = structured(self.model).invoke(self._prompt(update))
                written = self._apply(update, reply_text(reply))
            except Exception as exc:  # noqa: BLE001 - a bad reply (MemoryModelError) or a down store never fails a turn
                self._failed(update, exc)
                continue
            self.queue.complete(update)
            log.info("memory_updated", thread_id=update.thread_id, user_id=update.user_id, facts=written)
            done += 1
        return done

    async def arun_pending(self, now: float | None = None) -> int:
        """Async :meth:`run_pending`: the model is awaited, the store is used in a worker thread."""
        done = 0
        for update in await asyncio.to_thread(self.queue.claim, now=now):
            try:
                prompt = await asyncio.to_thread(self._prompt, update)
                reply = await structured(self.model).ainvoke(prompt)
                written = await asyncio.to_thread(self._apply, update, reply_text(reply))
            except Exception as exc:  # noqa: BLE001 - a bad reply (MemoryModelError) or a down store never fails a turn
                await asyncio.to_thread(self._failed, update, exc)
                continue
            await asyncio.to_thread(self.queue.complete, update)
            log.info("memory_updated", thread_id=update.thread_id, user_id=update.user_id, facts=written)
            done += 1
        return done


class MemoryWorker:
    """Runs the updater after each queued turn's debounce, in the background.

    :meth:`kick` is cheap and idempotent: in an event loop it starts one task, elsewhere one
    daemon thread, which sleeps until the next row is due and stops when the queue is empty.
    """

    def __init__(self, updater: MemoryUpdater) -> None:
        """``updater``: what each pass runs."""
        self.updater = updater
        self._task: asyncio.Task[Any] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._kicked = False
        self._idle = False

    def _delay(self) -> float | None:
        try:
            due = self.updater.queue.next_due()
        except QueueClosedError:
            return None  # shutting down: what is queued stays for the next run
        return None if due is None else max(0.0, due - time.time())

    async def _loop(self) -> None:
        while True:
            self._kicked = False
            delay = await asyncio.to_thread(self._delay)
            if delay is None:
                if self._kicked:  # a turn was queued while we looked: look again
                    continue
                return
            if delay > 0:
                self._idle = True
                try:
                    await asyncio.sleep(min(delay, 60.0) + 0.01)
                finally:
                    self._idle = False
            try:
                await self.updater.arun_pending()
            except QueueClosedError:
                return

    def _thread_loop(self) -> None:
        while True:
            delay = self._delay()
            if delay is None:
                return
            time.sleep(min(delay, 60.0) + 0.01)
            try:
                self.updater.run_pending()
            except QueueClosedError:
                return

    def kick(self) -> None:
        """Make sure a pass will run when the next update is due."""
        with self._lock:
            self._kicked = True
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                if self._task is None or self._task.done():
                    # A fresh context: the memory model's calls must not join the run that kicked
                    # the worker (its callbacks and stream).
                    self._task = loop.create_task(
                        self._loop(), name="herdsman-memory-worker", context=contextvars.Context()
                    )
                return
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._thread_loop, name="herdsman-memory-worker", daemon=True)
                self._thread.start()

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait until the background task has processed every update due now (tests, shutdown).

        Updates waiting for a later retry stay queued.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = self._task
            if task is None or task.done():
                return
            if self._idle:
                return
            await asyncio.sleep(0.01)

    def stop(self) -> None:
        """Cancel the background task; what it had not written stays queued."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
