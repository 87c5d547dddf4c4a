"""A custom agent's settings narrow the lead's prompt and tools (middleware/agent_profile.py)."""

from __future__ import annotations

from herdsman.agents.prompt import PromptEntry, build_system_prompt
from herdsman.middleware.agent_profile import agent_prompt, tool_allowed

PROMPT = build_system_prompt(
    [PromptEntry("bash", "Run a command."), PromptEntry("read_file", "Read a file."), PromptEntry("task", "Delegate.")],
    skills=[
        PromptEntry("data-analysis", "Analyze data.\nWith charts.", "/mnt/skills/a"),
        PromptEntry("deep-research", "Research.", "/mnt/skills/b"),
    ],
    subagents=[PromptEntry("bash", "Shell work."), PromptEntry("general-purpose", "Anything.")],
)


def section(prompt: str, tag: str) -> str:
    return prompt.split(f"<{tag}>")[1].split(f"</{tag}>")[0] if f"<{tag}>" in prompt else ""


def test_no_settings_change_nothing() -> None:
    assert agent_prompt(PROMPT, {"thread_id": "t"}) == PROMPT


def test_allow_lists_narrow_each_section_by_entry() -> None:
    prompt = agent_prompt(
        PROMPT, {"skills": ["deep-research"], "tools": ["read_file", "task"], "subagent_types": ["bash"]}
    )
    assert (
        "data-analysis" not in prompt and "With charts." not in prompt and "deep-research" in section(prompt, "skills")
    )
    assert "- bash" not in section(prompt, "tools") and "- read_file" in section(prompt, "tools")
    assert (
        "- bash" in section(prompt, "subagents") and "general-purpose" not in prompt
    )  # a tool list never touches sub-agents
    assert "Skills are instructions" in section(prompt, "skills")  # the intro stays


def test_empty_lists_drop_sections_and_delegation() -> None:
    prompt = agent_prompt(PROMPT, {"skills": [], "subagent_types": [], "instructions": "  Be a parrot.  "})
    assert "<skills>" not in prompt and "<subagents>" not in prompt and "- task" not in section(prompt, "tools")
    assert prompt.endswith("<agent_instructions>\nBe a parrot.\n</agent_instructions>")
    assert not tool_allowed({"subagent_types": []}, "run_plan") and tool_allowed({"subagent_types": []}, "bash")
    assert not tool_allowed({"tools": ["ls"]}, "bash") and tool_allowed({}, "bash")
