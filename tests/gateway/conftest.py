"""Fixtures for gateway tests: a served gateway with the scripted agent, and an SDK client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
from langgraph_sdk import get_client

from herdsman.config import HerdsmanConfig
from tests.gateway.gateway_support import HeldModel, RunningGateway, ask_user, running_gateway, scripted_model
from tests.gateway.langgraph_compat import SUMMARY
from tests.support import make_config


@pytest.fixture
def model() -> HeldModel:
    """The scripted agent model the gateway serves."""
    return scripted_model()


@pytest.fixture
def gateway(config: HerdsmanConfig, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway on a free loopback port (memory checkpointer, home in tmp)."""
    with running_gateway(config, model=model) as served:
        try:
            yield served
        finally:
            model.release()


@pytest.fixture
def hitl_gateway(config: HerdsmanConfig, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway whose agent also has ``ask_user``, a tool that waits at an ``interrupt()``."""
    with running_gateway(config, model=model, extra_tools=[ask_user]) as served:
        yield served


@pytest.fixture
def secured(home, model: HeldModel) -> Iterator[RunningGateway]:
    """A gateway with auth on: two user keys, ``key-ana`` and ``key-bo``."""
    with running_gateway(make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]}), model=model) as served:
        yield served


@pytest.fixture
async def client(gateway: RunningGateway) -> AsyncIterator:
    """The official langgraph-sdk client pointed at the gateway."""
    sdk = get_client(url=gateway.url, api_key=None)
    try:
        yield sdk
    finally:
        await sdk.aclose()


@pytest.fixture
def gateway_database(postgres_url: str) -> str:
    """A database of its own on the session's PostgreSQL, so other tests see none of its threads."""
    name = f"gateway_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real redis-server for this test session."""
    from tests.gateway.redis_service import redis_server

    with redis_server() as url:
        yield url


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The LangGraph API compatibility line, when ``test_gateway_compat.py`` ran."""
    if line := config.stash.get(SUMMARY, None):
        terminalreporter.write_line(line)
