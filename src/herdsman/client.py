"""The embedded Python client: run the lead agent in-process, stream what it does, list threads.

::

    async with HerdsmanClient(config) as client:
        async for event in client.stream("Write a haiku to outputs/haiku.txt"):
            print(event)

Events are small dataclasses (:class:`TextDelta`, :class:`ToolCall`, :class:`ToolResult`,
:class:`TaskEvent` for sub-agents, :class:`CheckNote` when the completion check sends the model
back, :class:`TextCall` for a tool call the model wrote as text (a failed step: its text is not
streamed as the answer), :class:`RunFinished`), so the CLI and tests consume the same stream. The
lead's own messages come from the root graph; sub-agents stream as subgraphs under
``tools:<task_id>`` and surface here through their ``task_*`` events.

Each run also notes its thread in the gateway's thread records (``runtime/storage/threads.py``, in the
record store of the same home: ``<home>/gateway.sqlite`` or the PostgreSQL database), with the
metadata a gateway run gives it (``graph_id``, ``assistant_id``), so a thread started here is in
the web UI's thread list (``POST /threads/search``) and :meth:`HerdsmanClient.threads` lists the
gateway's threads too: one list for the CLI and the UI. The client acts as the host's owner:
with ``gateway.api_keys``, its threads belong to the first admin key's user (the web UI lists
them for that key, no other key sees them), and it lists every thread of the home, whoever made
it (it reads the home's files; a key is what the gateway asks of those who do not).

Each call of :meth:`HerdsmanClient.stream` is one run with a run scope of its own (sub-agent
gate, per-run cap, token budget), passed in the graph's runtime context; the client holds it
while the run streams, so :meth:`HerdsmanClient.stop_subagent` can stop one of its sub-agents.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from herdsman import pools
from herdsman.agents.lead import LEAD_AGENT_NAME, create_lead_agent, lead_resolver, open_memory, run_config
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.memory.service import MemoryService
from herdsman.models.call_drafts import DRAFT_EVENT
from herdsman.runtime.runs.final_answer import final_answer, request_language
from herdsman.runtime.runs.partial_answer import PartialAnswer
from herdsman.runtime.runs.run_outcome import run_outcome
from herdsman.runtime.runs.skill_learning import SkillLearner
from herdsman.runtime.storage.assistants import AssistantRecord, run_config_on
from herdsman.runtime.storage.checkpointer import open_checkpointer
from herdsman.runtime.storage.file_versions import FileVersions, file_versions_of, keep_file_versions
from herdsman.runtime.storage.record_store import open_record_store
from herdsman.runtime.storage.threads import OWNER_KEY, SCAN_LIMIT, ThreadStatus, ThreadStore
from herdsman.runtime.tracing.harness_notes import is_note, note_rules
from herdsman.runtime.tracing.transcripts import save_transcript
from herdsman.sandbox.base import OUTPUTS, SandboxProvider
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.turns.run_scope import RunScope, open_scope, with_scope
from herdsman.turns.text_calls import call_start, calls_as_text

log = get_logger(__name__)

MODEL_NODE = "model"
TOOLS_NODE = "tools"


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's answer, as it streams."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asked for a tool."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """A tool finished; ``is_error`` when it reported a failure."""

    id: str
    name: str
    content: str
    is_error: bool


@dataclass(frozen=True)
class TaskEvent:
    """A sub-agent event: ``kind`` is task_queued, task_started, task_progress, task_completed,
    task_failed, task_timed_out or task_cancelled; ``data`` has task_id, subagent_type, usage..."""

    kind: str
    data: dict[str, Any]
    namespace: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckNote:
    """The completion check found the reply lacking and sent the model back with a note (not part
    of the conversation: shown folded, see :mod:`herdsman.runtime.tracing.harness_notes`); ``rules``: the
    rule ids of its findings, None when the note carries none; ``language``: the request's, for
    the line a person reads (:func:`herdsman.runtime.tracing.harness_notes.fold_line`)."""

    text: str
    rules: list[str] | None
    language: str = "en"


@dataclass(frozen=True)
class TextCall:
    """The model wrote tool calls as text instead of making them: nothing ran, a failed step
    (see :mod:`herdsman.turns.text_calls`); ``names``: the tools it tried to call."""

    names: list[str]
    text: str


@dataclass(frozen=True)
class CallDraft:
    """The model is writing a tool call that arrives whole only at the end (the embedded model):
    its text so far (see :mod:`herdsman.models.call_drafts`); the :class:`ToolCall` replaces it."""

    name: str | None
    index: int
    text: str
    chars: int


@dataclass(frozen=True)
class RunFinished:
    """The run ended: the final answer, the thread's title, the files in outputs, and
    ``problems``: why it did not deliver (a failure, a limit, a requested file missing; see
    :mod:`herdsman.runtime.runs.run_outcome`), empty when it did, in ``language`` (the request's)."""

    thread_id: str
    answer: str
    title: str | None
    outputs: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    language: str = "en"


Event = TextDelta | CallDraft | ToolCall | ToolResult | TaskEvent | CheckNote | TextCall | RunFinished


@dataclass(frozen=True)
class ThreadSummary:
    """One saved thread, as listed by :meth:`HerdsmanClient.threads`."""

    thread_id: str
    title: str | None
    messages: int
    updated_at: str | None


def new_thread_id() -> str:
    """A fresh thread id."""
    return uuid.uuid4().hex


def _content_text(message: AnyMessage) -> str:
    return message.text if hasattr(message, "text") else str(message.content)


def _prose_delta(streamed: dict[str | None, str], message_id: str | None, piece: str) -> str:
    """The part of ``piece`` to show as the answer's words: none of a tool call the model
    writes as text (from its ``<tool_call>`` or ``{"name": ...`` on), which is a failed step
    (:class:`TextCall`), not prose; ``streamed`` keeps each message's text so far."""
    before = streamed.get(message_id, "")
    whole = streamed[message_id] = before + piece
    cut = call_start(whole)
    return whole[len(before) :] if cut is None else whole[len(before) : cut]


class HerdsmanClient:
    """Run the lead agent in this process, with the configured checkpointer and sandbox."""

    def __init__(
        self,
        config: HerdsmanConfig | None = None,
        *,
        model: BaseChatModel | None = None,
        model_name: str | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        sandbox_provider: SandboxProvider | None = None,
        model_overrides: Mapping[str, BaseChatModel] | None = None,
        assistant: AssistantRecord | None = None,
    ) -> None:
        """``model`` or ``model_name`` override the configured lead model; ``model_overrides``
        maps configured model names to instances (sub-agent models in tests); the rest come from config.
        ``assistant`` is a custom agent whose settings every run uses (``herdsman run --agent``)."""
        self.config = config or HerdsmanConfig()
        self._model = model
        self._model_name = model_name
        self._checkpointer = checkpointer
        self._provider = sandbox_provider
        self._model_overrides = dict(model_overrides or {})
        self._assistant = assistant
        self._stack = AsyncExitStack()
        self._agent: Any = None
        self._scopes: dict[str, RunScope] = {}  # thread id -> the scope of its run streaming now
        self._records: ThreadStore | None = None  # the gateway's thread records (with our own checkpointer)
        self._learner = SkillLearner(self.config) if self.config.skills.learning.enabled else None

    async def __aenter__(self) -> HerdsmanClient:
        """Open the checkpointer and build the agent (and size the thread pools, see :mod:`herdsman.pools`)."""
        pools.configure(self.config.pools)
        if self.config.gateway.api_keys and self.config.gateway.host_owner() is None:
            log.warning(
                "threads_without_owner",
                fix="gateway.api_keys has no admin key, so no key of the web UI sees the "
                "threads made here: add an entry {key: ..., role: admin} under gateway.api_keys in config.yaml",
            )
        if self._checkpointer is None:
            self._checkpointer = await self._stack.enter_async_context(open_checkpointer(self.config))
            # the gateway's records live beside the checkpoints it opened; a checkpointer passed
            # in (a test's) has no gateway beside it
            self._records = ThreadStore(await self._stack.enter_async_context(open_record_store(self.config)))
        if self._provider is None:
            self._provider = build_sandbox_provider(self.config)
            self._stack.callback(self._provider.close)
        if file_versions_of(self._checkpointer) is None:
            keep_file_versions(self._checkpointer, FileVersions(self.config, self._provider))
        lead_name, resolver = lead_resolver(self.config, self._model, self._model_name, self._model_overrides)
        memory = open_memory(self.config, resolver, lead_name, None) if self.config.memory.enabled else None
        if memory is not None:
            self._stack.callback(memory.close)
            self._stack.push_async_callback(self._flush_memory, memory)
        self._agent = create_lead_agent(
            self.config,
            model=self._model,
            model_name=self._model_name,
            checkpointer=self._checkpointer,
            sandbox_provider=self._provider,
            model_overrides=self._model_overrides,
            memory=memory,
            resolver=resolver,  # one resolver: the memory model and the lead's are built once
            keep_transcript=partial(save_transcript, self.config),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Write what memory still has queued and the skill proposals under way, then close what
        :meth:`__aenter__` opened."""
        if self._learner is not None:
            await self._learner.wait()
        await self._stack.aclose()

    @staticmethod
    async def _flush_memory(memory: MemoryService) -> None:
        """Before the process ends: the turns of this session go into memory now, not at the next run."""
        written = await memory.flush()
        if written:
            log.info("memory_flushed", updates=written)

    @property
    def agent(self) -> Any:
        """The compiled lead agent graph."""
        if self._agent is None:
            raise RuntimeError("use HerdsmanClient inside 'async with'")
        return self._agent

    async def stream(self, message: str, thread_id: str | None = None) -> AsyncIterator[Event]:
        """Send ``message`` on ``thread_id`` (new when omitted) and yield what happens."""
        thread_id = thread_id or new_thread_id()
        config = run_config(self.config, thread_id)
        if self._assistant is not None:  # its settings; its max_steps replaces the default limit
            config.update(run_config_on(self._assistant, {"configurable": config["configurable"]}, None)[0] or {})
        said = PartialAnswer()
        scope = self._scopes[thread_id] = open_scope(self.config.subagents, config)
        await self._note_thread(thread_id)
        log.info("run_started", thread_id=thread_id)
        status: ThreadStatus = "error"
        try:
            async for event in self._events(message, config, said, scope):
                yield event
            status = "idle"
        except GeneratorExit:  # the caller stopped reading: the run stops where it was
            status = "idle"
            raise
        except asyncio.CancelledError:  # Ctrl-C: keep the words of the answer the user saw
            status = "idle"
            if await said.keep(self.agent, thread_id):
                log.info("run_partial_answer_kept", thread_id=thread_id)
            raise
        finally:
            if self._scopes.get(thread_id) is scope:
                del self._scopes[thread_id]
            await self._note_thread(thread_id, status)
        state = await self.agent.aget_state(config)
        values = state.values
        log.info("run_finished", thread_id=thread_id)
        outcome = run_outcome(values)
        if self._learner is not None and outcome.ok:  # after the answer; waited for at close
            self._learner.start(values, None, thread_id)
        outputs = await pools.run(pools.FILES, None, self.outputs, thread_id)  # never on the event loop
        yield RunFinished(
            thread_id,
            final_answer(values.get("messages", [])),
            values.get("title"),
            outputs,
            dict(values.get("usage") or {}),
            outcome.problems,
            outcome.language,
        )

    async def _note_thread(self, thread_id: str, status: ThreadStatus | None = None) -> None:
        """Make (or touch) the thread's record, with the metadata a gateway run gives it and
        ``status`` when the run is over; a record store that fails is logged, never fatal. With
        API keys, a thread with no owner gets the host's owner (the first admin key's user, see
        :meth:`~herdsman.config.schema.GatewayConfig.host_owner`), so the web UI lists it for
        that key; a thread another user made keeps its owner."""
        if self._records is None:
            return
        assistant = self._assistant.assistant_id if self._assistant is not None else LEAD_AGENT_NAME
        metadata: dict[str, Any] = {"graph_id": LEAD_AGENT_NAME, "assistant_id": assistant}
        owner = self.config.gateway.host_owner()
        try:
            record = await self._records.get(thread_id)
            if owner is not None and (record is None or OWNER_KEY not in record.metadata):
                metadata[OWNER_KEY] = owner  # the host's admin; another user's thread keeps its owner
            if record is None:
                await self._records.create(thread_id, metadata, if_exists="do_nothing")
            await self._records.update(thread_id, metadata=metadata, status=status)
        except Exception as exc:  # noqa: BLE001 - the run matters more than its listing
            log.warning("thread_record_failed", thread_id=thread_id, error=str(exc))

    def stop_subagent(self, thread_id: str, task_id: str) -> bool:
        """Stop the sub-agent ``task_id`` (its task call's id) of the run streaming on ``thread_id``;
        the run and the other sub-agents go on. False when no such sub-agent is running."""
        scope = self._scopes.get(thread_id)
        return scope is not None and scope.cancel(task_id)

    async def _events(
        self, message: str, config: dict[str, Any], said: PartialAnswer, scope: RunScope
    ) -> AsyncIterator[Event]:
        """The events of one run of the lead agent on ``message`` (all but the end), under the run
        scope ``scope``; ``said`` follows the answer's words as they stream."""
        names: dict[str, str] = {}
        streamed: dict[str | None, str] = {}  # a model message's text so far, by its id
        language = request_language([HumanMessage(content=message)])
        async for namespace, mode, chunk in self.agent.astream(
            {"messages": [HumanMessage(content=message)]},
            config,
            context=with_scope(None, scope),
            stream_mode=["messages", "updates", "custom"],
            subgraphs=True,
            # with file versions, each step's files are captured before the next step runs
            durability="sync" if self.file_versions is not None else "async",
        ):
            said.see(tuple(namespace), mode, chunk)
            if mode == "custom":
                if isinstance(chunk, dict) and str(chunk.get("type", "")).startswith("task_"):
                    yield TaskEvent(chunk["type"], chunk, tuple(namespace))
                elif not namespace and isinstance(chunk, dict) and chunk.get("type") == DRAFT_EVENT:
                    yield CallDraft(
                        chunk.get("name"),
                        int(chunk.get("index") or 0),
                        str(chunk.get("text") or ""),
                        int(chunk.get("chars") or 0),
                    )
                continue
            if namespace:
                continue  # a sub-agent's own messages; its task_* events summarize them
            if mode == "messages":
                piece, meta = chunk
                if meta.get("langgraph_node") == MODEL_NODE and isinstance(piece, AIMessageChunk) and piece.text:
                    delta = _prose_delta(streamed, piece.id, piece.text)
                    if delta:
                        yield TextDelta(delta)
                continue
            for node, update in (chunk or {}).items():
                for msg in (update or {}).get("messages", []) if isinstance(update, dict) else []:
                    if node == MODEL_NODE and isinstance(msg, AIMessage):
                        written = calls_as_text(msg)
                        if written is not None:
                            yield TextCall(written, _content_text(msg))
                        for call in msg.tool_calls:
                            names[call["id"] or ""] = call["name"]
                            yield ToolCall(call["id"] or "", call["name"], dict(call["args"]))
                    elif isinstance(msg, ToolMessage):
                        name = msg.name or names.get(msg.tool_call_id, "?")
                        yield ToolResult(msg.tool_call_id, name, _content_text(msg), msg.status == "error")
                    elif is_note(msg):
                        yield CheckNote(_content_text(msg), note_rules(msg), language)

    async def run(self, message: str, thread_id: str | None = None) -> RunFinished:
        """Send ``message`` and wait for the end of the run."""
        finished: RunFinished | None = None
        async for event in self.stream(message, thread_id):
            if isinstance(event, RunFinished):
                finished = event
        assert finished is not None
        return finished

    @property
    def file_versions(self) -> FileVersions | None:
        """The file versions kept with the checkpoints (None when ``sandbox.snapshots`` is off)."""
        return file_versions_of(self._checkpointer)

    def outputs(self, thread_id: str) -> list[str]:
        """Virtual paths of the files in the thread's outputs folder."""
        return self.files(thread_id, OUTPUTS)

    def files(self, thread_id: str, folder: str) -> list[str]:
        """Virtual paths of the files under ``folder`` (a virtual path) of the thread."""
        assert self._provider is not None
        sandbox = self._provider.acquire(thread_id)
        return [p for p in sandbox.list_dir(folder, max_depth=10) if not p.endswith("/")]

    async def messages(self, thread_id: str) -> list[AnyMessage]:
        """The saved conversation of ``thread_id`` (empty for an unknown thread)."""
        state = await self.agent.aget_state({"configurable": {"thread_id": thread_id}})
        return list(state.values.get("messages", []))

    async def threads(self, limit: int = 50) -> list[ThreadSummary]:
        """Saved threads, most recently updated first: those with checkpoints, and the gateway's
        threads that have none yet."""
        assert self._checkpointer is not None
        seen: dict[str, ThreadSummary] = {}
        async for item in self._checkpointer.alist(None):
            cfg = item.config["configurable"]
            tid = cfg["thread_id"]
            if cfg.get("checkpoint_ns") or tid in seen:
                continue
            values = item.checkpoint.get("channel_values", {})
            seen[tid] = ThreadSummary(
                tid, values.get("title"), len(values.get("messages", []) or []), item.checkpoint.get("ts")
            )
        if self._records is not None:  # the gateway's threads with no checkpoint yet (made, not run)
            for record in await self._records.search(limit=SCAN_LIMIT):
                if record.thread_id not in seen:
                    seen[record.thread_id] = ThreadSummary(record.thread_id, None, 0, record.updated_at)
        ordered = sorted(seen.values(), key=lambda t: t.updated_at or "", reverse=True)
        return ordered[:limit]
