"""Split a Markdown file into its YAML front matter and its body.

Written here rather than adding a dependency (python-frontmatter): the format is one YAML
block between two ``---`` lines at the very top, parsed with PyYAML's safe loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from herdsman.skills.model import SkillError

DELIMITER = "---"


def split_front_matter(text: str, file: str | Path) -> tuple[dict[str, Any], str]:
    """``(front matter mapping, body)``; raises SkillError naming ``file`` when it is malformed."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != DELIMITER:
        raise SkillError(
            file,
            "no front matter; start the file with a '---' line, then 'name:' and 'description:', "
            "then a closing '---' line",
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == DELIMITER), None)
    if end is None:
        raise SkillError(file, "the front matter is not closed; add a '---' line after its last key")
    block = "\n".join(lines[1:end])
    try:
        data = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillError(
            file,
            f"the front matter is not valid YAML{where} ({problem}); quote values that contain ':' or '#'",
        ) from None
    if not isinstance(data, dict):
        raise SkillError(file, "the front matter must be a mapping of keys (name: ..., description: ...)")
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return data, body
