"""The Compose stack's own config and proxy, with real processes instead of containers: two
`herdsman serve` processes on deploy/compose/config.yaml, sharing a real PostgreSQL and Redis,
behind a real nginx running deploy/compose/nginx.conf, driven by the official langgraph-sdk.

Only what containers would change is changed: the gateways listen on loopback ports instead of
the Compose network, the home is a temporary folder, the Docker-API engine is the tests' podman
service (tests/sandbox/podman_engine.py) with its small test image instead of the host's socket
and herdsman-sandbox, and the model is the scripted one (no API key); the database, the Redis
stream bridge, the docker provider's settings and the API keys are the shipped config's. The
images themselves are not built here (their base images are on a registry this machine cannot
reach).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import yaml
from langgraph_sdk import get_client

from tests.deploy.deploy_support import COMPOSE_DIR, NGINX, serve_nginx
from tests.gateway.gateway_support import user_message
from tests.sandbox.podman_engine import PodmanEngine, engine_or_skip
from tests.services import free_port

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (scripts/install-system.sh installs it)")

USER_KEY, ADMIN_KEY = "user-key-of-the-stack", "admin-key-of-the-stack"
ANSWER = "Deployed and answering."
# Each run: one bash command in the thread's sandbox container, then the answer.
SCRIPT = [
    {
        "tool_calls": [
            {
                "name": "bash",
                "args": {
                    "command": "echo deployed > /mnt/user-data/outputs/proof.txt && cat /mnt/user-data/outputs/proof.txt"
                },
            }
        ]
    },
    ANSWER,
]


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    from tests.gateway.redis_service import redis_server

    with redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine() -> PodmanEngine:
    return engine_or_skip()


def gateway_config(home: Path, port: int, engine: PodmanEngine) -> str:
    """deploy/compose/config.yaml with a loopback port, a temporary home, the test engine and the
    scripted model."""
    config = yaml.safe_load((COMPOSE_DIR / "config.yaml").read_text(encoding="utf-8"))
    config["home"] = str(home)
    config["skills"]["path"] = str(home / "skills")
    config["gateway"].update(host="127.0.0.1", port=port)
    config["sandbox"]["docker"].update(base_url=engine.base_url, image=engine.image)
    config["models"] = [
        {
            "name": "default",
            "use": "herdsman.models.scripted:ScriptedChatModel",
            "responses": SCRIPT,
            "on_exhausted": "cycle",
        }
    ]
    return yaml.safe_dump(config)


@pytest.fixture
def stack(tmp_path: Path, postgres_url: str, redis_url: str, engine: PodmanEngine) -> Iterator[dict[str, str]]:
    """``{"proxy": url, "gateway-1": url, "gateway-2": url, "home": path}`` of the running stack."""
    database = f"stack_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    home = tmp_path / "data"
    (home / "skills").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "HERDSMAN_CONFIG"}
    env.update(
        DATABASE_URL=postgres_url.rsplit("/", 1)[0] + f"/{database}",
        REDIS_URL=redis_url,
        HERDSMAN_API_KEY=USER_KEY,
        HERDSMAN_ADMIN_KEY=ADMIN_KEY,
        HERDSMAN_HOST_HOME=str(home),
    )
    processes, urls = [], {}
    try:
        for name in ("gateway-1", "gateway-2"):
            port = free_port()
            path = tmp_path / f"{name}.yaml"
            path.write_text(gateway_config(home, port, engine))
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "herdsman", "serve", "--config", str(path)],
                    cwd=tmp_path,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            urls[name] = f"http://127.0.0.1:{port}"
        for proc, url in zip(processes, urls.values(), strict=False):
            for _ in range(600):  # /api/health answers without a key (at most ~30 s)
                assert proc.poll() is None, f"the gateway exited: {proc.stderr.read()[-3000:]}"
                try:
                    if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
            else:
                pytest.fail(f"{url} did not answer")
        web = free_port()  # nothing listens there: this test is about the API
        with serve_nginx(
            tmp_path,
            {
                "gateway-1": int(urls["gateway-1"].rsplit(":", 1)[1]),
                "gateway-2": int(urls["gateway-2"].rsplit(":", 1)[1]),
                "web": web,
            },
        ) as proxy:
            yield {"proxy": proxy, **urls, "home": str(home)}
    finally:
        for proc in processes:
            proc.terminate()
        for proc in processes:
            try:
                proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


async def test_two_gateways_behind_the_proxy_share_threads_and_run_streams(stack: dict[str, str]) -> None:
    through_proxy = get_client(url=stack["proxy"], api_key=USER_KEY)
    one, two = (get_client(url=stack[name], api_key=USER_KEY) for name in ("gateway-1", "gateway-2"))
    try:
        thread = await through_proxy.threads.create(metadata={"via": "proxy"})
        tid = thread["thread_id"]
        values = await through_proxy.runs.wait(tid, "lead_agent", input=user_message("hello"))
        contents = [m["content"] for m in values["messages"]]
        assert contents[0] == "hello" and contents[-1] == ANSWER
        assert "deployed" in [m for m in values["messages"] if m["type"] == "tool"][0]["content"]
        # The docker provider ran the command in a container on the thread's files in the home.
        assert (
            Path(stack["home"]) / "threads" / tid / "user-data" / "outputs" / "proof.txt"
        ).read_text() == "deployed\n"
        # PostgreSQL is shared: either gateway has the thread and its state.
        for gateway in (one, two):
            state = await gateway.threads.get_state(tid)
            assert [m["content"] for m in state["values"]["messages"]] == contents
        # Redis is shared: a run started on one gateway is streamed from the other.
        run = await one.runs.create(tid, "lead_agent", input=user_message("again"), stream_mode=["values"])

        async def joined() -> list:
            return [part async for part in two.runs.join_stream(tid, run["run_id"], stream_mode=["values"])]

        events = await asyncio.wait_for(joined(), timeout=60)  # without a shared bridge it never ends
        last_values = [p.data for p in events if p.event == "values"][-1]
        again = [m["content"] for m in last_values["messages"]]
        assert again[: len(contents)] == contents and again[len(contents)] == "again" and again[-1] == ANSWER
        assert (await two.runs.get(tid, run["run_id"]))["status"] == "success"
    finally:
        for client in (through_proxy, one, two):
            await client.aclose()


async def test_the_stack_keeps_users_apart_and_refuses_no_key(stack: dict[str, str]) -> None:
    user = get_client(url=stack["proxy"], api_key=USER_KEY)
    admin = get_client(url=stack["proxy"], api_key=ADMIN_KEY)
    try:
        tid = (await user.threads.create())["thread_id"]
        async with httpx.AsyncClient(base_url=stack["proxy"]) as anonymous:
            assert (await anonymous.get(f"/threads/{tid}")).status_code == 401
            assert (await anonymous.post("/threads/search", json={})).status_code == 401
        # The admin key is another user ("ops"): shared settings, not other users' threads.
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await admin.threads.get(tid)
        assert caught.value.response.status_code == 404
        assert tid not in [t["thread_id"] for t in await admin.threads.search()]
        assert (await user.threads.get(tid))["thread_id"] == tid
    finally:
        await user.aclose()
        await admin.aclose()
