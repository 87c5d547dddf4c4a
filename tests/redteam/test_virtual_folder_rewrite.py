"""Red team: ``outputs/...``, ``uploads/...`` and ``workspace/...`` in a bash command are rewritten
to the virtual folders before it runs (``sandbox/virtual_folders.py``), whatever it ``cd``s to.

What must hold: the rewrite only ever names this thread's own virtual folders (a crafted path
goes no further than the same path written absolute would: the file access on the host and the
jail refuse the rest), and a human approving bash calls (``tools.require_approval``) approves the
command that runs, not the model's text that the rewrite then changes (``cd /tmp/build && rm -rf
outputs/*`` ran as ``rm -rf /mnt/user-data/outputs/*``).

What the rewrite changes on purpose, and the tests record: a folder name inside quoted text is
rewritten too (``python3 -c "open('outputs/a.txt')"`` is the case it is for), so a string that
only looks like such a path (a grep pattern ``"uploads/"``) is changed as well; text the command
line shows is no path (the arguments of echo and printf, the text of a heredoc fed to ``cat``)
is left as written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from herdsman.agents.lead import create_lead_agent, run_config
from herdsman.config.schema import HerdsmanConfig
from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.local import LocalSandboxProvider
from herdsman.sandbox.virtual_folders import rewrite_command
from tests.support import make_config

HOSTILE = [
    "cat outputs/../../../../etc/shadow",
    "ls workspace/../../t2/user-data/workspace",
    "cat ./uploads/../../../proc/1/environ",
    "cd / && cat outputs/../../../root/.ssh/id_rsa",
    "echo $(cat outputs/../x)",
    "cat outputs//../../x",
    "cat `echo outputs/`../y",
]


@pytest.mark.parametrize("command", HOSTILE)
def test_the_rewrite_only_ever_names_the_threads_own_virtual_folders(command: str) -> None:
    rewritten = rewrite_command(command)
    added = re.findall(r"/mnt/user-data/[a-z]+/", rewritten)
    assert added and all(
        a in ("/mnt/user-data/outputs/", "/mnt/user-data/uploads/", "/mnt/user-data/workspace/") for a in added
    )
    assert rewrite_command(rewritten) == rewritten  # once: never doubled into another path


def test_a_crafted_path_reaches_no_other_threads_files(tmp_path: Path) -> None:
    """The host side of a command (the grep note reads the files it names) refuses
    ``outputs/../../..`` out of the thread, as it refuses the same path written absolute."""
    config = HerdsmanConfig.model_validate(
        {
            "home": str(tmp_path / "home"),
            "skills": {"enabled": False},
            "sandbox": {"isolation": "none", "allow_unisolated_bash": True},
        }
    )
    provider = LocalSandboxProvider(config)
    try:
        provider.acquire("t1")
        other = provider.acquire("t2")
        (other.paths.workspace / "secret.txt").write_text("hunter2 of thread two\n")
        from herdsman.sandbox.grep_hint import no_match_hint

        sandbox = provider.acquire("t1")
        for path in (
            "outputs/../../../t2/user-data/workspace/secret.txt",
            "workspace/../../../t2/user-data/workspace/secret.txt",
        ):
            note = no_match_hint(sandbox, rewrite_command(f"grep 'hunter2 zzqq' {path}"), 1, "")
            assert "hunter2" not in note
    finally:
        provider.close()


async def test_a_human_approves_the_command_that_runs(home: Path) -> None:
    """Bash needs approval; the model cleans 'outputs/' after cd'ing to a scratch folder: the
    approval request shows the deliverables' folder, as it will run."""
    outputs = home / "threads" / "appr" / "user-data" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "report.md").write_text("the deliverable")
    command = "mkdir -p /tmp/build && cd /tmp/build && rm -rf outputs/*"
    config = make_config(home, tools={"require_approval": ["bash"]})
    model = ScriptedChatModel(
        responses=[{"tool_calls": [{"name": "bash", "args": {"command": command}}]}, "cleaned", "ok"]
    )
    agent = create_lead_agent(config, model=model, checkpointer=InMemorySaver())
    cfg = run_config(config, "appr")
    paused = await agent.ainvoke({"messages": [HumanMessage("clean the build folder")]}, cfg)
    shown = paused["__interrupt__"][0].value["action_requests"][0]["args"]["command"]
    assert shown == rewrite_command(command) and "rm -rf /mnt/user-data/outputs/*" in shown
    assert (outputs / "report.md").exists()
    await agent.ainvoke(Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), cfg)
    assert (outputs / "report.md").read_text() == "the deliverable"


def test_quoted_text_that_looks_like_a_folder_is_rewritten_unless_it_is_printed() -> None:
    """Recorded: the rewrite cannot tell a path in quotes from data in quotes, except where the
    command only prints it."""
    assert rewrite_command("printf 'outputs/\\n' > .gitignore") == "printf 'outputs/\\n' > .gitignore"
    assert rewrite_command("grep -c 'outputs/' notes.txt") == "grep -c '/mnt/user-data/outputs/' notes.txt"
    assert (
        rewrite_command("grep -c 'GET /uploads/' access.log") == "grep -c 'GET /uploads/' access.log"
    )  # after a slash: kept
