"""The lead agent's system prompt: role, tools, skills, sub-agents, response style, date.

Pure functions of their inputs, so the prompt can be read and tested on its own. ``{date}``
stays a placeholder; :class:`herdsman.middleware.system_prompt.SystemPromptMiddleware` fills it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from herdsman.sandbox.base import OUTPUTS, SKILLS_ROOT, UPLOADS, WORKSPACE


@dataclass(frozen=True)
class PromptEntry:
    """A named thing the prompt lists: a tool, a skill or a sub-agent type."""

    name: str
    description: str
    path: str | None = None


ROLE = """\
<role>
You are Herdsman, an agent that gets long, multi-step work done. You plan, act with your tools
in a sandbox, check your results, and finish with a clear answer. Today is {date}.
</role>"""

FILES = f"""\
<files>
You work in a sandbox with these folders (use these paths; there are no others):
- {WORKSPACE}: your working folder (the shell starts here)
- {UPLOADS}: files the user uploaded
- {OUTPUTS}: put deliverables here; the user receives every file in it
</files>"""

STYLE = """\
<response_style>
- Use a tool only when it helps; when a tool result already holds the answer, answer in plain
  text and do not call the tool again.
- Be concise. Name the files you wrote by their paths.
- If something fails, read the error, fix the cause and try again; say so if you cannot.
</response_style>"""


SMALL_ROLE = f"""\
You are Herdsman, an agent that does the user's task with tools in a sandbox. Today is {{date}}.
Folders: {WORKSPACE} (your working folder; commands start here), {UPLOADS} (files the user
uploaded), {OUTPUTS} (put files for the user here)."""

SMALL_RULES = """\
How to work:
1. Look before you answer: read the files, list folders, run commands. Never guess what a file holds.
2. Do the whole task. Asked to save, create or write a file: write it (write_file, or a command),
   then answer with its path.
3. To change a file, read it first, then edit it with str_replace (or write_file with the whole new text).
4. Compute with python3 (for CSV and JSON use the csv and json modules): run the code as
   python3 - <<'EOF' with one statement per line, ending with EOF (python3 -c cannot hold for or with).
5. When a tool result holds the answer, reply in plain text: short, with the exact numbers or names.
6. To fix a program, run it first and read the error; after the fix, run it again to check.
7. If a command fails, read the error, fix the cause and try again."""

SMALL_EXAMPLES = f"""\
Examples of good work:

User: What is the mean of the score column in {UPLOADS}/grades.csv?
Assistant: <tool_call>{{"name": "bash", "arguments": {{"command": "python3 - <<'EOF'\\nimport csv\\nv = []\\nfor row in csv.DictReader(open('{UPLOADS}/grades.csv')):\\n    v.append(float(row['score']))\\nprint(sum(v) / len(v))\\nEOF"}}}}</tool_call>
Tool result: <the number the command printed>
Assistant: The mean score is <that number>.

User: Fix calc.py so that python3 calc.py 2 3 prints 5.
Assistant: <tool_call>{{"name": "bash", "arguments": {{"command": "python3 calc.py 2 3"}}}}</tool_call>
Tool result: -1
Assistant: <tool_call>{{"name": "read_file", "arguments": {{"path": "calc.py"}}}}</tool_call>
Tool result: 1  import sys ... 3  print(int(a) - int(b))
Assistant: <tool_call>{{"name": "str_replace", "arguments": {{"path": "calc.py", "old": "int(a) - int(b)", "new": "int(a) + int(b)"}}}}</tool_call>
Tool result: Replaced 1 occurrence(s)
Assistant: <tool_call>{{"name": "bash", "arguments": {{"command": "python3 calc.py 2 3"}}}}</tool_call>
Tool result: 5
Assistant: Fixed calc.py (it subtracted); python3 calc.py 2 3 now prints 5.

User: Save the three primary colors as a JSON list in {OUTPUTS}/colors.json.
Assistant: <tool_call>{{"name": "write_file", "arguments": {{"path": "{OUTPUTS}/colors.json", "content": "[\\"red\\", \\"yellow\\", \\"blue\\"]"}}}}</tool_call>
Tool result: Wrote 27 bytes
Assistant: Saved {OUTPUTS}/colors.json."""


def _section(tag: str, intro: str, entries: Sequence[PromptEntry]) -> str:
    lines = [f"<{tag}>", intro]
    for e in entries:
        where = f" ({e.path})" if e.path else ""
        lines.append(f"- {e.name}{where}: {e.description.strip()}")
    lines.append(f"</{tag}>")
    return "\n".join(lines)


def build_system_prompt(
    tools: Sequence[PromptEntry],
    skills: Sequence[PromptEntry] = (),
    subagents: Sequence[PromptEntry] = (),
    extra_instructions: str = "",
) -> str:
    """The lead's system prompt; sections for skills and sub-agents appear only when there are any."""
    parts = [ROLE, FILES]
    if tools:
        parts.append(_section("tools", "Your tools:", tools))
    if skills:
        parts.append(
            _section(
                "skills",
                f"Skills are instructions for special tasks, under {SKILLS_ROOT}. When one fits the "
                "task, read its SKILL.md with read_file first and follow it.",
                skills,
            )
        )
    if subagents:
        parts.append(
            _section(
                "subagents",
                "You can delegate parts of the work to sub-agents with the task tool. Each starts "
                "with a fresh context: give it everything it needs in the prompt.",
                subagents,
            )
        )
    parts.append(STYLE)
    if extra_instructions.strip():
        parts.append(f"<instructions>\n{extra_instructions.strip()}\n</instructions>")
    return "\n\n".join(parts)


def build_small_system_prompt(
    skills: Sequence[PromptEntry] = (),
    subagents: Sequence[PromptEntry] = (),
    extra_instructions: str = "",
) -> str:
    """The ``small`` profile's prompt: folders, seven rules and worked examples of tool use.

    A model of a few billion parameters follows examples better than descriptions, and reads
    the tools' own schemas anyway (they come with the request), so the tool list is left out.
    Skills are listed by name and path; sub-agent types only when delegation is possible.
    """
    parts = [SMALL_ROLE, SMALL_RULES, SMALL_EXAMPLES]
    if skills:
        lines = "\n".join(f"- {s.name}: read {s.path} first, then follow it. {first_sentence(s.description, 100)}" for s in skills)
        parts.append(f"Skills (instructions for special tasks):\n{lines}")
    if subagents:
        lines = "\n".join(f"- {s.name}: {first_sentence(s.description, 100)}" for s in subagents)
        parts.append(
            "When the user asks for sub-agents or parallel work, use the task tool with one of these types "
            f"and give it everything it needs in its prompt:\n{lines}"
        )
    if extra_instructions.strip():
        parts.append(extra_instructions.strip())
    return "\n\n".join(parts)


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of a tool description, for the prompt's short tool list."""
    text = " ".join(text.split())
    end = text.find(". ")
    sentence = text if end == -1 else text[: end + 1]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"
