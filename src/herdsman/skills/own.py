"""A run's user's own skills (``skills/users/<user>/``), for the lead agent that serves every user.

The lead agent is built once with the shared skills (public and custom); a user's own skills,
installed by them or accepted from a proposal, are looked up per run from the run's user
(``configurable.user_id``), so ``/name`` activates them and the prompt lists them as it does the
shared ones. The folder is read again only when it changes: the key is the folder's and each
SKILL.md's modification time, one ``scandir`` per model call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from herdsman.pools import LOCAL_USER
from herdsman.skills.catalog import load_skills, user_folder
from herdsman.skills.install import USER_RE
from herdsman.skills.model import SKILL_FILE, Skill

Stamp = tuple[int, tuple[tuple[str, int], ...]]


def _stamp(folder: Path) -> Stamp | None:
    """What changes when a skill of ``folder`` is added, removed, replaced or edited; None without the folder."""
    try:
        top = folder.stat().st_mtime_ns
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return None
    stamps: list[tuple[str, int]] = []
    for name in names:
        try:
            stamps.append((name, os.stat(folder / name / SKILL_FILE, follow_symlinks=False).st_mtime_ns))
        except OSError:
            stamps.append((name, 0))
    return top, tuple(stamps)


class OwnSkills:
    """The own skills of each user under one skills folder, cached until their folder changes."""

    def __init__(
        self,
        root: Path | None,
        disabled: Iterable[str] = (),
        secrets: Callable[[str], Mapping[str, Mapping[str, str]]] | None = None,
    ) -> None:
        """``root``: the skills folder (None: none); ``disabled``: names switched off;
        ``secrets(user)``: the user's skill secrets (a required one counts when set)."""
        self.root = root
        self.disabled = tuple(disabled)
        self.secrets = secrets
        self._cache: dict[str, tuple[Stamp, dict[str, Skill], dict[str, str]]] = {}
        self._lock = threading.Lock()

    def of(self, user: str | None) -> tuple[dict[str, Skill], dict[str, str]]:
        """``user``'s usable own skills by name (the same dict while nothing changed), and why
        their others cannot be used; empty for the local user or a user without any."""
        if self.root is None or not user or user == LOCAL_USER or not USER_RE.fullmatch(user):
            return {}, {}
        stamp = _stamp(user_folder(self.root, user))
        if stamp is None:
            return {}, {}
        with self._lock:
            cached = self._cache.get(user)
            if cached is not None and cached[0] == stamp:
                return cached[1], cached[2]
        catalog = load_skills(self.root, self.disabled, user=user, secrets=self.secrets(user) if self.secrets else None)
        own = {name: s for name, s in catalog.skills.items() if s.owner == user}
        reasons = {
            name: why
            for name, why in catalog.reasons().items()
            if any(s.owner == user and s.name == name for s in catalog.all_skills)
        }
        with self._lock:
            self._cache[user] = (stamp, own, reasons)
        return own, reasons
