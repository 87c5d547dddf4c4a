"""The environment a command gets from the skills it runs: the run's user's secrets.

A command "runs a skill" when it names a file of the skill's folder (``/mnt/skills/public/x/...``,
``/mnt/skills/custom/x/...`` or the user's own ``/mnt/skills/users/<user>/x/...``) or when the
user made the skill the turn's active one (``/x``, "use the x skill"). A skill the harness chose
for a request naming none (``skills.auto_select: activate``, by word overlap) is no such consent:
its secrets go only to the commands that name its folder. Its secrets, as the user set them
(:class:`~herdsman.skills.secrets.SkillSecrets`), become environment variables of that one
command; nothing of the gateway's own environment is ever passed. The values then never reach
the model: the bash tool hides any that a command printed (``sandbox.tools.hide_values``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from herdsman.pools import user_of
from herdsman.skills.model import USERS_FOLDER
from herdsman.skills.secrets import SkillSecrets

SKILLS_ROOT = "/mnt/skills"  # herdsman.sandbox.base.SKILLS_ROOT (not imported: the sandbox imports this module)
_SKILL_PATH = re.compile(
    re.escape(SKILLS_ROOT) + r"/(?:public/|custom/|" + re.escape(USERS_FOLDER) + r"/([A-Za-z0-9._@-]+)/)"
    r"([a-z0-9]+(?:-[a-z0-9]+)*)(?=/|\s|$|['\";|&)])"
)


def skills_named(command: str, user: str) -> list[str]:
    """The skills whose folders ``command`` names: shared ones, and ``user``'s own."""
    return [m.group(2) for m in _SKILL_PATH.finditer(command) if m.group(1) in (None, user)]


class SkillCommandEnv:
    """Called by the bash tool with the command and its run: the variables to add."""

    def __init__(self, secrets: SkillSecrets) -> None:
        """``secrets``: the home's per-user skill secrets."""
        self.secrets = secrets

    def __call__(
        self, command: str, state: Mapping[str, Any] | None, config: Mapping[str, Any] | None
    ) -> dict[str, str]:
        """The environment ``command`` gets (empty when it runs no skill with secrets)."""
        user = user_of(config)
        if not self.secrets.has_any(user):
            return {}
        names = skills_named(command, user)
        active = (state or {}).get("active_skill") if isinstance(state, Mapping) else None
        if isinstance(active, Mapping) and isinstance(active.get("name"), str) and not active.get("chosen"):
            names.insert(0, active["name"])
        return self.secrets.values_for(user, dict.fromkeys(names)) if names else {}
