"""Draft a skill from a run's trace: the steps that worked with the request's values as
parameters, as a folder (``SKILL.md``, ``scripts/``) a small model can follow.

The SKILL.md a draft gets says what the parameters are (each with the value the run used) and
gives the steps as one bash block: the parameters set at its top, then the commands, each script
(one the run wrote, or a program it fed to ``python3 -`` in a here-document) saved in the skill's
folder and run from there with its ``--name`` options. Following it is filling in values
and running the block, which a 1.5B model does.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import yaml

from herdsman.skills.learning.generalize import python_options, python_script, shell_text
from herdsman.skills.learning.guard import review_notes, scrub
from herdsman.skills.learning.trace import RunTrace, Step
from herdsman.skills.learning.values import STOP, Parameter, parameters
from herdsman.skills.model import SKILL_FILE
from herdsman.skills.parse import MAX_EXAMPLE, NAME_RE

MAX_NAME_WORDS = 4
MAX_NAME = 48
LEARNED_LICENSE = "proprietary"  # the user's own work, not a license grant


@dataclass
class Draft:
    """A proposed skill: its ``name``, ``description``, ``files`` (relative path -> text, SKILL.md
    first), the ``parameters`` it takes, the ``request`` it was learned from, the secrets it
    reads (``env``) and ``review`` notes for the person deciding."""

    name: str
    description: str
    files: dict[str, str]
    parameters: list[Parameter]
    request: str
    env: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)

    @property
    def skill_md(self) -> str:
        """The text of its SKILL.md."""
        return self.files[SKILL_FILE]


def skill_name(request: str, params: list[Parameter], steps: list[Step]) -> str:
    """A name from the request's telling words (``convert-csv-json-summary``); from its scripts'
    names when the request has none in Latin letters; ``learned-skill`` failing both."""
    values = {p.value.lower() for p in params}
    text = " ".join(w for w in request.lower().split() if "/" not in w and not re.search(r"\.[a-z0-9]+$", w))
    words: list[str] = []
    for word in re.findall(r"[a-z][a-z0-9]{2,}", text):
        if word not in STOP and word not in values and word not in words:
            words.append(word)
    if not words:
        for step in steps:
            if step.script:
                words += re.findall(r"[a-z][a-z0-9]{2,}", PurePosixPath(step.script).stem.lower())
    name = "-".join(words[:MAX_NAME_WORDS])[:MAX_NAME].strip("-") or "learned-skill"
    return name if NAME_RE.fullmatch(name) else "learned-skill"


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _unique(files: dict[str, str], base: str) -> str:
    """``scripts/<base>``, or ``scripts/<stem>_2<suffix>``... when ``files`` has it already."""
    path = PurePosixPath(base)
    rel, n = f"scripts/{base}", 2
    while rel in files:
        rel, n = f"scripts/{path.stem}_{n}{path.suffix}", n + 1
    return rel


def _program_saver(folder: str, files: dict[str, str]) -> Callable[[str], str]:
    """Saves a program a command read from a here-document as ``scripts/program.py`` in ``files``
    (``program_2.py``... for the next), giving its path as the agent will see it."""

    def save(source: str) -> str:
        rel = _unique(files, "program.py")
        files[rel] = source
        return f"{folder}/{rel}"

    return save


def _script_step(
    step: Step, params: list[Parameter], folder: str, files: dict[str, str], about: str
) -> tuple[str, list[Parameter]]:
    """The command that runs ``step``'s script from the skill's folder, after putting the
    script (with parameters) in ``files``."""
    assert step.script is not None
    base = PurePosixPath(step.script).name
    rel = _unique(files, base)
    target = f"{folder}/{rel}"
    suffix = PurePosixPath(base).suffix
    if step.script_args or suffix not in (".py", ".sh"):
        files[rel] = step.source
        command = re.sub(rf"(?:\./)?\S*{re.escape(base)}(?=\s|$)", target, step.command, count=1)
        return shell_text(command, params, _program_saver(folder, files))
    if suffix == ".py":
        files[rel], used = python_script(step.source, params, about)
        return f"python3 {target} {python_options(used)}".strip(), used
    files[rel], used = shell_text(step.source, params)
    exports = " ".join(f'{p.variable}="${{{p.variable}}}"' for p in used)
    return f"{exports} bash {target}".strip(), used


def _outputs(params: list[Parameter]) -> list[str]:
    """``outputs:`` globs: the kinds of file the output parameters name (``summary.json``: ``**/*.json``)."""
    globs: list[str] = []
    for p in params:
        if p.name.startswith("output") and "." in p.value:
            pattern = f"**/*{PurePosixPath(p.value).suffix}"
            if re.fullmatch(r"\*\*/\*\.[A-Za-z0-9]{1,5}", pattern) and pattern not in globs:
                globs.append(pattern)
    return globs


def render(draft: Draft, commands: list[str], outputs: list[str]) -> str:
    """The SKILL.md of ``draft``, whose steps are ``commands``."""
    front: dict[str, object] = {
        "name": draft.name,
        "description": draft.description,
        "license": LEARNED_LICENSE,
        "examples": [_one_line(draft.request, MAX_EXAMPLE)],
        "metadata": {"learned": True, "parameters": [p.name for p in draft.parameters]},
    }
    if outputs:
        front["outputs"] = outputs
    if draft.env:
        front["env"] = {
            name: "a secret the learned commands read; set it with herdsman skills secret set" for name in draft.env
        }
    lines = [
        "---",
        yaml.safe_dump(front, allow_unicode=True, sort_keys=False, width=1000).strip(),
        "---",
        "",
        f"# {draft.name.replace('-', ' ').capitalize()}",
        "",
        f"Learned from a run that worked. The request was: {_one_line(draft.request, 300)}",
        "",
    ]
    if draft.parameters:
        lines += ["## Parameters", "Take each value from the new request (the value this run used is shown):", ""]
        lines += [
            f'- `{p.variable}`: {p.kind}, e.g. `{p.value}` (from: "{_one_line(p.words, 80)}")' for p in draft.parameters
        ]
        lines.append("")
    lines += [
        "## Steps",
        "Run this as one bash command" + (", with each parameter set to its new value:" if draft.parameters else ":"),
        "",
        "```bash",
        "set -e",
    ]
    lines += [f"{p.variable}={shlex.quote(p.value)}" for p in draft.parameters]
    lines += commands
    lines += [
        "```",
        "",
        "Then check that the result is there and name the files in /mnt/user-data/outputs in your answer.",
        "",
    ]
    return "\n".join(lines)


def draft_skill(
    trace: RunTrace,
    folder_of: Callable[[str], str],
    secrets: Mapping[str, str],
    *,
    name: str | None = None,
    min_steps: int = 1,
) -> Draft | None:
    """The draft of ``trace``'s steps; None when fewer than ``min_steps`` worked.

    ``folder_of(name)`` is the skill's folder as the agent will see it (``/mnt/skills/users/<u>/<name>``);
    ``secrets`` (name -> value) are taken out of every text. ``name`` overrides the derived one.
    """
    if len(trace.steps) < min_steps:
        return None
    request = scrub(trace.request, secrets)
    commands_in = [s.command for s in trace.steps]
    params = parameters(request.text, commands_in, [s.source for s in trace.steps if s.script])
    name = name or skill_name(request.text, params, trace.steps)
    folder = folder_of(name)
    about = f"Learned skill {name}: {_one_line(request.text, 120)}"
    files: dict[str, str] = {}
    commands: list[str] = []
    used: list[Parameter] = []
    for step in trace.steps:
        command, here = (
            _script_step(step, params, folder, files, about)
            if step.script
            else shell_text(step.command, params, _program_saver(folder, files))
        )
        commands.append(command.rstrip("\n"))
        used += [p for p in here if p not in used]
    used = [p for p in params if p in used]  # in the request's order
    env: list[str] = list(request.names)
    for rel in list(files):
        cleaned = scrub(files[rel], secrets)
        files[rel] = cleaned.text
        env += [n for n in cleaned.names if n not in env]
    cleaned_commands = []
    for command in commands:
        cleaned = scrub(command, secrets)
        cleaned_commands.append(cleaned.text)
        env += [n for n in cleaned.names if n not in env]
    names = ", ".join(p.name for p in used)
    description = _one_line(
        f"Learned from a run that worked: {request.text}" + (f" Parameters: {names}." if names else ""), 400
    )
    draft = Draft(name, description, files, used, request.text, env)
    draft.files = {SKILL_FILE: render(draft, cleaned_commands, _outputs(used)), **files}
    draft.review = review_notes(draft.files.items())
    return draft
