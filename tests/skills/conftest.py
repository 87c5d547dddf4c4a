"""Fixtures for skill tests: a skills folder to fill with SKILL.md files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def skill_md(name: str, description: str = "Does a thing.", body: str = "# Steps\n1. Do it.", **fields: str) -> str:
    """The text of a SKILL.md with ``name``, ``description`` and extra raw YAML ``fields``."""
    extra = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n"


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    """An empty skills folder with public/ and custom/."""
    root = tmp_path / "skills"
    (root / "public").mkdir(parents=True)
    (root / "custom").mkdir()
    return root


@pytest.fixture
def add_skill(skills_root: Path) -> Callable[..., Path]:
    """Write ``skills/<source>/<folder>/SKILL.md`` with the given text; returns the folder."""

    def add(folder: str, text: str | None = None, source: str = "public", **kwargs: str) -> Path:
        directory = skills_root / source / folder
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "SKILL.md").write_text(text if text is not None else skill_md(folder, **kwargs))
        return directory

    return add
