"""The app's dependency container: what every route needs, built once per app (config, graph,
run manager, records, sandbox, stores, scheduler).

Routes get it with ``Depends(get_gateway)``; the app's lifespan creates it (see ``app.py``).
:meth:`Gateway.rebuild_agent` builds the lead agent again (after a skill is switched on or off)
and hands it to the run manager: runs that start afterwards use it, runs in progress keep theirs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from langgraph.store.base import BaseStore

from herdsman import pools
from herdsman.config.schema import HerdsmanConfig
from herdsman.memory.service import MemoryService
from herdsman.runtime.crons.cron_scheduler import CronScheduler
from herdsman.runtime.crons.cron_store import CronStore
from herdsman.runtime.runs.runs import RunManager
from herdsman.runtime.storage.assistants import AssistantStore
from herdsman.runtime.storage.threads import ThreadStore
from herdsman.runtime.streaming.stream_bridge import StreamBridge
from herdsman.runtime.streaming.thread_events import ThreadEventHub
from herdsman.sandbox.base import Sandbox, SandboxProvider
from herdsman_gateway.metrics import GatewayMetrics
from herdsman_gateway.open_streams import OpenStreams


@dataclass
class Gateway:
    """The services behind the HTTP routes of one app.

    ``assistants`` holds the custom agents (in the same record store as ``threads``). ``streams``
    are the SSE responses in progress. ``memory`` is the long-term memory the lead agent uses (None
    when off); ``store`` the BaseStore behind the Store API, the one memory keeps its facts in (None
    when it cannot open); ``crons`` and ``scheduler`` keep and fire scheduled runs;
    ``thread_events`` numbers the protocol events of streamed threads; ``build_agent`` builds the
    lead agent from the current config and skill switches (None: cannot rebuild).
    """

    config: HerdsmanConfig
    graph: Any
    runs: RunManager
    threads: ThreadStore
    bridge: StreamBridge
    sandbox: SandboxProvider
    metrics: GatewayMetrics
    assistants: AssistantStore
    memory: MemoryService | None = None
    store: BaseStore | None = None
    crons: CronStore | None = None
    scheduler: CronScheduler | None = None
    build_agent: Callable[[], Any] | None = None
    thread_events: ThreadEventHub | None = None
    streams: OpenStreams = field(default_factory=OpenStreams)
    _rebuilding: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def __post_init__(self) -> None:
        self.streams.max_per_user = self.config.gateway.max_streams_per_user

    async def sandbox_of(self, thread_id: str, user: str | None) -> Sandbox:
        """The sandbox of ``thread_id``, acquired on ``user``'s slots of the file pool, never on the
        event loop: a first acquire can wait long (a jail made, a folder placed on the quota volume
        under its lock, a container or pod started), and every other user's requests waited with it.
        A user whose sandbox is stuck holds at most that user's share of the pool."""
        return await pools.run(pools.FILES, user, self.sandbox.acquire, thread_id)

    async def rebuild_agent(self) -> None:
        """Build the lead agent again (in a worker thread) and use it for the runs that start next."""
        if self.build_agent is None:
            raise RuntimeError("this gateway was created without build_agent, so it cannot rebuild its agent")
        async with self._rebuilding:  # one rebuild at a time: the last one reads the latest switches
            graph = await asyncio.to_thread(self.build_agent)
            self.graph = graph
            self.runs.graph = graph


async def get_gateway(request: Request) -> Gateway:
    """The app's :class:`Gateway` (a FastAPI dependency; async, so no worker thread is used)."""
    return request.app.state.gateway
