"""Read one SKILL.md and check every front-matter field, with errors naming the file and field.

Fields: ``name`` (required, lowercase-with-hyphens, equal to the folder's name), ``description``
(required), ``license``, ``allowed-tools`` (a list or a comma-separated string), ``env`` (a list of
variable names or a mapping name -> description), ``required-secrets`` (a list of variable names),
``outputs`` (the files the skill delivers, as glob patterns under /mnt/user-data/outputs such as
``**/*.md``), ``examples`` (up to 5 example requests, one line each: the start screen shows them and
the skill selection matches requests against them), plus the free-form ``metadata``, ``version`` and
``compatibility``. Any other key is an error, so a typo such as ``allowed_tool`` does not pass
silently.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from herdsman.skills.frontmatter import split_front_matter
from herdsman.skills.model import SKILL_FILE, Skill, SkillError, Source

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")
OUTPUT_GLOB_RE = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_.*?/-]+$")  # relative, no ..
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_EXAMPLES = 5
MAX_EXAMPLE = 200
KNOWN_FIELDS = (
    "name",
    "description",
    "license",
    "allowed-tools",
    "env",
    "required-secrets",
    "outputs",
    "check",
    "serve",
    "examples",
    "metadata",
    "version",
    "compatibility",
)


def _check_name(value: Any, file: str, folder: str | None) -> str:
    if value is None or value == "":
        raise SkillError(file, "is missing; add 'name: <folder name>' to the front matter", "name")
    if not isinstance(value, str):
        raise SkillError(
            file, f'YAML read it as {value!r}, not as text; quote it, e.g. name: "{folder or "my-skill"}"', "name"
        )
    if not NAME_RE.fullmatch(value) or len(value) > MAX_NAME:
        raise SkillError(
            file,
            f"{value!r} is not a valid skill name; use 1-{MAX_NAME} lowercase letters, digits and "
            "single hyphens, e.g. data-analysis",
            "name",
        )
    if folder is not None and value != folder:
        raise SkillError(
            file,
            f"{value!r} differs from the folder name {folder!r}; rename the folder or the skill so they match",
            "name",
        )
    return value


def _check_description(value: Any, file: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SkillError(
            file,
            "is missing or empty; add one or two sentences saying what the skill does and when to use it",
            "description",
        )
    text = " ".join(value.split())
    if len(text) > MAX_DESCRIPTION:
        raise SkillError(
            file,
            f"is {len(text)} characters long; keep it under {MAX_DESCRIPTION} (details go in the body)",
            "description",
        )
    return text


def _string_list(value: Any, file: str, field: str, pattern: re.Pattern[str], example: str) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [p for p in re.split(r"[,\s]+", value) if p]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        raise SkillError(file, f"must be a list of names, e.g. {example}", field)
    bad = [v for v in items if not pattern.fullmatch(v)]
    if bad:
        raise SkillError(file, f"{bad[0]!r} is not a valid name; write names such as {example}", field)
    return tuple(dict.fromkeys(items))


def _check_env(value: Any, file: str) -> dict[str, str]:
    if isinstance(value, dict):
        env: dict[str, str] = {}
        for key, desc in value.items():
            if not isinstance(key, str) or not ENV_NAME_RE.fullmatch(key):
                raise SkillError(file, f"{key!r} is not a valid variable name; use e.g. API_BASE_URL", "env")
            if desc is not None and not isinstance(desc, (str, int, float, bool)):
                raise SkillError(file, f"the value of {key} must be a short description (a string)", "env")
            env[key] = "" if desc is None else str(desc)
        return env
    names = _string_list(value, file, "env", ENV_NAME_RE, "[API_BASE_URL, REGION]")
    return {name: "" for name in names}


def _check_examples(value: Any, file: str) -> tuple[str, ...]:
    if value is None:
        return ()
    hint = 'write a list of example requests, e.g. examples: ["Turn notes.md into a 5-slide deck"]'
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SkillError(file, f"must be a list of non-empty strings; {hint}", "examples")
    if len(value) > MAX_EXAMPLES:
        raise SkillError(file, f"has {len(value)} entries; keep at most {MAX_EXAMPLES}", "examples")
    examples = tuple(" ".join(v.split()) for v in value)
    long = next((e for e in examples if len(e) > MAX_EXAMPLE), None)
    if long is not None:
        raise SkillError(
            file, f"{long[:40]!r}... is {len(long)} characters long; keep each example under {MAX_EXAMPLE}", "examples"
        )
    return tuple(dict.fromkeys(examples))


CHECK_RE = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_./-]+\.py(?: \{(?:file|folder)\})?$")


def _check_serve(value: Any, file: str) -> int | None:
    """The ``serve`` field: the port (1024-65535) the harness serves the delivered file's folder on."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 65535:
        raise SkillError(file, f"{value!r} is not a port; give a number from 1024 to 65535, e.g. serve: 8000", "serve")
    return value


def _check_check(value: Any, file: str, directory: Path) -> str | None:
    """The ``check`` field: the skill's script that checks what it delivered, relative to its
    folder, given the delivered file (``scripts/check_deck.py``) or its folder
    (``scripts/check_site.py {folder}``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not CHECK_RE.fullmatch(value.strip()):
        raise SkillError(
            file,
            f"{value!r} is not a check script; give a .py path inside the skill folder, optionally followed by "
            "{folder}, e.g. check: scripts/check_report.py",
            "check",
        )
    script = value.strip().split(" ", 1)[0]
    if not (directory / script).is_file():
        raise SkillError(file, f"{script} is not a file in {directory.name}/; add it or remove the field", "check")
    return value.strip()


def _check_license(value: Any, file: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SkillError(file, "must be a string, e.g. MIT or 'Apache-2.0'", "license")
    return value.strip()


def parse_skill_text(
    text: str,
    *,
    file: str | Path,
    directory: Path,
    source: Source = "custom",
    check_folder: bool = True,
    owner: str | None = None,
) -> Skill:
    """Parse the text of a SKILL.md; ``file`` is how errors name it; ``owner`` is the user of a
    per-user skill. Raises SkillError."""
    shown = str(file)
    data, body = split_front_matter(text, shown)
    unknown = [k for k in data if k not in KNOWN_FIELDS]
    if unknown:
        key = str(unknown[0])
        hint = ""
        for known in KNOWN_FIELDS:
            if key.replace("_", "-").lower() == known:
                hint = f" (did you mean {known!r}?)"
        raise SkillError(shown, f"is not a known field{hint}; the fields are {', '.join(KNOWN_FIELDS)}", key)
    name = _check_name(data.get("name"), shown, directory.name if check_folder else None)
    description = _check_description(data.get("description"), shown)
    allowed = data.get("allowed-tools")
    allowed_tools = (
        None if allowed is None else _string_list(allowed, shown, "allowed-tools", TOOL_NAME_RE, "[bash, read_file]")
    )
    env = _check_env(data.get("env"), shown) if data.get("env") is not None else {}
    secrets_value = data.get("required-secrets")
    secrets = (
        ()
        if secrets_value is None
        else _string_list(secrets_value, shown, "required-secrets", ENV_NAME_RE, "[OPENAI_API_KEY]")
    )
    outputs_value = data.get("outputs")
    outputs = (
        ()
        if outputs_value is None
        else _string_list(outputs_value, shown, "outputs", OUTPUT_GLOB_RE, "[report.md, **/*.png]")
    )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise SkillError(shown, "must be a mapping of keys to values", "metadata")
    if not body.strip():
        raise SkillError(shown, "has no instructions after the front matter; write the steps the agent should follow")
    return Skill(
        name=name,
        description=description,
        body=body,
        source=source,
        directory=directory,
        license=_check_license(data.get("license"), shown),
        allowed_tools=allowed_tools,
        env=env,
        required_secrets=secrets,
        outputs=outputs,
        check=_check_check(data.get("check"), shown, directory),
        serve=_check_serve(data.get("serve"), shown),
        examples=_check_examples(data.get("examples"), shown),
        metadata=dict(metadata),
        owner=owner,
    )


def parse_skill_file(
    directory: Path, source: Source = "custom", shown: str | None = None, owner: str | None = None
) -> Skill:
    """Parse ``<directory>/SKILL.md``; ``shown`` is how errors name the file (default its path);
    ``owner`` is the user of a per-user skill."""
    path = directory / SKILL_FILE
    label = shown or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillError(label, f"not found; every skill folder needs a {SKILL_FILE}") from None
    except UnicodeDecodeError:
        raise SkillError(label, "is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise SkillError(label, f"cannot be read ({exc.strerror or exc})") from None
    return parse_skill_text(text, file=label, directory=directory, source=source, owner=owner)
