"""``herdsman skills list / show / validate / new`` in a fresh process, in a project folder."""

from __future__ import annotations

from pathlib import Path

from tests.support import run_cli


def test_new_list_show_validate(tmp_path: Path) -> None:
    created = run_cli("skills", "new", "csv-tools", "-d", "Convert CSV files: to JSON.", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert (tmp_path / "skills" / "custom" / "csv-tools" / "SKILL.md").is_file()

    listed = run_cli("skills", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "csv-tools" in listed.stdout and "custom" in listed.stdout and "enabled" in listed.stdout

    shown = run_cli("skills", "show", "csv-tools", cwd=tmp_path)
    assert shown.returncode == 0
    assert "/mnt/skills/custom/csv-tools/SKILL.md" in shown.stdout and "allowed-tools: all" in shown.stdout

    valid = run_cli("skills", "validate", cwd=tmp_path)
    assert valid.returncode == 0 and "1 skill(s) valid" in valid.stdout

    again = run_cli("skills", "new", "csv-tools", cwd=tmp_path)
    assert again.returncode == 1 and "already exists" in again.stderr


def test_validate_names_file_and_field_and_fails(tmp_path: Path) -> None:
    bad = tmp_path / "skills" / "public" / "broken"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: broken\nallowed_tools: [bash]\ndescription: x\n---\nbody\n")
    out = run_cli("skills", "validate", cwd=tmp_path)
    assert out.returncode == 1
    assert "skills/public/broken/SKILL.md: field 'allowed_tools'" in out.stderr
    assert "did you mean 'allowed-tools'" in out.stderr
    one = run_cli("skills", "validate", str(bad), cwd=tmp_path)
    assert one.returncode == 1 and "allowed_tools" in one.stderr
    listed = run_cli("skills", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "invalid:" in listed.stderr


def test_show_unknown_skill(tmp_path: Path) -> None:
    out = run_cli("skills", "show", "nope", cwd=tmp_path)
    assert out.returncode == 1 and "no skill named 'nope'" in out.stderr


def test_disable_and_enable_hold_for_the_cli_agent(tmp_path: Path) -> None:
    """A switch made with ``herdsman skills disable`` (or the gateway's API: same file) is
    honoured by ``herdsman run``: the agent's prompt no longer offers the skill."""
    import json

    import yaml

    run_cli("skills", "new", "csv-tools", "-d", "Convert CSV files: to JSON.", cwd=tmp_path)
    calls = tmp_path / "calls.jsonl"
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "home": "home",
                "lead": {"model_retries": 0},
                "title": {"enabled": False},
                "models": [
                    {
                        "name": "scripted",
                        "use": "herdsman.models.scripted:ScriptedChatModel",
                        "responses": ["ok"],
                        "on_exhausted": "repeat_last",
                        "record_file": str(calls),
                    }
                ],
            }
        )
    )

    def prompt_of_a_run() -> str:
        calls.unlink(missing_ok=True)
        out = run_cli("run", "hi", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return json.dumps(json.loads(calls.read_text().splitlines()[0])["messages"][0])

    assert "csv-tools" in prompt_of_a_run()
    off = run_cli("skills", "disable", "csv-tools", cwd=tmp_path)
    assert off.returncode == 0 and "disabled" in off.stdout, off.stderr
    assert "disabled" in run_cli("skills", "list", cwd=tmp_path).stdout
    assert "csv-tools" not in prompt_of_a_run()
    on = run_cli("skills", "enable", "csv-tools", cwd=tmp_path)
    assert on.returncode == 0
    assert "csv-tools" in prompt_of_a_run()
    unknown = run_cli("skills", "disable", "nope", cwd=tmp_path)
    assert unknown.returncode == 1 and "no skill named 'nope'" in unknown.stderr
