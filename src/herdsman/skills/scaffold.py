"""Create a new custom skill folder with a valid SKILL.md to fill in (``herdsman skills new``)."""

from __future__ import annotations

import json
from pathlib import Path

from herdsman.skills.model import SKILL_FILE, Skill, SkillError
from herdsman.skills.parse import NAME_RE, parse_skill_file

TEMPLATE = """\
---
name: {name}
description: {description}
license: MIT
# allowed-tools: [bash, read_file, write_file]   # uncomment to restrict tools while active
# required-secrets: [SOME_API_KEY]               # environment variables the skill needs
# outputs: ["**/*.md"]                           # files it delivers under outputs (checked before the answer)
---

# {title}

{description_text}

## Steps
1. Read the inputs the user gave (files are in /mnt/user-data/uploads).
2. Do the work in /mnt/user-data/workspace.
3. Put deliverables in /mnt/user-data/outputs and name them in your answer.
"""


def new_skill(root: Path, name: str, description: str = "") -> Skill:
    """Write ``<root>/custom/<name>/SKILL.md`` from a template and return the parsed skill.

    Raises SkillError when the name is invalid or the folder exists already.
    """
    target = root / "custom" / name / SKILL_FILE
    if not NAME_RE.fullmatch(name):
        raise SkillError(
            target, f"{name!r} is not a valid skill name; use lowercase letters, digits and hyphens", "name"
        )
    if target.parent.exists():
        raise SkillError(target, "already exists; pick another name or edit that skill")
    description = " ".join(description.split()) or f"Describe what {name} does and when to use it."
    text = TEMPLATE.format(
        name=name,
        description=json.dumps(description, ensure_ascii=False),
        title=name.replace("-", " ").capitalize(),
        description_text=description,
    )
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    return parse_skill_file(target.parent, "custom")
