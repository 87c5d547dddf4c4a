"""Bark pushes: tell an iPhone when a long run ends or a run waits for an answer.

:class:`BarkNotifier` is a :class:`~herdsman.runtime.runs.runs.RunListener` of the gateway's run
manager, so it hears about every run that ends, whoever started it (the API, the web UI, a
chat channel, a schedule). It pushes when the run took at least ``channels.bark.min_seconds``,
and always when the run left its thread waiting for an answer (an interrupt, such as an
approval or a question); runs the user cancelled are not pushed. The push opens the thread in
the web UI when ``channels.bark.web_url`` is set. The pushes go to one device, so on a gateway
shared by several users (``gateway.api_keys``) ``channels.bark.users`` keeps them to the runs on
threads those users own: nobody's request text reaches another person's phone.

Bark's API is one documented call (``POST /push`` with a JSON body: ``device_key``, ``title``,
``body``, ``group``, ``url``, ``level``), so it is made with httpx; there is no maintained
Python client worth a dependency. Pushing runs in a task: the run manager never waits for it,
and a failed push is logged and shown by ``GET /api/channels``.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

import httpx

from herdsman.config.schema import BarkConfig
from herdsman.logs import get_logger
from herdsman.runtime.runs.runs import Run
from herdsman.runtime.storage.threads import ThreadStore
from herdsman_gateway.auth import OWNER_KEY

log = get_logger(__name__)

MAX_BODY = 200


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s`` or ``1 h 2 min``."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _request_text(run: Run) -> str:
    """The last user message the run was given (for the push body), or ''."""
    messages = (run.spec.input or {}).get("messages") if isinstance(run.spec.input, dict) else None
    for message in reversed(messages or []):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content.strip():
            text = " ".join(content.split())
            return text if len(text) <= MAX_BODY else text[: MAX_BODY - 1] + "…"
    return ""


def push_for(run: Run, seconds: float, waiting: bool, min_seconds: float) -> dict[str, str] | None:
    """The push (title, body, level) a finished run deserves, or None when it deserves none."""
    if waiting:
        title, level = "Herdsman is waiting for you", "timeSensitive"
    elif run.status == "interrupted" or seconds < min_seconds:
        return None
    elif run.status == "success":
        title, level = "Herdsman finished a run", "active"
    else:
        title, level = f"Herdsman run {'timed out' if run.status == 'timeout' else 'failed'}", "active"
    request = _request_text(run)
    body = f"After {_duration(seconds)}" + (f": {request}" if request else "") + f"\nThread {run.thread_id}"
    return {"title": title, "body": body, "level": level}


class BarkNotifier:
    """Sends Bark pushes for runs that end (a run listener; never blocks the run manager)."""

    name = "bark"

    def __init__(self, config: BarkConfig, threads: ThreadStore, client: httpx.AsyncClient | None = None) -> None:
        """``threads`` tells whether a run left its thread waiting for an answer."""
        self.config = config
        self.threads = threads
        self.http = client or httpx.AsyncClient(timeout=15)
        self.error: str | None = None
        self.sent = 0
        self._tasks: set[asyncio.Task] = set()

    # -- RunListener -----------------------------------------------------------------------

    def run_started(self, run: Run) -> None:
        """Nothing to tell at the start."""

    def model_tokens(self, run: Run, model: str, input_tokens: int, output_tokens: int) -> None:
        """Not pushed."""

    def tool_finished(self, run: Run, tool: str, failed: bool) -> None:
        """Not pushed."""

    def subagent_finished(self, run: Run, outcome: str) -> None:
        """Not pushed."""

    def run_finished(self, run: Run, seconds: float) -> None:
        """Decide and push in a task (the thread's status is already settled)."""
        task = asyncio.create_task(self.notify(run, seconds), name=f"bark-{run.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- pushing ---------------------------------------------------------------------------

    def link(self, thread_id: str) -> str | None:
        """The web UI's address of the thread, when ``web_url`` is set."""
        if not self.config.web_url:
            return None
        return f"{self.config.web_url.rstrip('/')}/?thread={quote(thread_id)}"

    async def notify(self, run: Run, seconds: float) -> bool:
        """Push for ``run`` if it deserves it; True when a push was sent."""
        try:
            record = await self.threads.get(run.thread_id)
            owner = record.metadata.get(OWNER_KEY) if record is not None else None
            if self.config.users and owner not in self.config.users:
                return False
            waiting = record is not None and record.status == "interrupted"
            push = push_for(run, seconds, waiting, self.config.min_seconds)
            if push is None:
                return False
            await self.push(run.thread_id, push)
            return True
        except Exception as exc:  # noqa: BLE001 - a push is a courtesy; the run is done either way
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("bark_push_failed", run_id=run.run_id, thread_id=run.thread_id, error=self.error)
            return False

    async def push(self, thread_id: str, push: dict[str, str]) -> None:
        """``POST /push`` to the Bark server; raises when it refuses."""
        body: dict[str, Any] = {"device_key": self.config.device_key, "group": self.config.group, **push}
        link = self.link(thread_id)
        if link:
            body["url"] = link
        response = await self.http.post(f"{self.config.base_url.rstrip('/')}/push", json=body)
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.is_error or (isinstance(answer, dict) and answer.get("code", 200) != 200):
            message = answer.get("message") if isinstance(answer, dict) else None
            raise RuntimeError(
                f"the Bark server answered HTTP {response.status_code}: {message or response.text[:200]}"
            )
        self.error = None
        self.sent += 1
        log.info("bark_pushed", thread_id=thread_id, title=push["title"])

    async def close(self) -> None:
        """Let pending pushes finish, then close the HTTP client."""
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.http.aclose()
