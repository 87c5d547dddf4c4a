"""What a skill is once parsed: the :class:`Skill` record and the :class:`SkillError` it raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Source = Literal["public", "custom"]
SKILL_FILE = "SKILL.md"
USERS_FOLDER = "users"  # skills/users/<user>/<skill>/: one user's own skills (herdsman.sandbox.skill_view: the same)
USER_PREFIX = "@"  # skills/custom/@<user>/: where an earlier Herdsman kept them (moved out by the sandbox)


class SkillError(ValueError):
    """A SKILL.md that cannot be used: names the file, the field and the fix."""

    def __init__(self, file: str | Path, message: str, field: str | None = None) -> None:
        """``file`` as the user knows it; ``field`` is the front-matter key at fault, if any."""
        self.file = str(file)
        self.field = field
        self.message = message
        where = f"{self.file}: field {field!r}" if field else self.file
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Skill:
    """One parsed skill.

    ``allowed_tools`` is ``None`` when the skill does not restrict tools. ``env`` maps the
    environment variables the skill reads to their descriptions; ``required_secrets`` lists
    those that must be set for the skill to work. ``outputs`` are glob patterns, relative to
    /mnt/user-data/outputs, of the files the skill delivers: while it is active, the completion
    check asks for one file matching each before the agent's answer stands, and runs ``check``
    (a script of the skill, given the delivered file, or its folder with ``{folder}``) on it if
    nothing ran it since the file was written; ``serve`` is a port: once the delivered file is
    there and checked, and no background server was started, the harness serves its folder on
    that port for the Preview tab. ``examples`` are
    requests the skill fits, in the user's words (the start screen offers them). ``owner`` is set
    for a skill one user installed for themselves (``skills/users/<owner>/<name>``).
    """

    name: str
    description: str
    body: str
    source: Source
    directory: Path
    license: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    required_secrets: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    check: str | None = None
    serve: int | None = None
    examples: tuple[str, ...] = ()
    metadata: dict[str, object] = field(default_factory=dict)
    owner: str | None = None  # the user whose own skill this is (skills/users/<owner>/); None: shared

    @property
    def file(self) -> Path:
        """The host path of the SKILL.md."""
        return self.directory / SKILL_FILE

    @property
    def virtual_dir(self) -> str:
        """The skill's folder as the agent sees it, under ``/mnt/skills``."""
        from herdsman.sandbox.base import SKILLS_ROOT  # here, so the skills CLI starts without the sandbox

        if self.owner is not None:
            return f"{SKILLS_ROOT}/{USERS_FOLDER}/{self.owner}/{self.directory.name}"
        return f"{SKILLS_ROOT}/{self.source}/{self.directory.name}"

    @property
    def virtual_path(self) -> str:
        """The SKILL.md as the agent sees it."""
        return f"{self.virtual_dir}/{SKILL_FILE}"

    def missing_secrets(self, environ: dict[str, str]) -> list[str]:
        """The required secrets not set (or empty) in ``environ``."""
        return [name for name in self.required_secrets if not environ.get(name)]
