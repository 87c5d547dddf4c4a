"""Tools from MCP servers (``mcp.servers`` in config.yaml), through ``langchain-mcp-adapters``.

:class:`MCPToolRegistry` connects to each enabled server when tools are first asked for (not at
import or config time), lists its tools, keeps those the server's ``allow``/``deny`` lists let
through, puts ``tool_prefix`` before their names, and caches them. HTTP servers can take
headers or OAuth client credentials (:mod:`herdsman.tools.oauth`). Servers load concurrently,
each under its own ``timeout_seconds``: a server that crashes, hangs or is unreachable is left
out with a reason that :meth:`MCPToolRegistry.status` reports (for ``herdsman mcp status`` and
the gateway), and is tried again on a later load once ``mcp.retry_after_seconds`` have passed
(the gateway retries on its own and rebuilds its agent when one comes back).
Tools whose input schema is not a JSON object schema are skipped and named in the status.

Each tool call opens a fresh session to its server (the adapters' default, so a tool works from
any event loop) and must finish within ``call_timeout_seconds``; a server that fails or times out
during a call gives the model an error result that says so, and the run goes on.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters.interceptors import MCPToolCallRequest
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp.types import CallToolResult, TextContent

from herdsman.config.schema import HerdsmanConfig, MCPConfig, MCPServerConfig
from herdsman.logs import get_logger
from herdsman.tools.oauth import ClientCredentialsAuth
from herdsman.tools.sync import run_sync

log = get_logger(__name__)

State = Literal["ready", "failed", "disabled", "not_loaded"]
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64


@dataclass(frozen=True)
class ServerStatus:
    """What is known about one configured MCP server."""

    name: str
    transport: str
    state: State
    tools: tuple[str, ...] = ()
    error: str | None = None
    skipped: tuple[str, ...] = ()
    """Tools left out, each as "name: reason" (malformed schema, name taken)."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (for the gateway's status endpoint)."""
        return {
            "name": self.name,
            "transport": self.transport,
            "state": self.state,
            "tools": list(self.tools),
            "error": self.error,
            "skipped": list(self.skipped),
        }


@dataclass
class _Entry:
    server: MCPServerConfig
    tools: list[BaseTool] = field(default_factory=list)
    state: State = "not_loaded"
    error: str | None = None
    skipped: list[str] = field(default_factory=list)
    failed_at: float | None = None


# -- connection and filtering ---------------------------------------------------------------


def connection_of(server: MCPServerConfig) -> dict[str, Any]:
    """The adapters' connection dict for ``server``."""
    if server.transport == "stdio":
        conn: dict[str, Any] = {"transport": "stdio", "command": server.command, "args": list(server.args)}
        if server.env is not None:
            conn["env"] = dict(server.env)
        if server.cwd is not None:
            conn["cwd"] = str(server.cwd)
        return conn
    conn = {"transport": server.transport, "url": server.url}
    if server.headers:
        conn["headers"] = dict(server.headers)
    if server.oauth is not None:
        o = server.oauth
        conn["auth"] = ClientCredentialsAuth(o.token_url, o.client_id, o.client_secret, o.scope)
    return conn


def is_wanted(name: str, server: MCPServerConfig) -> bool:
    """Whether the server's ``allow`` and ``deny`` lists (names or globs) let tool ``name`` in."""
    if server.allow and not any(fnmatch.fnmatchcase(name, p) for p in server.allow):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in server.deny)


def schema_problem(tool: BaseTool) -> str | None:
    """Why ``tool``'s input schema cannot be offered to a model, or None when it is fine."""
    schema = tool.args_schema
    if isinstance(schema, dict):
        if schema.get("type", "object") != "object":
            return f"input schema has type {schema.get('type')!r}, not 'object'"
        if not isinstance(schema.get("properties", {}), dict):
            return "input schema's properties is not an object"
    try:
        convert_to_openai_tool(tool)
    except Exception as exc:  # noqa: BLE001 - any failure means the model cannot be told about it
        return f"input schema cannot be converted ({type(exc).__name__}: {exc})"
    return None


def tool_name(server: MCPServerConfig, name: str) -> str:
    """The name the model sees: prefix + name, with characters models refuse replaced by _."""
    return _BAD_NAME_CHARS.sub("_", f"{server.tool_prefix}{name}")[:MAX_TOOL_NAME]


def describe_error(exc: BaseException, server: MCPServerConfig) -> str:
    """A one-line reason a user can act on for a server that could not be loaded."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    where = f"{server.command} {' '.join(server.args)}".strip() if server.transport == "stdio" else server.url
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, TimeoutError):
        return (
            f"no answer within {server.timeout_seconds:g}s while connecting and listing tools; "
            f"check that {where} is an MCP server and is healthy, or raise timeout_seconds"
        )
    if isinstance(exc, FileNotFoundError):
        return f"command {server.command!r} was not found; install it or give its full path in command:"
    name = type(exc).__name__
    if name in ("ConnectError", "ConnectTimeout"):
        return f"cannot connect to {where} ({text}); is the server running there?"
    if name == "OAuthError":
        return text
    if name == "HTTPStatusError":
        return f"{where} answered {text}; check url and headers (e.g. Authorization)"
    closed = name in ("BrokenResourceError", "ClosedResourceError", "EndOfStream", "BrokenPipeError")
    if closed or "connection closed" in text.lower():
        return (
            f"the server closed the connection before answering (it may have crashed); "
            f"run `{where}` by hand to see its error"
        )
    return f"{name}: {text}"


def _call_guard(server: MCPServerConfig) -> Callable[..., Any]:
    """Tool-call interceptor: bound each call by ``call_timeout_seconds``; failures become error results."""

    async def guard(request: MCPToolCallRequest, handler: Callable[..., Any]) -> Any:
        try:
            return await asyncio.wait_for(handler(request), server.call_timeout_seconds)
        except TimeoutError:
            text = (
                f"MCP server {server.name!r} did not finish {request.name} within "
                f"{server.call_timeout_seconds:g}s; try again later or with a smaller request"
            )
        except Exception as exc:  # noqa: BLE001 - reported to the model, the run goes on
            log.warning("mcp_call_failed", server=server.name, tool=request.name, error=repr(exc))
            text = f"MCP server {server.name!r} failed while running {request.name}: {describe_error(exc, server)}"
        return CallToolResult(content=[TextContent(type="text", text=text)], isError=True)

    return guard


def _sync_twin(coroutine: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """A blocking version of an adapter tool's coroutine, so ``tool.invoke`` works too."""
    if coroutine is None:
        return None

    def func(*args: Any, **kwargs: Any) -> Any:
        return run_sync(coroutine(*args, **kwargs))

    return func


async def load_server_tools(server: MCPServerConfig) -> tuple[list[BaseTool], list[str]]:
    """Connect to ``server`` and return (its wanted, usable tools renamed; skipped "name: reason").

    Raises whatever connecting raised (TimeoutError after ``timeout_seconds``).
    """
    raw = await asyncio.wait_for(
        load_mcp_tools(
            None,
            connection=connection_of(server),  # type: ignore[arg-type]  # a dict of one of the adapter's connection TypedDicts, chosen by transport
            server_name=server.name,
            tool_interceptors=[_call_guard(server)],
        ),
        server.timeout_seconds,
    )
    kept: list[BaseTool] = []
    skipped: list[str] = []
    for tool in raw:
        if not is_wanted(tool.name, server):
            continue
        problem = schema_problem(tool)
        if problem:
            skipped.append(f"{tool.name}: {problem}")
            continue
        metadata = {**(tool.metadata or {}), "mcp_server": server.name, "mcp_tool": tool.name}
        update = {
            "name": tool_name(server, tool.name),
            "metadata": metadata,
            "func": _sync_twin(getattr(tool, "coroutine", None)),
        }
        kept.append(tool.model_copy(update=update))
    return kept, skipped


# -- the registry ---------------------------------------------------------------------------


class MCPToolRegistry:
    """The MCP servers of one config: lazy, cached loading and a status per server."""

    def __init__(self, config: MCPConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._entries = {s.name: _Entry(s, state="not_loaded" if s.enabled else "disabled") for s in config.servers}
        self._lock = threading.Lock()

    def _due(self, entry: _Entry) -> bool:
        if entry.state == "not_loaded":
            return True
        if entry.state != "failed" or entry.failed_at is None:
            return False
        return self._clock() - entry.failed_at >= self.config.retry_after_seconds

    async def _load_one(self, entry: _Entry) -> None:
        server = entry.server
        try:
            tools, skipped = await load_server_tools(server)
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - one server must not stop the others
            task = asyncio.current_task()
            if not isinstance(exc, Exception) and task is not None and task.cancelling():
                raise  # the load itself is being cancelled
            entry.state, entry.error, entry.failed_at = "failed", describe_error(exc, server), self._clock()
            entry.tools = []
            log.warning("mcp_server_failed", server=server.name, error=entry.error)
            return
        entry.state, entry.error, entry.failed_at = "ready", None, None
        entry.tools, entry.skipped = tools, skipped
        log.info("mcp_server_ready", server=server.name, tools=[t.name for t in tools], skipped=skipped)

    async def aload(self, reserved: Sequence[str] = ()) -> list[BaseTool]:
        """Load every server that is due (never loaded, or failed long enough ago); all cached tools.

        Servers load concurrently; a slow one costs at most its ``timeout_seconds``. Tools named
        like one in ``reserved`` (the built-in tools) are left out and named in the status.
        """
        due = [e for e in self._entries.values() if self._due(e)]
        if due:
            await asyncio.gather(*(self._load_one(e) for e in due))
        return self.cached_tools(reserved)

    def failed(self) -> bool:
        """Whether a server failed to load (and will be tried again)."""
        return any(e.state == "failed" for e in self._entries.values())

    async def retry_failed(self) -> list[str]:
        """Try the failed servers that are due again; the names of those that loaded now.

        A long-lived process (the gateway) calls this now and then, then rebuilds its agent when
        a server came back, so a server that was down at start is not missing until a restart.
        """
        due = [e for e in self._entries.values() if e.state == "failed" and self._due(e)]
        if due:
            await asyncio.gather(*(self._load_one(e) for e in due))
        return [e.server.name for e in due if e.state == "ready"]

    def load(self, reserved: Sequence[str] = ()) -> list[BaseTool]:
        """:meth:`aload` for synchronous callers, safe to call while an event loop runs here.

        The loading runs on its own loop in a worker thread; concurrent callers wait for one load.
        """
        with self._lock:
            if not any(self._due(e) for e in self._entries.values()):
                return self.cached_tools(reserved)
            return run_sync(self.aload(reserved))

    def cached_tools(self, reserved: Sequence[str] = ()) -> list[BaseTool]:
        """The tools of the servers loaded so far, first server first; a name already taken (by a
        tool in ``reserved`` or of an earlier server) is skipped and named in the status."""
        seen: set[str] = set(reserved)
        out: list[BaseTool] = []
        for entry in self._entries.values():
            if entry.state != "ready":
                continue
            entry.skipped = [s for s in entry.skipped if ": name already used" not in s]
            for tool in entry.tools:
                if tool.name in seen:
                    entry.skipped.append(f"{tool.name}: name already used; set tool_prefix to tell them apart")
                    continue
                seen.add(tool.name)
                out.append(tool)
        return out

    def status(self) -> list[ServerStatus]:
        """The state of each configured server, in config order (no connection is made)."""
        return [
            ServerStatus(
                name=e.server.name,
                transport=e.server.transport,
                state=e.state,
                tools=tuple(t.name for t in e.tools),
                error=e.error,
                skipped=tuple(e.skipped),
            )
            for e in self._entries.values()
        ]


_registries: dict[str, MCPToolRegistry] = {}
_registries_lock = threading.Lock()


def registry_for(config: HerdsmanConfig) -> MCPToolRegistry:
    """The process-wide registry for ``config.mcp`` (one per distinct ``mcp:`` section, so the cache
    is shared by every agent built from the same config)."""
    key = config.mcp.model_dump_json()
    with _registries_lock:
        registry = _registries.get(key)
        if registry is None:
            registry = _registries[key] = MCPToolRegistry(config.mcp)
        return registry


def mcp_tools(config: HerdsmanConfig, taken: Sequence[str] = ()) -> list[BaseTool]:
    """The MCP tools for an agent built from ``config``, without names in ``taken`` (built-ins win)."""
    if not any(s.enabled for s in config.mcp.servers):
        return []
    return registry_for(config).load(reserved=taken)


def mcp_status(config: HerdsmanConfig) -> list[ServerStatus]:
    """The status of ``config``'s MCP servers, as last loaded in this process."""
    return registry_for(config).status()
