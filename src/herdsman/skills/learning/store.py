"""Proposals per user, kept outside the skills folder until their user decides.

``<proposals>/<user>/<name>/`` holds ``proposal.json`` (what it was learned from, its
parameters, the review notes) and ``skill/`` (the SKILL.md and scripts as they would be
installed); the local user's are under ``_local/``. No sandbox mounts this folder and no catalog
reads it: a proposal is nothing to the agent until :meth:`ProposalStore.accept` installs it with
:func:`~herdsman.skills.install.install_skill` (the installer's checks, as for any package) as the
user's own skill (``skills/users/<user>/``; the local user's go to ``skills/custom/``).

A draft is checked before it is kept: :mod:`.guard` (no secret, no path outside the virtual
folders) and the installer's :func:`~herdsman.skills.install.validate_folder` (front matter,
sizes, scripts that compile); one that fails is not kept (logged). An edited SKILL.md given at
accept goes through the same checks. Each step that changes the folder is a rename, so a
proposal is never seen half written, and an accept and a decline of the same one cannot both win.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.skills.archive import PackageError, walk_files
from herdsman.skills.catalog import load_skills, resolve_skills_root
from herdsman.skills.install import USER_RE, Installed, install_skill, validate_folder
from herdsman.skills.learning.draft import Draft, draft_skill
from herdsman.skills.learning.guard import all_problems
from herdsman.skills.learning.trace import RunTrace
from herdsman.skills.model import SKILL_FILE, USERS_FOLDER, SkillError
from herdsman.skills.parse import NAME_RE, parse_skill_text

log = get_logger(__name__)

PROPOSALS_DIR = "skill_proposals"
LOCAL_KEY = "_local"
META_FILE = "proposal.json"
SKILL_FOLDER = "skill"
SKILLS_MOUNT = "/mnt/skills"  # herdsman.sandbox.base.SKILLS_ROOT (not imported: a sibling layer)
MAX_TEXT_BYTES = 256 * 1024


class ProposalError(ValueError):
    """A proposal that cannot be accepted as it is: says why and what to do."""


class ProposalNotFoundError(ProposalError):
    """No proposal of that name for that user."""


@dataclass(frozen=True)
class Proposal:
    """One proposal: what the user reviews. ``folder`` is its skill folder on the host (never shown)."""

    name: str
    description: str
    created_at: str
    request: str
    parameters: list[dict[str, str]]
    review: list[str]
    env: list[str]
    thread_id: str | None
    folder: Path = field(repr=False)

    def files(self) -> dict[str, str]:
        """Relative path -> text of every file of the skill, SKILL.md first."""
        out = {
            rel.as_posix(): path.read_text(encoding="utf-8", errors="replace") for rel, path in walk_files(self.folder)
        }
        return {SKILL_FILE: out.pop(SKILL_FILE, ""), **out}

    def summary(self) -> dict[str, Any]:
        """The proposal as JSON, without its files."""
        data = asdict(self)
        data.pop("folder")
        return data


def folder_as_seen(user: str | None, name: str) -> str:
    """Where the skill ``name`` of ``user`` is once installed, as the agent sees it."""
    return f"{SKILLS_MOUNT}/{USERS_FOLDER}/{user}/{name}" if user else f"{SKILLS_MOUNT}/custom/{name}"


class ProposalStore:
    """The proposals of every user under one folder (see the module docstring)."""

    def __init__(self, root: Path, skills_root: Path, max_pending: int = 20) -> None:
        """``root``: the proposals folder; ``skills_root``: the skills folder accepted ones go to."""
        self.root = root
        self.skills_root = skills_root
        self.max_pending = max_pending

    @classmethod
    def of(cls, config: HerdsmanConfig) -> ProposalStore:
        """The store of ``config`` (``skills.learning.path``, default ``<home>/skill_proposals``)."""
        learning = config.skills.learning
        path = (learning.path or Path(PROPOSALS_DIR)).expanduser()
        root = path if path.is_absolute() else config.resolve_home() / path
        skills = resolve_skills_root(config, when_disabled=True)
        assert skills is not None
        return cls(root, skills, learning.max_pending)

    def _user_dir(self, user: str | None) -> Path:
        if user is not None and not USER_RE.fullmatch(user):
            raise ProposalError(f"{user!r} cannot name a user's proposals")
        return self.root / (user or LOCAL_KEY)

    def _dir(self, user: str | None, name: str) -> Path:
        if not NAME_RE.fullmatch(name):
            raise ProposalNotFoundError(f"{name!r} is not a skill name; list the proposals to see theirs")
        return self._user_dir(user) / name

    def _taken(self, user: str | None) -> set[str]:
        """Names a new proposal may not take: the user's proposals and every skill they see."""
        folder = self._user_dir(user)
        names = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
        return names | {s.name for s in load_skills(self.skills_root, user=user).all_skills}

    def propose(
        self,
        user: str | None,
        trace: RunTrace,
        secrets: Mapping[str, str],
        *,
        thread_id: str | None = None,
        min_steps: int = 1,
    ) -> Proposal | None:
        """Draft a skill from ``trace`` and keep it for ``user``; None when there is nothing to
        propose or the draft fails a check (logged)."""
        first = draft_skill(trace, lambda n: folder_as_seen(user, n), secrets, min_steps=min_steps)
        if first is None:
            return None
        taken = self._taken(user)
        name, n = first.name, 2
        while name in taken:
            name, n = f"{first.name[:44]}-{n}", n + 1
        draft = (
            first if name == first.name else draft_skill(trace, lambda n: folder_as_seen(user, n), secrets, name=name)
        )
        assert draft is not None
        problems = all_problems(draft.files, folder_as_seen(user, "") if user else None)
        if problems:
            log.warning("skill_proposal_refused", user=user, name=name, problems=problems[:3])
            return None
        try:
            proposal = self._keep(user, draft, thread_id)
        except (PackageError, SkillError) as exc:
            log.warning("skill_proposal_refused", user=user, name=name, problems=[str(exc)])
            return None
        self._prune(user)
        log.info(
            "skill_proposed", user=user, name=name, parameters=[p.name for p in draft.parameters], thread_id=thread_id
        )
        return proposal

    def _keep(self, user: str | None, draft: Draft, thread_id: str | None) -> Proposal:
        base = self._user_dir(user)
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = Path(tempfile.mkdtemp(prefix=".new-", dir=base))
        try:
            skill = staging / SKILL_FOLDER
            for rel, text in draft.files.items():
                target = skill.joinpath(*rel.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            validate_folder(skill)
            meta = {
                "name": draft.name,
                "description": draft.description,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "request": draft.request,
                "parameters": [{"name": p.name, "value": p.value, "kind": p.kind} for p in draft.parameters],
                "review": draft.review,
                "env": draft.env,
                "thread_id": thread_id,
            }
            (staging / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
            os.rename(staging, base / draft.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return self.get(user, draft.name)

    def _prune(self, user: str | None) -> None:
        for old in self.list(user)[self.max_pending :]:
            shutil.rmtree(old.folder.parent, ignore_errors=True)
            log.info("skill_proposal_dropped", user=user, name=old.name, why="max_pending")

    def _read(self, folder: Path) -> Proposal | None:
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return Proposal(
            name=folder.name,
            description=str(meta.get("description", "")),
            created_at=str(meta.get("created_at", "")),
            request=str(meta.get("request", "")),
            parameters=list(meta.get("parameters") or []),
            review=list(meta.get("review") or []),
            env=list(meta.get("env") or []),
            thread_id=meta.get("thread_id"),
            folder=folder / SKILL_FOLDER,
        )

    def list(self, user: str | None) -> list[Proposal]:
        """``user``'s proposals, newest first."""
        base = self._user_dir(user)
        if not base.is_dir():
            return []
        found = [p for d in base.iterdir() if NAME_RE.fullmatch(d.name) and (p := self._read(d)) is not None]
        return sorted(found, key=lambda p: (p.created_at, p.name), reverse=True)

    def get(self, user: str | None, name: str) -> Proposal:
        """``user``'s proposal ``name``; ProposalNotFoundError when there is none."""
        found = self._read(self._dir(user, name))
        if found is None:
            raise ProposalNotFoundError(f"no proposal named {name!r}; list the proposals to see theirs")
        return found

    def decline(self, user: str | None, name: str) -> None:
        """Forget ``user``'s proposal ``name``."""
        claimed = self._claim(user, name)
        shutil.rmtree(claimed, ignore_errors=True)
        log.info("skill_proposal_declined", user=user, name=name)

    def _claim(self, user: str | None, name: str) -> Path:
        """Take the proposal out of the list (a rename): one accept or decline wins."""
        folder = self._dir(user, name)
        claimed = folder.with_name(f".claimed-{name}-{os.urandom(4).hex()}")
        try:
            os.rename(folder, claimed)
        except FileNotFoundError:
            raise ProposalNotFoundError(f"no proposal named {name!r}; list the proposals to see theirs") from None
        return claimed

    def accept(self, user: str | None, name: str, content: str | None = None, *, replace: bool = False) -> Installed:
        """Install ``user``'s proposal ``name`` as their own skill; ``content`` is an edited SKILL.md
        (its ``name:`` may differ: the paths of the skill's scripts follow). Raises
        ProposalError, PackageError or SkillError (then nothing is installed and the proposal stays)."""
        proposal = self.get(user, name)
        base = self._user_dir(user)
        staging = Path(tempfile.mkdtemp(prefix=".accept-", dir=base)) / SKILL_FOLDER
        try:
            shutil.copytree(proposal.folder, staging, symlinks=True)
            if content is not None:
                self._edit(user, name, staging, content)
            problems = all_problems(_at(proposal, staging).files(), folder_as_seen(user, "") if user else None)
            if problems:
                raise ProposalError("; ".join(problems[:3]))
            claimed = self._claim(user, name)
            try:
                installed = install_skill(staging, self.skills_root, user=user, replace=replace)
            except BaseException:
                os.rename(claimed, self._dir(user, name))  # the proposal stays for another try
                raise
            shutil.rmtree(claimed, ignore_errors=True)
        finally:
            shutil.rmtree(staging.parent, ignore_errors=True)
        log.info(
            "skill_proposal_accepted", user=user, name=name, installed=installed.skill.name, edited=content is not None
        )
        return installed

    @staticmethod
    def _edit(user: str | None, name: str, folder: Path, content: str) -> None:
        if len(content.encode("utf-8")) > MAX_TEXT_BYTES:
            raise ProposalError(f"the SKILL.md is larger than {MAX_TEXT_BYTES} bytes; shorten it")
        skill = parse_skill_text(content, file=SKILL_FILE, directory=folder, check_folder=False)
        if skill.name != name:
            content = content.replace(folder_as_seen(user, name) + "/", folder_as_seen(user, skill.name) + "/")
        (folder / SKILL_FILE).write_text(content, encoding="utf-8")


def _at(proposal: Proposal, folder: Path) -> Proposal:
    """``proposal`` with its files read from ``folder``."""
    return Proposal(**{**proposal.__dict__, "folder": folder})
