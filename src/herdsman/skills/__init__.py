"""Markdown skills: SKILL.md parsing and validation, discovery, activation, scaffolding.

A skill is a folder ``skills/{public,custom}/<name>/`` holding a ``SKILL.md`` (YAML front matter
and Markdown instructions) and, optionally, scripts the agent runs in the sandbox, where the
skills folder is mounted read-only at ``/mnt/skills``.
"""

from herdsman.skills.catalog import SkillCatalog, load_skills, resolve_skills_root
from herdsman.skills.model import Skill, SkillError
from herdsman.skills.parse import parse_skill_file, parse_skill_text

__all__ = [
    "Skill",
    "SkillCatalog",
    "SkillError",
    "load_skills",
    "parse_skill_file",
    "parse_skill_text",
    "resolve_skills_root",
]
