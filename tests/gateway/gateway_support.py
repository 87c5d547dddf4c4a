"""Helpers for gateway tests: a real uvicorn server on a free loopback port, and a scripted
model whose runs can be held in progress until the test lets them go.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from langchain_core.messages import BaseMessage
from langchain_core.tools import tool
from langgraph.types import interrupt
from pydantic import PrivateAttr

from herdsman.config import HerdsmanConfig
from herdsman.models.scripted import ScriptedChatModel
from herdsman_gateway.app import create_app
from tests.support import REPO

HOLD = "[hold]"
HOLD_MID = "[hold-mid]"  # the answer streams its first words, then waits for release()
HOLD_AFTER_TOOL = "[hold-after-tool]"  # the answer after a tool call waits (the call's work is done)
FOLDERS = ["/mnt/user-data/workspace", "/mnt/user-data/uploads", "/mnt/user-data/outputs"]
# what a program (not a web page) sends with a multipart upload to a gateway without API keys (browser_guard.py)
CLIENT = {"x-herdsman-client": "1"}


def reply(messages: list[BaseMessage]) -> Any:
    """The scripted agent's behaviour, decided by the last message.

    ``write NAME TEXT`` writes TEXT to outputs/NAME with a tool call, then answers; ``steps N``
    makes N tool calls one after another; ``run CMD`` runs CMD with bash; ``delegate TEXT``
    hands TEXT to a general-purpose sub-agent (which echoes it); anything else is echoed back.
    """
    last = messages[-1]
    text = last.text if hasattr(last, "text") else str(last.content)
    human = [m for m in messages if m.type == "human"][-1].text
    if last.type == "human":
        words = text.replace(HOLD_AFTER_TOOL, "").replace(HOLD, "").split()
        if words[:1] == ["write"] and len(words) >= 3:
            path = f"/mnt/user-data/outputs/{words[1]}"
            return {"tool_calls": [{"name": "write_file", "args": {"path": path, "content": " ".join(words[2:])}}]}
        if words[:1] == ["ask"]:
            return {"tool_calls": [{"name": "ask_user", "args": {"question": " ".join(words[1:])}}]}
        if words[:1] == ["steps"]:
            return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[0]}}]}
        if words[:1] == ["run"]:
            return {"tool_calls": [{"name": "bash", "args": {"command": " ".join(words[1:])}}]}
        if words[:1] == ["delegate"]:
            prompt = " ".join(words[1:])
            args = {"description": prompt[:40], "prompt": prompt, "subagent_type": "general-purpose"}
            return {"tool_calls": [{"name": "task", "args": args}]}
        return f"echo: {text.replace(HOLD_MID, '').replace(HOLD, '').strip()}"
    if last.type == "tool":
        if human.split()[:1] == ["steps"]:
            wanted = int(human.split()[1])
            done = sum(1 for m in messages if m.type == "tool")
            if done < wanted:
                return {"tool_calls": [{"name": "ls", "args": {"path": FOLDERS[done % len(FOLDERS)]}}]}
        return f"done: {text}"
    return "ok"


@tool
def ask_user(question: str) -> str:
    """Ask the user a question and wait for the answer."""
    answer = interrupt({"question": question, "choices": ["yes", "no"]})
    return f"the user said {answer}"


class HeldModel(ScriptedChatModel):
    """The scripted agent; a model call on a message containing ``[hold]`` waits for :meth:`release`."""

    _gate: threading.Event = PrivateAttr(default_factory=threading.Event)
    _waiting: threading.Event = PrivateAttr(default_factory=threading.Event)

    def release(self) -> None:
        """Let held model calls (and later ones) go on."""
        self._gate.set()

    def wait_until_held(self, timeout: float = 10.0) -> None:
        """Block until some model call is waiting at the gate."""
        assert self._waiting.wait(timeout), "no model call reached the hold"

    async def _hold(self, messages: list[BaseMessage], marker: str = HOLD) -> None:
        human = [m for m in messages if m.type == "human"]
        after = "tool" if marker == HOLD_AFTER_TOOL else "human"
        if human and marker in human[-1].text and messages[-1].type == after:
            self._waiting.set()
            while not self._gate.is_set():
                await asyncio.sleep(0.01)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        await self._hold(messages)
        await self._hold(messages, HOLD_AFTER_TOOL)
        sent = 0
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            if sent == 3:
                await self._hold(messages, HOLD_MID)
            sent += 1
            yield chunk

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        await self._hold(messages)
        await self._hold(messages, HOLD_AFTER_TOOL)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def scripted_model() -> HeldModel:
    """A fresh scripted agent model."""
    return HeldModel(respond=reply, stream_chunk_chars=4)


@dataclass
class RunningGateway:
    """A gateway served by uvicorn in a background thread."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def app(self) -> Any:
        """The FastAPI app (its ``state.gateway`` holds the services)."""
        return self.server.config.app

    def stop(self) -> None:
        """Shut the server down (running runs are cancelled) and wait for it."""
        self.server.should_exit = True
        self.thread.join(20)
        assert not self.thread.is_alive(), "the gateway did not stop"


@contextmanager
def running_gateway(
    config: HerdsmanConfig,
    *,
    model: Any = None,
    checkpointer: Any = None,
    extra_tools: Any = (),
    sandbox_provider: Any = None,
) -> Iterator[RunningGateway]:
    """Serve ``create_app(config, model=...)`` on a free loopback port for the ``with`` block
    (``sandbox_provider``: one of the test's instead of config's, closed by the test)."""
    app = create_app(
        config,
        model=model if model is not None else scripted_model(),
        checkpointer=checkpointer,
        sandbox_provider=sandbox_provider,
        extra_tools=extra_tools,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive(), "the gateway failed to start"
        assert time.monotonic() < deadline, "the gateway did not start"
        time.sleep(0.02)
    handle = RunningGateway(f"http://127.0.0.1:{port}", server, thread)
    try:
        yield handle
    finally:
        if thread.is_alive():
            handle.stop()
        sock.close()


@contextmanager
def scripted_gateway(config: HerdsmanConfig) -> Iterator[RunningGateway]:
    """:func:`running_gateway` with a fresh :func:`scripted_model`, released at the end (so a
    run still held by the model lets the gateway stop)."""
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        try:
            yield served
        finally:
            model.release()


@asynccontextmanager
async def one_stream_each(home: Path) -> AsyncIterator[tuple[str, HeldModel, Any, Any]]:
    """A gateway where ana (``key-ana``) and bo (``key-bo``) may each have one stream open
    (``gateway.max_streams_per_user: 1``): its URL, its held scripted model (released at the end)
    and an SDK client for each user."""
    from langgraph_sdk import get_client

    from tests.support import make_config

    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"], "max_streams_per_user": 1})
    model = scripted_model()
    with running_gateway(config, model=model) as served:
        ana = get_client(url=served.url, api_key="key-ana")
        bo = get_client(url=served.url, api_key="key-bo")
        try:
            yield served.url, model, ana, bo
        finally:
            model.release()
            await ana.aclose()
            await bo.aclose()


def user_message(text: str) -> dict[str, Any]:
    """The run input for one user message."""
    return {"messages": [{"role": "user", "content": text}]}


@dataclass
class ServeProcess:
    """A ``herdsman serve`` child: the process, its URL, and (once it ended) what it printed on stderr."""

    proc: subprocess.Popen
    url: str
    stderr: str = ""


def child_env() -> dict[str, str]:
    """The environment of a ``herdsman`` child process: this checkout's code (not an installed
    copy) first on the path, and no ``HERDSMAN_CONFIG`` (the child is given ``--config``)."""
    env = {k: v for k, v in os.environ.items() if k != "HERDSMAN_CONFIG"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    return env


@contextmanager
def serve_subprocess(
    config: Path, port: int, cwd: Path, *, stdout: Any = subprocess.PIPE, tries: int = 300
) -> Iterator[ServeProcess]:
    """``herdsman serve --config CONFIG`` in a new process on ``port``, handed over once
    ``/api/health`` answers (polled ``tries`` times, 50 ms apart); terminated and reaped at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "herdsman", "serve", "--config", str(config)],
        cwd=cwd,
        env=child_env(),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )
    served = ServeProcess(proc, f"http://127.0.0.1:{port}")
    url = served.url
    try:
        for _ in range(tries):
            try:
                if httpx.get(f"{url}/api/health").status_code == 200:
                    break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else "serve exited"
                time.sleep(0.05)
        yield served
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            _, served.stderr = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, served.stderr = proc.communicate()


@dataclass
class HeldTurn:
    """A gateway on a Redis of its own, an SDK thread stream on it, and its turn held in the model."""

    redis: Any  # the RedisProcess (stop() and start() it)
    served: RunningGateway
    sdk: Any
    thread: Any  # the SDK's thread stream
    started: dict[str, Any]  # run.start's answer


@asynccontextmanager
async def held_turn_on_own_redis(home: Path, model: HeldModel, **gateway: Any) -> AsyncIterator[HeldTurn]:
    """Start a gateway on a fresh redis-server (``gateway``: more ``gateway:`` settings), open the
    thread stream of a new thread and start a turn whose model call waits for ``model.release()``
    (released at the end too)."""
    from langgraph_sdk import get_client

    from tests.gateway.redis_service import redis_process
    from tests.support import make_config

    with redis_process() as server:
        config = make_config(home, gateway={"stream_bridge": "redis", "redis_url": server.url, **gateway})
        with running_gateway(config, model=model) as served:
            sdk = get_client(url=served.url, api_key=None)
            try:
                async with sdk.threads.stream(assistant_id="lead_agent") as thread:
                    started = await thread.run.start(input=user_message(f"wait for it {HOLD}"))
                    await asyncio.to_thread(model.wait_until_held)
                    yield HeldTurn(server, served, sdk, thread, started)
            finally:
                model.release()
                await sdk.aclose()
