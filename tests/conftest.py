"""Shared fixtures: a throwaway Herdsman home and its config."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from herdsman.config import HerdsmanConfig
from tests.support import make_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty Herdsman home."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def config(home: Path) -> HerdsmanConfig:
    """The default config for tests: memory checkpointer, home in tmp."""
    return make_config(home)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for this test session."""
    from tests.services import postgres_server

    with postgres_server() as url:
        yield url
