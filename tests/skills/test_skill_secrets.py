"""Secrets a skill declares: kept per user with mode 0600, passed to the skill's commands as
environment variables, and found nowhere else after a run (prompt, tool results, checkpoints,
traces, logs)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.skills import load_skills
from herdsman.skills.command_env import SkillCommandEnv, skills_named
from herdsman.skills.secrets import SecretError, SkillSecrets
from tests.skills.conftest import skill_md
from tests.support import make_config

SECRET = "s3cr3t-V4LUE-9f2c1e77d0b54a"  # what must never show outside the secrets file
SCRIPT = """#!/bin/sh
echo "token length: ${#DEMO_TOKEN}"
printf %s "$DEMO_TOKEN" | sha256sum | cut -c1-16
echo "echoed: $DEMO_TOKEN"
echo "region: ${DEMO_REGION:-unset}"
"""


def demo_skill(skills: Path) -> Path:
    folder = skills / "custom" / "api-demo"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_md("api-demo", "Calls the demo API.", env="[DEMO_TOKEN, DEMO_REGION]"))
    (folder / "scripts" / "call.sh").write_text(SCRIPT)
    return folder


def test_the_store_keeps_values_private_and_lists_names_only(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    demo_skill(skills)
    skill = load_skills(skills).get("api-demo")
    store = SkillSecrets(tmp_path / "home" / "skill_secrets")
    store.set("ana", skill, "DEMO_TOKEN", SECRET)
    files = list(store.folder.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    assert "ana" not in files[0].name  # the file is named by a hash of the user
    assert store.names("ana") == {"api-demo": ["DEMO_TOKEN"]} and store.names("bo") == {}
    with pytest.raises(SecretError, match="does not declare 'AWS_SECRET_ACCESS_KEY'"):
        store.set("ana", skill, "AWS_SECRET_ACCESS_KEY", "x")
    assert store.unset("ana", "api-demo", "DEMO_TOKEN") and store.names("ana") == {}


def test_a_command_gets_the_secrets_of_the_skills_it_runs_for_its_user_only(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    demo_skill(skills)
    store = SkillSecrets(tmp_path / "skill_secrets")
    store.set("ana", load_skills(skills).get("api-demo"), "DEMO_TOKEN", SECRET)
    env = SkillCommandEnv(store)
    ana = {"configurable": {"user_id": "ana"}}
    assert env("sh /mnt/skills/custom/api-demo/scripts/call.sh", {}, ana) == {"DEMO_TOKEN": SECRET}
    assert env("echo $DEMO_TOKEN", {}, ana) == {}  # a command that runs no skill gets nothing
    assert env("echo $DEMO_TOKEN", {"active_skill": {"name": "api-demo", "message_id": "m"}}, ana) == {
        "DEMO_TOKEN": SECRET
    }
    # a skill the harness chose by word overlap, not the user: only its own scripts get the secret
    chosen = {"active_skill": {"name": "api-demo", "message_id": "m", "chosen": True}}
    assert env("echo $DEMO_TOKEN", chosen, ana) == {}
    assert env("sh /mnt/skills/custom/api-demo/scripts/call.sh", chosen, ana) == {"DEMO_TOKEN": SECRET}
    assert env("sh /mnt/skills/custom/api-demo/scripts/call.sh", {}, {"configurable": {"user_id": "bo"}}) == {}
    assert skills_named("cat /mnt/skills/users/bo/x/a; sh /mnt/skills/users/ana/y/b", "ana") == ["y"]


def test_cli_sets_a_secret_from_stdin_and_lists_its_name_only(tmp_path: Path) -> None:
    from herdsman.cli import app

    demo_skill(tmp_path / "skills")
    (tmp_path / "config.yaml").write_text("home: home\n")
    runner = CliRunner()
    with contextlib.chdir(tmp_path):
        done = runner.invoke(
            app,
            ["skills", "secret", "set", "api-demo", "DEMO_TOKEN"],
            input=SECRET + "\n",
            env={"HERDSMAN_CONFIG": None},
        )
        assert done.exit_code == 0, done.output
        listed = runner.invoke(app, ["skills", "secret", "list"], env={"HERDSMAN_CONFIG": None})
        wrong = runner.invoke(
            app, ["skills", "secret", "set", "api-demo", "HOME_DIR"], input="x\n", env={"HERDSMAN_CONFIG": None}
        )
    assert "api-demo: DEMO_TOKEN" in listed.output and SECRET not in listed.output + done.output
    assert wrong.exit_code == 1 and "does not declare 'HOME_DIR'" in wrong.output
    assert SkillSecrets(tmp_path / "home" / "skill_secrets").values_for(None, ["api-demo"]) == {"DEMO_TOKEN": SECRET}


@pytest.mark.bwrap
async def test_a_secret_reaches_the_skills_command_and_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")
    skills, home = tmp_path / "skills", tmp_path / "home"
    demo_skill(skills)
    config = make_config(
        home,
        skills={"path": str(skills), "auto_select": "activate"},
        sandbox={"isolation": "bwrap"},
        checkpointer={"type": "sqlite"},
    )
    SkillSecrets.of(config).set(None, load_skills(skills).get("api-demo"), "DEMO_TOKEN", SECRET)
    model = ScriptedChatModel(
        responses=[
            {"tool_calls": [{"name": "bash", "args": {"command": "sh /mnt/skills/custom/api-demo/scripts/call.sh"}}]},
            {"tool_calls": [{"name": "bash", "args": {"command": "echo outside: ${DEMO_TOKEN:-none}"}}]},
            "The demo API answered.",
        ]
    )
    caplog.set_level(logging.DEBUG)
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("call the demo api", thread_id="t-secret")]
    results = [e for e in events if isinstance(e, ToolResult)]

    digest = hashlib.sha256(SECRET.encode()).hexdigest()[:16]
    assert f"token length: {len(SECRET)}" in results[0].content and digest in results[0].content
    assert "echoed: [secret hidden]" in results[0].content and "region: unset" in results[0].content
    assert "outside: none" in results[1].content  # a command that runs no skill gets no secret
    # ...even though the harness chose and activated the skill for this request (auto_select: activate)
    assert '<active_skill name="api-demo"' in model.calls[0].messages[0].text

    seen = "\n".join(str(m) for call in model.calls for m in call.messages)  # every prompt the model got
    assert "token length" in seen and SECRET not in seen
    leaks = [
        p
        for p in home.rglob("*")
        if p.is_file() and "skill_secrets" not in p.parts and SECRET.encode() in p.read_bytes()
    ]
    assert leaks == []  # checkpoints, traces, transcripts, thread files
    kept = [p for p in home.rglob("*") if p.is_file() and b"token length" in p.read_bytes()]
    assert any("checkpoint" in p.name for p in kept), kept  # the search looked where the tool result is kept
    out, err = capfd.readouterr()
    assert SECRET not in caplog.text and SECRET not in out and SECRET not in err


def test_a_required_secret_set_by_the_local_user_makes_the_skill_available(tmp_path: Path) -> None:
    from herdsman.skills.catalog import agent_skills

    folder = tmp_path / "skills" / "custom" / "paid-api"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        skill_md("paid-api", "Calls a paid API.", **{"required-secrets": "[PAID_TOKEN_NEVER_IN_ENV]"})
    )
    config = make_config(tmp_path / "home", skills={"path": str(tmp_path / "skills")})
    assert agent_skills(config).unavailable == {"paid-api": ["PAID_TOKEN_NEVER_IN_ENV"]}
    SkillSecrets.of(config).set(
        "ana", load_skills(tmp_path / "skills").all_skills[0], "PAID_TOKEN_NEVER_IN_ENV", SECRET
    )
    assert "paid-api" not in agent_skills(config).skills  # another user's value does not count for the agent
    SkillSecrets.of(config).set(None, load_skills(tmp_path / "skills").all_skills[0], "PAID_TOKEN_NEVER_IN_ENV", SECRET)
    assert "paid-api" in agent_skills(config).skills
