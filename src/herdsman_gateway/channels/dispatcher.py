"""From a chat message to a run and back: access control, commands, progress and the answer.

The dispatcher is the one :class:`~herdsman_gateway.channels.base.MessageHandler` of all
channels. For an allowed user it either runs a command (``/new``, ``/status``, ``/cancel``,
``/help``) or starts a run of the lead agent on the chat's thread through the gateway's run
manager, so channel runs show up in the API, count in metrics and can be cancelled like any
other. A background task follows the run's events in the stream bridge, sends throttled
progress notes, then the final answer (or the question of an interrupt) and the files the run
wrote to outputs. Failures to send are logged and never stop the channel.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Callable
from functools import partial
from typing import Any

from herdsman import pools
from herdsman.config.schema import ChannelsConfig
from herdsman.logs import get_logger
from herdsman.runtime.runs.final_answer import final_answer as answer_of
from herdsman.runtime.runs.final_answer import request_language
from herdsman.runtime.runs.runs import QueueFullError, RunLimitError, RunSpec, ThreadBusyError
from herdsman.runtime.streaming.serde import loads
from herdsman.runtime.streaming.stream_bridge import follow_run
from herdsman.sandbox.base import OUTPUTS, HostBackedSandbox
from herdsman_gateway.channels.base import Channel, InboundMessage
from herdsman_gateway.channels.commands import HELP, parse_command
from herdsman_gateway.channels.progress import Throttle, progress_lines
from herdsman_gateway.channels.threads import ChatThreads, chat_key
from herdsman_gateway.container import Gateway
from herdsman_gateway.routes.threads import note_owner

log = get_logger(__name__)

MAX_FILE_BYTES = 20_000_000


def refusal(channel: str, user_id: str) -> str:
    """The polite answer to someone not on the allowed list."""
    return (
        "Sorry, I can only work for people on my list. "
        f"Ask my owner to add your user id {user_id} to channels.{channel}.allowed_users."
    )


def chat_user(channel: Channel, message: InboundMessage) -> str:
    """Whom a chat message's run, files and disk count against: ``<channel>:<user id>``."""
    return f"{channel.name}:{message.user_id}"


def is_allowed(allowed: list[str], message: InboundMessage) -> bool:
    """Whether the sender is on ``allowed`` (by id or name; ``*`` allows anyone)."""
    if "*" in allowed:
        return True
    return message.user_id in allowed or (message.user_name is not None and message.user_name in allowed)


def split_text(text: str, limit: int, size: Callable[[str], int] = len) -> list[str]:
    """``text`` in pieces of at most ``limit`` by ``size`` (characters unless told), cut at line ends where possible.

    ``size`` lets a platform that counts bytes (WeCom: 2048 UTF-8 bytes) split by its own measure.
    """
    pieces: list[str] = []
    while size(text) > limit:
        fits = _longest_prefix(text, limit, size)
        cut = text.rfind("\n", 0, fits)
        cut = cut if cut > fits // 2 else fits
        pieces.append(text[:cut])
        text = text[cut:].lstrip("\n")
    if text:
        pieces.append(text)
    return pieces


def _longest_prefix(text: str, limit: int, size: Callable[[str], int]) -> int:
    """How many leading characters of ``text`` fit in ``limit`` (at least one, so splitting ends)."""
    if size is len:
        return max(1, limit)
    low, high = 1, len(text)
    while low < high:  # binary search: size grows with the prefix
        mid = (low + high + 1) // 2
        if size(text[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return low


def final_answer(values: dict[str, Any]) -> str:
    """The last AI message's text in a run's final state ('' when there is none); a tool call
    the model wrote as text is told as the failed step it was (see herdsman.runtime.runs.final_answer)."""
    return answer_of([m for m in values.get("messages") or [] if isinstance(m, dict)], skip_blank=True)


def interrupt_question(values: dict[str, Any]) -> str | None:
    """What an interrupted run asks the user, or None when the run was not interrupted."""
    interrupts = values.get("__interrupt__") or []
    if not interrupts:
        return None
    value = interrupts[0].get("value") if isinstance(interrupts[0], dict) else interrupts[0]
    choices = ""
    if isinstance(value, dict):
        if value.get("choices"):
            choices = "\nChoices: " + ", ".join(str(c) for c in value["choices"])
        value = value.get("question") or value.get("message") or value
    return f"❓ {value}{choices}\n(Reply to answer, or /new to drop it.)"


class Dispatcher:
    """Handles the messages of every channel against one gateway."""

    def __init__(self, gateway: Gateway, config: ChannelsConfig, allowed: dict[str, list[str]]) -> None:
        """``allowed`` maps a channel name to its allowed users."""
        self.gateway = gateway
        self.config = config
        self.allowed = allowed
        self.chats = ChatThreads(gateway.threads.store)
        self._tasks: set[asyncio.Task] = set()
        self._locks: dict[str, asyncio.Lock] = {}

    # -- entry point -----------------------------------------------------------------------

    async def handle(self, channel: Channel, message: InboundMessage) -> None:
        """React to one incoming message (returns once the run is started, not finished)."""
        bound = log.bind(channel=channel.name, chat_id=message.chat_id, user_id=message.user_id)
        if not is_allowed(self.allowed.get(channel.name, []), message):
            bound.warning("channel_user_refused")
            await self.send(channel, message, refusal(channel.name, message.user_id))
            return
        # One message of a chat at a time, so two quick first messages share one new thread.
        async with self._locks.setdefault(chat_key(channel.name, message.chat_id), asyncio.Lock()):
            await self._handle_allowed(channel, message, bound)

    async def _handle_allowed(self, channel: Channel, message: InboundMessage, bound: Any) -> None:
        """A command, or a run, for a message from an allowed user."""
        command = parse_command(message.text)
        if command is not None:
            bound.info("channel_command", command=command.word)
            if command.name == "new":
                thread_id = await self.chats.new(channel.name, message.chat_id)
                await self.send(channel, message, f"Started a new conversation (thread {thread_id}).")
            elif command.name == "status":
                await self.send(channel, message, await self.status(channel, message))
            elif command.name == "cancel":
                await self.send(channel, message, await self.cancel(channel, message))
            elif command.name in ("help", "start"):
                await self.send(channel, message, HELP)
            else:
                await self.send(channel, message, f"I do not know /{command.word}.\n{HELP}")
            return
        if not message.text.strip():
            return
        await self.start_run(channel, message)

    # -- commands --------------------------------------------------------------------------

    async def status(self, channel: Channel, message: InboundMessage) -> str:
        """The text of ``/status``: the chat's thread and its runs in progress."""
        thread_id = await self.chats.get(channel.name, message.chat_id)
        if thread_id is None:
            return "No conversation yet: send me a message to start one."
        active = self.gateway.runs.active_runs(thread_id)
        if not active:
            return f"Idle. Thread {thread_id}; nothing is running."
        lines = [f"Thread {thread_id}: {len(active)} run(s) in progress."]
        lines += [f"- run {run.run_id}: {run.status} since {run.created_at}" for run in active]
        return "\n".join(lines)

    async def cancel(self, channel: Channel, message: InboundMessage) -> str:
        """Cancel the chat's running runs; the text of ``/cancel``."""
        thread_id = await self.chats.get(channel.name, message.chat_id)
        active = self.gateway.runs.active_runs(thread_id) if thread_id else []
        if not active:
            return "Nothing is running."
        for run in active:
            await self.gateway.runs.cancel(run.thread_id, run.run_id, wait=True)
        log.info("channel_run_cancelled", channel=channel.name, chat_id=message.chat_id, runs=len(active))
        return f"Cancelled {len(active)} run(s)."

    # -- runs ------------------------------------------------------------------------------

    async def start_run(self, channel: Channel, message: InboundMessage) -> None:
        """Start a run for the message on the chat's thread and follow it in the background."""
        gw = self.gateway
        thread_id = await self.chats.current(channel.name, message.chat_id)
        record = await gw.threads.create(
            thread_id, metadata={"channel": channel.name, "chat_id": message.chat_id}, if_exists="do_nothing"
        )
        user = chat_user(channel, message)
        await note_owner(gw, record, user)  # whose disk bound the chat's files count against
        state = await gw.graph.aget_state({"configurable": {"thread_id": thread_id}})
        spec = RunSpec(
            thread_id=thread_id,
            stream_mode=["updates", "custom"],
            stream_subgraphs=True,
            metadata={"channel": channel.name, "chat_id": message.chat_id, "user_id": message.user_id},
            multitask_strategy="reject",  # a chat says it is still busy rather than queue the message unseen
            user=user,  # whom runs.max_running_per_user and max_queued_per_user count
        )
        if state.interrupts:
            spec.command = {"resume": message.text}
        else:
            spec.input = {"messages": [{"role": "user", "content": message.text}]}
        before = await self.outputs(thread_id, user) if self.config.send_files else {}
        try:
            run = await gw.runs.start(spec)
        except ThreadBusyError:
            await self.send(
                channel, message, "I am still working on your previous message. Wait for it, or send /cancel."
            )
            return
        except (RunLimitError, QueueFullError) as exc:
            log.info("channel_run_refused", channel=channel.name, chat_id=message.chat_id, reason=type(exc).__name__)
            why = "you have too many messages in progress" if isinstance(exc, RunLimitError) else "the server is busy"
            await self.send(
                channel, message, f"Not started: {why}. Send it again once an answer came, or send /cancel."
            )
            return
        log.info(
            "channel_run_started", channel=channel.name, chat_id=message.chat_id, thread_id=thread_id, run_id=run.run_id
        )
        task = asyncio.create_task(
            self.follow(channel, message, thread_id, run.run_id, before), name=f"channel-{run.run_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def follow(
        self, channel: Channel, message: InboundMessage, thread_id: str, run_id: str, before: dict
    ) -> None:
        """Send progress while the run goes, then its answer and new files."""
        throttle = Throttle(self.config.progress_interval_seconds)
        language = request_language([{"type": "human", "content": message.text}])  # of the folded checks
        try:
            try:
                async for event in follow_run(
                    self.gateway.bridge,
                    run_id,
                    heartbeat=1.0,
                    ended=partial(self.gateway.runs.ended, thread_id, run_id),
                ):
                    if event is not None:
                        throttle.add(progress_lines(event.event, loads(event.data), language))
                    note = throttle.take()
                    if note:
                        await self.send(channel, message, note)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - no more progress (Redis away); the answer comes all the same
                log.warning("channel_progress_lost", channel=channel.name, run_id=run_id, error=str(exc))
            values = await self.gateway.runs.join(thread_id, run_id)
            record = await self.gateway.runs.get(thread_id, run_id) or {}
            await self.send(channel, message, self.answer_text(record, values))
            if self.config.send_files:
                await self.send_new_files(channel, message, thread_id, before)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken follow-up must not kill the channel
            log.exception("channel_follow_failed", channel=channel.name, run_id=run_id, error=str(exc))

    @staticmethod
    def answer_text(record: dict[str, Any], values: dict[str, Any]) -> str:
        """What to tell the chat when a run ends, from its record and final values."""
        status = record.get("status")
        if "__error__" in values or status == "error":
            error = values.get("__error__") or record.get("error") or {}
            why = error.get("message") or "unknown error"
            return f"⚠️ The run failed: {why}. Send /new to start over if it keeps failing."
        if status == "interrupted" and not values.get("__interrupt__"):
            return "⏹ Stopped."
        question = interrupt_question(values)
        if question:
            return question
        return final_answer(values) or "(The run finished without an answer.)"

    # -- files -----------------------------------------------------------------------------

    async def outputs(self, thread_id: str, user: str) -> dict[str, tuple[int, int]]:
        """The thread's output files: virtual path -> (size, mtime) (zeros when unknown), listed
        on ``user``'s slots of the file pool."""

        def scan() -> dict[str, tuple[int, int]]:
            sandbox = self.gateway.sandbox.acquire(thread_id)
            found: dict[str, tuple[int, int]] = {}
            if isinstance(sandbox, HostBackedSandbox):
                for entry in sandbox.files.walk(OUTPUTS, max_depth=10, limit=10_000, seconds=5.0):
                    if entry.is_file:
                        found[entry.vpath] = (entry.st.st_size, entry.st.st_mtime_ns)
                return found
            for vpath in sandbox.list_dir(OUTPUTS, max_depth=10):
                if not vpath.endswith("/"):
                    found[vpath] = (len(sandbox.read_text(vpath)), 0)
            return found

        try:
            return await pools.run(pools.FILES, user, scan)
        except Exception as exc:  # noqa: BLE001 - listing files is a bonus, never a failure
            log.warning("channel_outputs_unlisted", thread_id=thread_id, error=str(exc))
            return {}

    def read_file(self, thread_id: str, vpath: str) -> bytes:
        """The bytes of one output file."""
        sandbox = self.gateway.sandbox.acquire(thread_id)
        if isinstance(sandbox, HostBackedSandbox):
            return sandbox.files.read_bytes(vpath, MAX_FILE_BYTES)
        return sandbox.read_text(vpath).encode()

    async def send_new_files(self, channel: Channel, message: InboundMessage, thread_id: str, before: dict) -> None:
        """Upload the output files the run created or changed."""
        user = chat_user(channel, message)
        after = await self.outputs(thread_id, user)
        for vpath, signature in sorted(after.items()):
            if before.get(vpath) == signature or signature[0] > MAX_FILE_BYTES:
                continue
            try:
                data = await pools.run(pools.FILES, user, self.read_file, thread_id, vpath)
                await channel.send_file(message.chat_id, posixpath.basename(vpath), data, reply_to=message.reply_to)
                log.info("channel_file_sent", channel=channel.name, chat_id=message.chat_id, path=vpath)
            except Exception as exc:  # noqa: BLE001 - a platform error is logged; the channel goes on
                log.warning(
                    "channel_send_failed", channel=channel.name, chat_id=message.chat_id, path=vpath, error=str(exc)
                )

    # -- sending ---------------------------------------------------------------------------

    async def send(self, channel: Channel, message: InboundMessage, text: str) -> bool:
        """Send ``text`` (split to the platform's limit); False, logged, when the platform refuses."""
        try:
            for piece in split_text(text, channel.max_text, channel.text_size):
                await channel.send_text(message.chat_id, piece, reply_to=message.reply_to)
            return True
        except Exception as exc:  # noqa: BLE001 - a platform error is logged; the channel goes on
            log.warning("channel_send_failed", channel=channel.name, chat_id=message.chat_id, error=str(exc))
            return False

    async def close(self) -> None:
        """Stop following runs (the runs themselves are the run manager's)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
