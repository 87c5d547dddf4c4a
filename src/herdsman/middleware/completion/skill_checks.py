"""The active skill's own check, run on what it delivered when nothing ran it since.

A skill can name a script that checks its deliverable (``check:`` in its front matter:
``scripts/check_deck.py`` opens the slide deck and counts its slides; ``scripts/validate_skill.py
{folder}`` reads a new skill's front matter). The skills tell the model to run it, and the
embedded 1.5B model seldom does: on dev it wrote a SKILL.md with no front matter, said the skill
was made, and the validator it had run before writing the file was never run again. When the
skill's deliverable is there and no bash call ran the check since the last call that could have
changed it, :func:`skill_check_not_run` gives the finding (``skill.check_not_run``) whose command
the harness runs for the model like its other read-only queries; the model reads what the check
found and fixes it, or answers.

A skill that serves what it delivers (``serve:`` a port: the web page builder) gets its folder
served by the harness when no background server was started (:func:`skill_not_served`).

Hand-written: which call came after which is read from the run's messages; no library does it.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.middleware.completion.findings import COMMAND, Finding
from herdsman.middleware.completion.servers import started_servers
from herdsman.skills.model import Skill

WRITING_TOOLS = frozenset({"write_file", "str_replace", "bash", "task"})
"""Calls that can change a delivered file (a bash command or a sub-agent may write anything)."""


def check_command(skill: Skill, delivered: str) -> str | None:
    """The command that runs ``skill``'s check on the file ``delivered`` (a virtual path), or None
    when the skill has no check."""
    if skill.check is None:
        return None
    script, _, placeholder = skill.check.partition(" ")
    target = posixpath.dirname(delivered) if placeholder == "{folder}" else delivered
    return f"python3 {shlex.quote(posixpath.join(skill.virtual_dir, script))} {shlex.quote(target)}"


def skill_check_not_run(skill: Skill, delivered: str, run: Sequence[Any]) -> Finding | None:
    """``skill.check_not_run`` when ``skill`` has a check, ``delivered`` (the newest file matching
    its outputs) is there, and no bash call of ``run`` ran the check after the last call that
    could have changed the file."""
    command = check_command(skill, delivered)
    if command is None:
        return None
    script = posixpath.basename(skill.check.partition(" ")[0]) if skill.check else ""
    calls = [c for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
    checked = changed = -1
    for index, call in enumerate(calls):
        if call["name"] == "bash" and script in str((call.get("args") or {}).get("command") or ""):
            checked = index
        elif call["name"] in WRITING_TOOLS and not (call.get("args") or {}).get("background"):
            changed = index  # a background server (the skill's own, started after the check) changes nothing
    if checked > changed:
        return None
    return Finding(
        "skill.check_not_run", {"skill": skill.name, "path": delivered, "command": command}, ("bash",), COMMAND
    )


def skill_not_served(skill: Skill, delivered: str, run: Sequence[Any]) -> Finding | None:
    """``skill.not_served`` when ``skill`` serves what it delivers (``serve``: a port), the
    delivered file ``delivered`` is there and no background server was started in ``run``: the
    command that serves its folder on that port, bound inside the sandbox, which the harness
    starts in the background for the model (the user then sees it in the Preview tab). Asked to
    build a page, serve it and show it, the embedded model with the web page builder active wrote
    the page and never started the server its skill names."""
    if skill.serve is None or started_servers(run):
        return None
    folder = posixpath.dirname(delivered)
    command = f"cd {shlex.quote(folder)} && exec python3 -m http.server {skill.serve} --bind 127.0.0.1"
    return Finding(
        "skill.not_served",
        {"skill": skill.name, "path": folder, "port": skill.serve, "command": command},
        ("bash",),
        COMMAND,
    )


_HTML_HEAD = re.compile(r"\A\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.IGNORECASE | re.DOTALL)
_MARKUP_HEADS = {
    "html": _HTML_HEAD,
    "htm": _HTML_HEAD,
    "svg": re.compile(r"\A\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<svg\b", re.IGNORECASE | re.DOTALL),
}
"""Output kinds told by how a text begins (a page, a drawing), for a file written without its name."""


def misnamed_target(pattern: str, path: str, text: str | None) -> str | None:
    """Where the file ``path`` (a name without an extension, under outputs) belongs when its
    ``text`` is of the kind a skill's output ``pattern`` wants: ``path/index.html`` for a pattern
    that names its file (``**/index.html``: the name was the folder's), ``path.svg`` for one that
    names a kind (``**/*.svg``); None when the text is not of that kind, or the pattern says neither."""
    last = posixpath.basename(pattern)
    extension = last.rsplit(".", 1)[1].lower() if "." in last else ""
    head = _MARKUP_HEADS.get(extension)
    if text is None or head is None or not head.match(text) or "." in posixpath.basename(path):
        return None
    if "*" not in last:
        return f"{path}/{last}"
    return f"{path}.{extension}" if last == f"*.{extension}" else None


def skill_output_misnamed(skill: Skill, pattern: str, path: str, text: str | None) -> Finding | None:
    """``skill.output_misnamed`` when the run wrote what ``skill`` delivers (``pattern``) to
    ``path``, a name without an extension, and nothing matches the pattern: the command that
    moves it where the pattern finds it, made by the harness in the model's name. Asked to build
    a page with the web page builder active, the embedded model wrote a working page into a file
    named ``outputs/site`` (the folder its SKILL.md names), then refused: the site's check said
    "not a directory" and no output matched ``**/index.html``."""
    target = misnamed_target(pattern, path, text)
    if target is None:
        return None
    moved = shlex.quote(f"{path}.herdsman-move")
    if posixpath.dirname(target) == path:
        command = f"mv {shlex.quote(path)} {moved} && mkdir {shlex.quote(path)} && mv {moved} {shlex.quote(target)}"
    else:
        command = f"mv {shlex.quote(path)} {shlex.quote(target)}"
    return Finding(
        "skill.output_misnamed",
        {"skill": skill.name, "path": path, "target": target, "command": command},
        ("bash",),
        COMMAND,
    )
