"""The executor of runs: a run's task, from its first record to its end.

One job: execute a run in this process. Its task writes the run's records (a new run), waits for
the thread's earlier runs and a free slot (``max_concurrency``), holds the run's queue row, streams
the graph and publishes each event into the stream bridge, and ends the run: the thread's status
settled, a rollback undone, the input and the words said so far kept after a stop
(``kept_input.py``, ``partial_answer.py``), the stream closed, the listeners told. Whatever fails
ends the run as ``error``; a run never stays pending or running. A run stopped by
:meth:`RunExecutor.handed_back` (the process hands its runs over, or lost the lease) is left to
the worker that claims it next.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any, cast

import structlog

from herdsman import pools
from herdsman.agents.lead import LEAD_AGENT_NAME, run_config
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.runtime.runs.inflight_tools import settle_inflight_tool_calls
from herdsman.runtime.runs.kept_input import keep_input
from herdsman.runtime.runs.partial_answer import PartialAnswer
from herdsman.runtime.runs.run_events import (
    EventTranslator,
    graph_modes,
    stream_with_events,
    subagent_outcome,
    token_usage,
    tool_results,
)
from herdsman.runtime.runs.run_queue import RunQueue
from herdsman.runtime.runs.run_table import RunTable
from herdsman.runtime.runs.run_types import (
    FINAL_STATUSES,
    KEEP_FINISHED,
    Run,
    RunListener,
    RunStatus,
    command_of,
    error_text,
    keeps_input,
    owned_configurable,
)
from herdsman.runtime.storage.file_versions import file_versions_of
from herdsman.runtime.storage.thread_copy import drop_run_checkpoints
from herdsman.runtime.storage.thread_files import remove_thread_files
from herdsman.runtime.storage.threads import ThreadStatus, ThreadStore, utc_now
from herdsman.runtime.streaming.serde import dumps
from herdsman.runtime.streaming.stream_bridge import END_EVENT, StreamBridge, StreamEvent
from herdsman.turns.run_scope import open_scope, with_scope

log = get_logger(__name__)


class RunExecutor:
    """Executes runs of one compiled graph in this process (see the module docstring)."""

    def __init__(
        self,
        graph: Any,
        bridge: StreamBridge,
        threads: ThreadStore,
        config: HerdsmanConfig,
        table: RunTable,
        queue: RunQueue,
        worker_id: str,
        listeners: list[RunListener],
        *,
        max_concurrency: int = 10,
        pause: Callable[[], Awaitable[None]] | None = None,
        sandbox: Any = None,
    ) -> None:
        """``listeners`` is shared with the manager (listeners added later are heard too); see
        :class:`~herdsman.runtime.runs.runs.RunManager` for ``max_concurrency``, ``pause`` and ``sandbox``."""
        self.graph = graph
        self.bridge = bridge
        self.threads = threads
        self.config = config
        self.table = table
        self.queue = queue
        self.worker_id = worker_id
        self.listeners = listeners
        self.sandbox = sandbox
        self._slots = asyncio.Semaphore(max_concurrency)
        self._pause = pause
        self.handing_over = False  # runs stopped now go back to the queue instead of ending
        self.rolled_back_ids: dict[str, str] = {}  # run id -> thread id of the runs rolled back lately

    def lease_end(self) -> float:
        """When a lease taken or renewed now runs out (seconds since the epoch)."""
        return time.time() + self.config.runs.lease_seconds

    async def _hold(self, run: Run) -> None:
        """Record in the queue that this worker starts ``run`` (and which attempt it is)."""
        try:
            attempt = await self.queue.start(run.run_id, self.worker_id, self.lease_end(), run.checkpoint_before)
        except Exception as exc:  # noqa: BLE001 - the run goes on; only a takeover after a crash is lost
            log.warning("run_not_held", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))
            return
        if attempt == 0:  # another worker claimed it meanwhile (this process stalled): it is that worker's now
            run.lease_lost = True
            log.warning("run_lease_lost", run_id=run.run_id, thread_id=run.thread_id, worker_id=self.worker_id)
            raise asyncio.CancelledError
        run.attempt = attempt

    def graph_config(self, run: Run) -> dict[str, Any]:
        """The graph's config: the client's ``configurable`` (checked in :meth:`check`) under the
        keys the manager sets (``run_input.RESERVED_CONFIGURABLE``), merged as dicts, never as
        keyword arguments, so no client key can collide with a parameter name."""
        spec = run.spec
        user = dict(spec.config or {})
        owned = {**owned_configurable(spec), "run_id": run.run_id}
        if spec.checkpoint_id:
            owned.update(checkpoint_id=spec.checkpoint_id, checkpoint_ns=spec.checkpoint_ns)
        cfg = run_config(self.config, spec.thread_id)
        cfg["configurable"] = {**(user.pop("configurable", None) or {}), **cfg["configurable"], **owned}
        if "recursion_limit" in user:
            cfg["recursion_limit"] = user.pop("recursion_limit")
        cfg["metadata"] = {
            **(user.pop("metadata", None) or {}),
            **spec.metadata,
            "run_id": run.run_id,
            "assistant_id": spec.assistant_id,
            "graph_id": LEAD_AGENT_NAME,
        }
        cfg.update({k: v for k, v in user.items() if k in ("tags", "run_name")})
        return cfg

    async def set_status(self, run: Run, status: RunStatus) -> None:
        """Set the run's status and save its record (a store that fails is logged: the status in
        memory is what decides whether the thread is busy)."""
        run.status = status
        run.updated_at = utc_now()
        try:
            await self.threads.put_run(run.to_dict())
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning(
                "run_record_not_saved", run_id=run.run_id, thread_id=run.thread_id, status=status, error=error_text(exc)
            )

    def set_status_later(self, run: Run, status: RunStatus) -> None:
        """Set the run's status now and leave its record to :meth:`end`, which saves it with the
        thread's status in one hand-off (the status in memory is what clients of this process read)."""
        run.status = status
        run.updated_at = utc_now()
        run.record_due = True

    async def save_due_record(self, run: Run) -> None:
        """Save the record :meth:`set_status_later` left unsaved, if any."""
        if run.record_due:
            run.record_due = False
            await self.set_status(run, run.status)

    async def publish(self, run: Run, event: str, data: Any) -> None:
        """Publish ``event`` with ``data`` on the run's stream."""
        await self.bridge.publish(run.run_id, event, dumps(data))

    async def publish_metadata(self, run: Run) -> None:
        """Publish a new run's ``metadata`` event and keep it as ``run.first_event``: the stream
        of the request that created the run sends it at once, without reading it back."""
        data = dumps({"run_id": run.run_id, "attempt": 1})
        run.first_event = StreamEvent(await self.bridge.publish(run.run_id, "metadata", data), "metadata", data)

    async def _save_new(self, run: Run) -> None:
        """Write a new run's record and mark its thread busy (after its first event went out).

        A store that fails here is logged, not fatal: the run goes on, and its record is written
        again at each change of status.
        """
        try:
            await self.threads.update(  # one hand-off for both records on SQLite
                run.thread_id,
                metadata={"graph_id": LEAD_AGENT_NAME, "assistant_id": run.spec.assistant_id},
                status="busy",
                run=run.to_dict(),
            )
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_record_not_saved", run_id=run.run_id, thread_id=run.thread_id, error=str(exc))
        finally:
            run.saved.set()

    async def execute(
        self, run: Run, previous: list[asyncio.Task], *, taken_over: bool = False, resume: bool = False
    ) -> None:
        """Save the run's records (a new run), wait for the thread's earlier runs and a free
        slot, then run the graph (``resume``: from the run's last checkpoint); never raises, and
        always ends the run (``error`` when anything failed)."""
        run.began = True
        try:
            if not taken_over:
                await self._save_new(run)
            if previous:
                await asyncio.wait(previous)
            if run.cancel_action is not None:  # cancelled before its task began
                raise asyncio.CancelledError
            await self._slots.acquire()
        except asyncio.CancelledError:
            if not await self.handed_back(run):
                await self._stop_unstarted(run, previous)
            return
        except Exception as exc:  # noqa: BLE001 - a run that cannot be set up ends as an error
            await self.fail(run, exc)
            await self.end(run, 0.0)
            return
        try:
            await self._run_graph(run, resume=resume)
        except Exception as exc:  # noqa: BLE001 - a safety net: no run may stay pending or running
            log.exception("run_not_ended", run_id=run.run_id, thread_id=run.thread_id)
            if run.status not in FINAL_STATUSES:
                await self.fail(run, exc)
                await self.end(run, 0.0)
        finally:
            self._slots.release()

    async def handed_back(self, run: Run) -> bool:
        """When :meth:`hand_over` stopped ``run`` (no one cancelled it): release its hold and
        forget it here, leaving its records and stream to the worker that claims it next; when
        it was stopped because its lease was lost: just forget it here."""
        if run.lease_lost:  # another worker holds it now: its records and stream are that worker's
            self.table.forget(run.run_id)
            return True
        if not self.handing_over or run.cancel_action is not None:
            return False
        try:
            await self.queue.release(run.run_id, self.worker_id)
        except Exception as exc:  # noqa: BLE001 - its lease then runs out, and it is claimed later
            log.warning("run_not_released", run_id=run.run_id, error=error_text(exc))
        self.table.forget(run.run_id)
        log.info("run_handed_over", run_id=run.run_id, thread_id=run.thread_id)
        return True

    async def _stop_unstarted(self, run: Run, previous: list[asyncio.Task]) -> None:
        """End a run stopped before its graph began: its input kept, after what the thread's runs
        ahead of it wrote (it waits for them), then ``interrupted``."""
        try:
            if previous and keeps_input(run):
                await asyncio.wait(previous)
        except asyncio.CancelledError:  # stopped again while it waited (the process stops): it ends now
            log.warning("run_input_not_kept", run_id=run.run_id, thread_id=run.thread_id, error="stopped again")
        else:
            await self.keep_input(run)
        await self.set_status(run, "interrupted")
        await self.end(run, 0.0)

    async def end_cancelled(self, run: Run) -> None:
        """End a run that was cancelled while no worker held it, now that its turn has come
        (claimed in order, or nothing of its thread ahead): its input kept, ``interrupted``, and
        rolled back when that was asked."""
        await self.keep_input(run)
        await self.set_status(run, "interrupted")
        await self.end(run, 0.0)

    async def fail(self, run: Run, exc: BaseException) -> None:
        """End ``run`` as an error: status, record, and an ``error`` event for its stream."""
        run.error = {"error": type(exc).__name__, "message": error_text(exc)}
        await self.set_status(run, "error")
        try:
            await self.publish(run, "error", run.error)
        except Exception as publish_exc:  # noqa: BLE001 - the status is what frees the thread
            log.warning("run_error_not_published", run_id=run.run_id, error=error_text(publish_exc))
        log.warning("run_failed", run_id=run.run_id, error=run.error["error"], message=run.error["message"])

    async def _run_graph(self, run: Run, *, resume: bool = False) -> None:
        """Stream the graph for ``run`` and publish what it yields; never raises.

        ``resume`` (a run another process had started): when the thread's head checkpoint is
        the run's own, the graph goes on from it (``None`` input) instead of starting again.
        """
        started = time.monotonic()
        spec = run.spec
        translator = EventTranslator(spec.stream_mode)
        said = PartialAnswer()
        structlog.contextvars.bind_contextvars(run_id=run.run_id, thread_id=run.thread_id)
        try:
            cfg = self.graph_config(run)
            if self._pause is not None:
                await self._pause()  # a burst of new requests goes first, then this run starts
            # the saved head, not a state snapshot: a head whose writes cannot be applied must
            # not stop a run that starts from an earlier checkpoint
            # (read so that the graph's loop gets it without a read of its own, where the saver can)
            saver = self.graph.checkpointer
            if (read_head := getattr(saver, "aget_head", None)) is not None:
                head = await read_head(run.thread_id)
            else:
                head = await saver.aget_tuple({"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}})
            resuming = resume and head is not None and (head.metadata or {}).get("run_id") == run.run_id
            if not resume:
                run.checkpoint_before = (head.config.get("configurable") or {}).get("checkpoint_id") if head else None
            if resuming:
                for key in ("checkpoint_id", "checkpoint_ns"):  # go on from the head, not from where it began
                    cfg["configurable"].pop(key, None)
            elif (
                spec.checkpoint_id
                and not spec.checkpoint_ns
                and (versions := file_versions_of(self.graph.checkpointer))
            ):
                # time travel brings the files back too
                await versions.arestore(run.thread_id, spec.checkpoint_id, spec.user)
            run.executed = True
            await self._hold(run)
            if resuming:  # a command in flight when its worker died is reported, not run again
                await settle_inflight_tool_calls(self.graph, cfg)
            await self.set_status(run, "running")
            for listener in self.listeners:
                listener.run_started(run)
            graph_input = None if resuming else command_of(spec.command) if spec.command else spec.input
            if run.cancel_action is not None:  # a cancel that an await above lost (a library that swallows it)
                raise asyncio.CancelledError
            kwargs: dict[str, Any] = {
                "stream_mode": graph_modes(spec.stream_mode),
                "subgraphs": True,
                "interrupt_before": spec.interrupt_before,
                "interrupt_after": spec.interrupt_after,
            }
            run.scope = open_scope(self.config.subagents, cfg)  # fresh for each execution of the run
            kwargs["context"] = with_scope(spec.context, run.scope)
            if spec.durability:
                kwargs["durability"] = spec.durability
            elif file_versions_of(self.graph.checkpointer):
                kwargs["durability"] = "sync"  # each step's files are captured before the next step runs

            if "events" in spec.stream_mode:
                chunks = stream_with_events(self.graph, graph_input, cfg, kwargs)
            else:
                chunks = self.graph.astream(graph_input, cfg, **kwargs)
            # closed on a stop too: a stop that finds the graph between two chunks (publishing one)
            # left it suspended, and the checkpoints it had begun to save were written (or not)
            # only when the event loop finalized it, after the run had ended
            async with aclosing(cast(AsyncGenerator[Any, None], chunks)):
                async for namespace, mode, chunk in chunks:
                    said.see(tuple(namespace), mode, chunk)
                    if mode == "updates":
                        self._report_usage(run, chunk)
                    elif mode == "custom" and (outcome := subagent_outcome(chunk)):
                        for listener in self.listeners:
                            listener.subagent_finished(run, outcome)
                    if namespace and not spec.stream_subgraphs:
                        continue
                    for name, data in translator.translate(tuple(namespace), mode, chunk):
                        await self.publish(run, name, data)
                    if self._pause is not None:
                        await self._pause()
            run.result = translator.final_values()
            if translator.interrupts and "values" in spec.stream_mode:
                await self.publish(run, "values", run.result)
            self.set_status_later(run, "success")  # saved with the thread going idle, in one hand-off
        except asyncio.CancelledError:
            if await self.handed_back(run):
                return
            # the input and the words said so far go into the thread before the status turns final: a
            # delete that waits for the final status must find them there, not have them written after it
            await self.keep_input(run)
            await self._keep_said(run, said)
            await self.set_status(run, "interrupted")
            log.info("run_cancelled", action=run.cancel_action)
        except Exception as exc:  # noqa: BLE001 - any failure of the agent ends the run as an error
            await self.fail(run, exc)
        finally:
            run.scope = None  # the run's sub-agents are over; nothing of it is kept
            structlog.contextvars.unbind_contextvars("run_id", "thread_id")
        await self.end(run, time.monotonic() - started, interrupted=bool(translator.interrupts))

    async def keep_input(self, run: Run) -> None:
        """After a stop: make sure the run's input is in the thread (``kept_input.py``), even when the
        run was stopped before its graph began; a run that had not begun counts as executed once it
        wrote its input (so a rollback asked later removes it, and the thread shows it interrupted)."""
        if not keeps_input(run):
            return
        try:
            saver = self.graph.checkpointer
            if not run.executed:
                head = await saver.aget_tuple({"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}})
                run.checkpoint_before = (head.config.get("configurable") or {}).get("checkpoint_id") if head else None
                if run.spec.checkpoint_id and not run.spec.checkpoint_ns and (versions := file_versions_of(saver)):
                    # as the run would have
                    await versions.arestore(run.thread_id, run.spec.checkpoint_id, run.spec.user)
                run.executed = True
            kwargs: dict[str, Any] = {}
            if run.spec.durability or file_versions_of(saver):
                kwargs["durability"] = run.spec.durability or "sync"
            if await keep_input(self.graph, self.graph_config(run), run.spec.input, **kwargs):
                log.info("run_input_kept", run_id=run.run_id, thread_id=run.thread_id)
        except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - the stop itself must still end the run
            # (a second stop, the process's, cancels the run's task again while it writes)
            log.warning("run_input_not_kept", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))

    async def _keep_said(self, run: Run, said: PartialAnswer) -> None:
        """After a stop (not a rollback, which undoes the run): keep the streamed words of the
        answer in progress in the thread."""
        if run.cancel_action == "rollback":
            return
        try:
            if await said.keep(self.graph, run.thread_id):
                log.info("run_partial_answer_kept", run_id=run.run_id)
        except Exception as exc:  # noqa: BLE001 - the stop itself must still end the run
            log.warning("run_partial_answer_not_kept", run_id=run.run_id, error=error_text(exc))

    @staticmethod
    def _has_breakpoints(run: Run) -> bool:
        """Whether the run could stop at a breakpoint (the lead graph has none of its own)."""
        return bool(run.spec.interrupt_before or run.spec.interrupt_after)

    async def _has_pending_tasks(self, thread_id: str) -> bool:
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        return bool(snapshot.next)

    def _report_usage(self, run: Run, update: Any) -> None:
        for model, tokens_in, tokens_out in token_usage(update):
            for listener in self.listeners:
                listener.model_tokens(run, model, tokens_in, tokens_out)
        for tool, failed in tool_results(update):
            for listener in self.listeners:
                listener.tool_finished(run, tool, failed)

    async def _settle_thread(self, run: Run, interrupted: bool) -> None:
        """After ``run``: delete its temporary thread, or set the thread's status (when no other
        run of it is in progress)."""
        if run.spec.temporary:
            await self.save_due_record(run)  # before its thread goes, never after
            await self.graph.checkpointer.adelete_thread(run.thread_id)
            if versions := file_versions_of(self.graph.checkpointer):
                await versions.collect(run.thread_id, self.graph.checkpointer, run.spec.user)
            # its files and sandbox too (they stayed on disk: <home>/threads/<id> of every stateless run)
            await pools.run(
                pools.FILES, run.spec.user, remove_thread_files, self.sandbox, self.config.resolve_home(), run.thread_id
            )
            await self.threads.delete(run.thread_id)
        elif not self.table.active(run.thread_id):
            status: ThreadStatus = "idle"
            if run.status == "error":
                status = "error"
            elif run.status == "interrupted" and run.executed and run.cancel_action == "interrupt":
                status = "interrupted"  # stopped mid-way: LangGraph's server shows a cancelled run's thread so
            elif run.status == "success" and (
                interrupted or (self._has_breakpoints(run) and await self._has_pending_tasks(run.thread_id))
            ):
                status = "interrupted"  # an interrupt() or a breakpoint (interrupt_before/after)
            await self.threads.update(run.thread_id, status=status, run=run.to_dict() if run.record_due else None)
            run.record_due = False

    async def _rollback(self, run: Run) -> None:
        """Put the thread back to the checkpoint it had before ``run`` and forget the run: its
        checkpoints are deleted (LangGraph's server does so: the thread's history no longer shows
        them), and its files are back as they were at that checkpoint."""
        saver = self.graph.checkpointer
        versions = file_versions_of(saver)
        if not run.executed:
            pass  # cancelled while pending: it changed nothing
        elif run.checkpoint_before is None:
            await saver.adelete_thread(run.thread_id)
            if versions:
                await versions.collect(run.thread_id, saver, run.spec.user)
        else:
            if versions:
                await versions.arestore(run.thread_id, run.checkpoint_before, run.spec.user)  # and its files
            await drop_run_checkpoints(saver, run.thread_id, run.run_id)
            if versions:
                await versions.collect(run.thread_id, saver, run.spec.user)
        await self.threads.delete_run(run.thread_id, run.run_id)
        self.table.forget(run.run_id)
        self.rolled_back_ids[run.run_id] = run.thread_id
        while len(self.rolled_back_ids) > KEEP_FINISHED:
            del self.rolled_back_ids[next(iter(self.rolled_back_ids))]  # the oldest first (dicts keep their order)
        log.info("run_rolled_back", run_id=run.run_id, thread_id=run.thread_id)

    async def end(self, run: Run, seconds: float, interrupted: bool = False) -> None:
        """Settle the thread's status, close the run's stream, tell the listeners.

        The thread is settled first, so a client that reads it as soon as the stream ends sees
        it idle (as LangGraph's server answers). Each step is tried on its own (failures are
        logged): a store or bridge that fails here must not keep the others from happening.

        A run stopped with ``rollback`` is rolled back first, while its queue row still holds the
        thread: a run queued behind it (``multitask_strategy: rollback`` sent to another gateway)
        starts only from the thread as it was before this run.
        """
        if run.cancel_action == "rollback" and run.status == "interrupted":
            try:
                await self._rollback(run)
            except Exception as exc:  # noqa: BLE001 - see the docstring
                log.warning("run_not_rolled_back", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))
        try:
            await self.queue.remove(run.run_id)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_not_dequeued", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))
        try:
            await self._settle_thread(run, interrupted)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("thread_status_not_saved", run_id=run.run_id, thread_id=run.thread_id, error=error_text(exc))
        await self.save_due_record(run)  # not saved with the thread's status (another run holds it, or that failed)
        try:
            await self.publish(run, END_EVENT, None)
            await self.bridge.finish(run.run_id)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("run_stream_not_closed", run_id=run.run_id, error=error_text(exc))
        for listener in self.listeners:
            listener.run_finished(run, seconds)
        self.table.finished(run)
        log.info(
            "run_finished", run_id=run.run_id, thread_id=run.thread_id, status=run.status, seconds=round(seconds, 3)
        )
