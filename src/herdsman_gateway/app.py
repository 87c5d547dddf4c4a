"""The FastAPI app: ``create_app(config)`` wires the lead agent, run manager and routes.

::

    app = create_app(config)                       # what `herdsman serve` runs
    app = create_app(config, model=scripted_model) # tests: a scripted model instead of config's

Its lifespan opens the checkpointer and the record store, builds the sandbox provider and the
lead agent, marks runs a previous process lost as errors, starts the cron scheduler and the IM
channels enabled under ``channels:`` (see ``channels/manager.py``), and on shutdown stops them
and cancels the runs still going (their steps so far stay in the checkpointer).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from herdsman import pools
from herdsman.agents.lead import create_lead_agent
from herdsman.agents.profile import graph_tools
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger, route_to_stdlib
from herdsman.memory.backend import close_store
from herdsman.memory.retention import sweep_forever
from herdsman.runtime.crons.cron_scheduler import CronScheduler
from herdsman.runtime.crons.cron_store import open_cron_store
from herdsman.runtime.runs.run_queue import open_run_queue
from herdsman.runtime.runs.runs import RunManager
from herdsman.runtime.runs.skill_learning import SkillLearner, SkillLearningListener
from herdsman.runtime.storage.assistants import AssistantStore
from herdsman.runtime.storage.checkpointer import open_checkpointer
from herdsman.runtime.storage.file_versions import FileVersions, file_versions_of, keep_file_versions
from herdsman.runtime.storage.record_store import open_record_store
from herdsman.runtime.storage.threads import ThreadStore
from herdsman.runtime.streaming.thread_events import ThreadEventHub
from herdsman.runtime.tracing.transcripts import save_transcript
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman_gateway import metrics as metrics_routes
from herdsman_gateway.body_limit import BodyLimit
from herdsman_gateway.bridges import build_stream_bridge
from herdsman_gateway.browser_guard import BrowserGuard
from herdsman_gateway.channels.manager import ChannelManager
from herdsman_gateway.container import Gateway
from herdsman_gateway.errors import install_error_handlers
from herdsman_gateway.langgraph_api import PREFIXES, langgraph_router
from herdsman_gateway.mcp_watch import watch_mcp_servers
from herdsman_gateway.metrics import GatewayMetrics
from herdsman_gateway.pacing import CountRequests, RequestsFirst
from herdsman_gateway.preview.origin import PreviewOrigin
from herdsman_gateway.preview.tokens import home_secret
from herdsman_gateway.rate_limit import RateLimit, limit_storage
from herdsman_gateway.routes import (
    api,
    archive,
    artifacts,
    files,
    model_steps,
    preview,
    skill_packages,
    skill_proposals,
    skills,
    snapshots,
    tasks,
    trace,
    uploads,
)
from herdsman_gateway.routes import (
    memory as memory_routes,
)
from herdsman_gateway.routes.crons import fire as fire_cron
from herdsman_gateway.routes.memory import open_gateway_memory
from herdsman_gateway.routes.store import open_item_store, sweep_expired_items

log = get_logger(__name__)


def _version() -> str:
    try:
        return version("herdsman")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


def create_app(
    config: HerdsmanConfig,
    *,
    model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    sandbox_provider: SandboxProvider | None = None,
    extra_tools: Sequence[BaseTool] = (),
    freeze_gc: bool = False,
    serve_requests: bool = True,
) -> FastAPI:
    """The gateway app for ``config``.

    ``model`` replaces the configured lead model (tests pass a scripted model);
    ``checkpointer`` replaces the configured one (the caller then owns its lifetime);
    ``sandbox_provider`` replaces the one ``sandbox.provider`` names (the caller owns it too);
    ``extra_tools`` are given to the lead agent besides its own. ``freeze_gc`` (what
    ``herdsman serve`` sets: it owns the process) moves everything built at startup out of the
    garbage collector's sight, see :func:`freeze_startup_objects`. ``serve_requests=False`` is a
    worker's app (``herdsman worker``, see ``worker.py``): the same services and run workers, no
    cron scheduler and no IM channels (the gateways have them).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        """Open what the routes need, and close it (runs first) on shutdown."""
        route_to_stdlib()  # structlog events of code outside herdsman.logs.get_logger go to stdlib logging too
        pools.configure(config.pools)  # commands, file I/O, conversions and captures: bounded pools of their own
        pools.install_default()  # and this loop's default pool, sized by pools.default, for the rest
        async with AsyncExitStack() as stack:
            saver = checkpointer or await stack.enter_async_context(open_checkpointer(config))
            store = await stack.enter_async_context(open_record_store(config))
            crons = await stack.enter_async_context(open_cron_store(config))
            provider = sandbox_provider
            if provider is None:
                provider = build_sandbox_provider(config)
                stack.callback(provider.close)
            if saver is not None and file_versions_of(saver) is None:
                keep_file_versions(saver, FileVersions(config, provider))
            memory = open_gateway_memory(config, model)
            if memory is not None:
                stack.callback(memory.close)
            item_store = memory.store.store if memory is not None else open_item_store(config)
            if memory is None and item_store is not None:
                stack.callback(close_store, item_store)

            def build_agent() -> Any:
                """The lead agent, with the skills switched on or off through /api/skills (read at each build)."""
                return create_lead_agent(
                    config,
                    model=model,
                    checkpointer=saver,
                    sandbox_provider=provider,
                    extra_tools=extra_tools,
                    memory=memory,
                    keep_transcript=partial(save_transcript, config),
                )

            graph = build_agent()
            bridge = build_stream_bridge(config)
            stack.push_async_callback(bridge.close)
            if hasattr(bridge, "ping"):
                await bridge.ping()
            gateway_metrics = GatewayMetrics(known_tools=lambda: graph_tools(app.state.gateway.graph))
            threads = ThreadStore(store)
            # the CLI's threads, and those of a gateway without keys, from before keys were set (not IM chats)
            adopted = await threads.adopt_unowned(config.gateway.host_owner(), unless=("channel",))
            if adopted:
                log.info("threads_adopted", owner="host admin", threads=adopted)
            queue = await stack.enter_async_context(open_run_queue(config))
            runs = RunManager(
                graph,
                bridge,
                threads,
                config,
                listeners=[gateway_metrics],
                max_concurrency=config.gateway.max_concurrent_runs,
                pause=requests_first.pause if requests_first is not None else None,
                queue=queue,
                sandbox=provider,
            )
            if config.skills.learning.enabled:  # a skill proposed after a run that worked
                learner = SkillLearner(config)
                runs.listeners.append(SkillLearningListener(learner, graph))
                stack.push_async_callback(learner.wait)  # after the runs' shutdown (callbacks go last first)
            stack.push_async_callback(runs.shutdown)
            listener = asyncio.create_task(runs.serve_cancel_requests(), name="cancel-requests")
            stack.push_async_callback(_stop, listener)
            gateway = Gateway(
                config,
                graph,
                runs,
                threads,
                bridge,
                provider,
                gateway_metrics,
                AssistantStore(store),
                memory=memory,
                store=item_store,
                build_agent=build_agent,
                crons=crons,
            )
            app.state.gateway = gateway
            gateway.thread_events = ThreadEventHub(
                runs, bridge, heartbeat=config.gateway.heartbeat_seconds, max_bytes=config.gateway.replay_max_bytes
            )
            stack.push_async_callback(gateway.thread_events.close)
            await runs.recover()
            runs.start_workers()
            if not serve_requests:
                log.info("worker_ready", worker_id=runs.worker_id, workers=config.runs.workers)
                yield
                return
            gateway.scheduler = CronScheduler(
                crons, lambda cron: fire_cron(gateway, cron), poll_seconds=config.gateway.cron_poll_seconds
            )
            runs.listeners.append(gateway.scheduler)
            gateway.scheduler.start()
            stack.push_async_callback(gateway.scheduler.stop)
            mcp_watcher = asyncio.create_task(watch_mcp_servers(app.state.gateway), name="mcp-watch")
            stack.push_async_callback(_stop, mcp_watcher)
            if item_store is not None:
                sweeper = asyncio.create_task(sweep_expired_items(item_store), name="store-ttl-sweep")
                stack.push_async_callback(_stop, sweeper)
            if memory is not None:  # memory.retention_days: nothing outlives it, idle users' memory included
                retention = asyncio.create_task(
                    sweep_forever(memory.store, config.memory, queue=memory.queue), name="memory-retention"
                )
                stack.push_async_callback(_stop, retention)
            if config.gateway.preview_origin.enabled:  # agent-written pages: never on this origin
                secret = await asyncio.to_thread(home_secret, config.resolve_home())
                origin = PreviewOrigin(config.gateway, lambda: app.state.gateway, secret)
                await origin.start()
                stack.push_async_callback(origin.stop)
                app.state.preview_origin = origin
            exit_watcher = asyncio.create_task(app.state.gateway.streams.close_on_exit(), name="close-streams-on-exit")
            stack.push_async_callback(_stop, exit_watcher)
            stack.callback(app.state.gateway.streams.close_all)
            prepare_routes(app.router.routes)
            if freeze_gc:
                freeze_startup_objects()
            await channels.start(app.state.gateway)
            stack.push_async_callback(channels.stop)
            log.info("gateway_ready", checkpointer=config.checkpointer.type, stream_bridge=config.gateway.stream_bridge)
            yield

    app = FastAPI(
        title="Herdsman gateway",
        version=_version(),
        description="The LangGraph-compatible API of Herdsman's lead agent, plus REST under /api.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.state.preview_origin = None
    # Runs step aside for requests only where both share this loop: a gateway with in-process
    # workers (the embedded default). An accept-only gateway executes no run, a worker serves no
    # request: neither paces anything.
    requests_first: RequestsFirst | None = None
    if serve_requests and config.runs.workers and config.gateway.requests_first_ms:
        requests_first = RequestsFirst(
            config.gateway.requests_first_ms / 1000, config.gateway.requests_first_quiet_ms / 1000
        )
    channels = ChannelManager(config.channels)
    channels.mount(app)
    app.state.channels = channels
    app.add_middleware(  # inside the rate limit (counted first) and CORS (a browser reads the 413)
        BodyLimit,
        limit=config.gateway.max_request_bytes,
        uploads_limit=uploads.max_request_bytes(config.gateway),
        uploads_detail=uploads.too_large(config.gateway.max_upload_bytes).detail,
    )
    if config.gateway.rate_limit:  # inside CORS, so a browser can read the 429
        app.add_middleware(
            RateLimit,
            limits=config.gateway.rate_limit,
            storage=limit_storage(config.gateway),
            keys=config.gateway.keys(),
        )
    if config.gateway.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.gateway.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=[
                "Content-Location",
                "Location",
                "X-Herdsman-Ranking",
            ],  # the JS SDK reads run ids from the first two
        )
    # outside CORS and the rest: a request from a page that is not ours (DNS rebinding, cross-site) goes no further
    app.add_middleware(BrowserGuard, gateway=config.gateway)
    if requests_first is not None:
        app.add_middleware(CountRequests, tracker=requests_first)  # outermost: counts from arrival
    router = langgraph_router()
    for prefix in PREFIXES:
        app.include_router(router, prefix=prefix)
    for module in (
        api,
        model_steps,
        uploads,
        artifacts,
        archive,
        files,
        preview,
        skill_proposals,  # before skills: /api/skills/{name} would take /api/skills/proposals
        skills,
        skill_packages,
        memory_routes,
        snapshots,
        tasks,
        trace,
    ):
        app.include_router(module.router)
    app.include_router(metrics_routes.router)
    serve_web_ui(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]  # replacing app.openapi is FastAPI's documented way to change the schema
    return app


def web_dist() -> Path:
    """Where the built web UI is: ``$HERDSMAN_WEB_DIST``, else ``web/dist`` of the source tree."""
    return Path(os.environ.get("HERDSMAN_WEB_DIST") or Path(__file__).resolve().parents[2] / "web" / "dist")


def web_ui_built() -> bool:
    """Whether a built web UI is there to serve at ``/`` (``make web`` builds it)."""
    return (web_dist() / "index.html").is_file()


def serve_web_ui(app: FastAPI) -> None:
    """Serve the built web UI at ``/`` (and its files at ``/assets``) when it has been built.

    Added after the API routes, so it never shadows one; without a build (``make web``) nothing is added.
    """
    if not web_ui_built():
        return
    dist = web_dist()
    index = dist / "index.html"

    async def web_ui() -> FileResponse:
        return FileResponse(index, media_type="text/html", headers={"Cache-Control": "no-cache"})

    app.add_api_route("/", web_ui, methods=["GET"], include_in_schema=False)
    if (dist / "assets").is_dir():
        app.mount("/assets", StaticFiles(directory=dist / "assets"), name="web-assets")


def prepare_routes(routes: Sequence[Any]) -> None:
    """Build FastAPI's per-include route tables now, not on the first request that needs them.

    FastAPI (0.16x) builds the matching table of each included router lazily, under a lock, on
    the first request that reaches it: ~100 ms here, paid by whichever requests come first (a
    burst of streamed runs, all waiting). Older FastAPI versions have no such tables: nothing to do.
    """
    for route in routes:
        candidates = getattr(route, "effective_candidates", None)
        if candidates is None:
            continue
        prepare_routes(candidates())
        low_priority = getattr(route, "effective_low_priority_routes", None)
        if low_priority is not None:
            low_priority()


GC_THRESHOLDS = (20_000, 20, 20)
"""The collector's thresholds once startup is frozen (Python's are 700, 10, 10). A streamed run
leaves ~650 tracked objects more than it frees (cycles of tasks, futures, messages), so at 700 a
young collection ran after nearly every run, an older one every ~12 and a full one (~33 ms with
100 runs in flight) every ~100: ~0.76 ms of a run's ~21 ms CPU. Reference counting frees all
but the cycles, which now wait ~30 runs for a young collection."""


def freeze_startup_objects() -> None:
    """Collect once, then freeze what survives (``gc.freeze``): the agent, its models, schemas
    and modules live as long as the process, yet a full collection scans them all each time,
    ~100 ms here, stalling every request and run at once. Frozen, they are never scanned again.
    Then collect less often (:data:`GC_THRESHOLDS`).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    log.info("gc_frozen", objects=gc.get_freeze_count())


async def _stop(task: asyncio.Task) -> None:
    """Cancel a background task and wait for it."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "properties": {
        "detail": {"type": "string", "description": "What failed and what to do."},
        "errors": {"type": "array", "items": {"type": "object"}, "description": "Each validation problem."},
    },
    "required": ["detail"],
}


def _openapi(app: FastAPI) -> dict:
    """FastAPI's schema, with the error body this gateway really sends (``{detail, errors}``)."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schema.setdefault("components", {}).setdefault("schemas", {})["HTTPValidationError"] = ERROR_SCHEMA
        app.openapi_schema = schema
    return app.openapi_schema
