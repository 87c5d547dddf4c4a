"""Shared fixtures: a throwaway Herdsman home and its config."""

from __future__ import annotations

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
