"""SKILL.md parsing: every field, and errors that name the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.skills import SkillError, parse_skill_file
from tests.skills.conftest import skill_md


def parse(tmp_path: Path, text: str, folder: str = "demo"):
    directory = tmp_path / folder
    directory.mkdir(exist_ok=True)
    (directory / "SKILL.md").write_text(text)
    return parse_skill_file(directory, "public")


def test_all_fields_are_read(tmp_path: Path) -> None:
    text = skill_md(
        "demo",
        description="Make charts from CSV files.\n  Use it for data.",
        license="MIT",
        **{
            "allowed-tools": "bash, read_file",
            "env": "{REGION: the cloud region}",
            "required-secrets": "[DEMO_KEY]",
            "outputs": '["**/*.png", "summary.md"]',
            "metadata": "{owner: team-a}",
            "examples": '["Chart sales.csv by month", "把 data.csv 画成柱状图"]',
        },
    )
    skill = parse(tmp_path, text)
    assert skill.name == "demo"
    assert skill.description == "Make charts from CSV files. Use it for data."
    assert skill.license == "MIT"
    assert skill.allowed_tools == ("bash", "read_file")
    assert skill.env == {"REGION": "the cloud region"}
    assert skill.required_secrets == ("DEMO_KEY",)
    assert skill.outputs == ("**/*.png", "summary.md")
    assert skill.metadata == {"owner": "team-a"}
    assert skill.examples == ("Chart sales.csv by month", "把 data.csv 画成柱状图")
    assert skill.body.startswith("# Steps")
    assert skill.virtual_path == "/mnt/skills/public/demo/SKILL.md"
    assert skill.missing_secrets({}) == ["DEMO_KEY"] and skill.missing_secrets({"DEMO_KEY": "x"}) == []


def test_no_allowed_tools_means_all_and_list_form_works(tmp_path: Path) -> None:
    assert parse(tmp_path, skill_md("demo")).allowed_tools is None
    assert parse(tmp_path, skill_md("demo", **{"allowed-tools": "[grep, glob]"})).allowed_tools == ("grep", "glob")
    assert parse(tmp_path, skill_md("demo", **{"allowed-tools": "[]"})).allowed_tools == ()


@pytest.mark.parametrize(
    ("text", "field", "fragment"),
    [
        ("no front matter at all\n", None, "start the file with a '---' line"),
        ("---\nname: demo\ndescription: x\n\nbody\n", None, "not closed"),
        ("---\nname: demo\ndescription: a: b: c\n---\nbody\n", None, "not valid YAML at line 3"),
        ("---\n- a\n- b\n---\nbody\n", None, "must be a mapping"),
        (skill_md("demo", description="''"), "description", "missing or empty"),
        ("---\ndescription: x\n---\nbody\n", "name", "is missing"),
        (skill_md("Demo_Skill"), "name", "lowercase letters, digits and single hyphens"),
        (skill_md("other"), "name", "differs from the folder name 'demo'"),
        (skill_md("demo", allowed_tools="[bash]"), "allowed_tools", "did you mean 'allowed-tools'"),
        (skill_md("demo", **{"allowed-tools": "{a: 1}"}), "allowed-tools", "must be a list of names"),
        (skill_md("demo", **{"required-secrets": "[my-key]"}), "required-secrets", "'my-key' is not a valid name"),
        (skill_md("demo", env="[1BAD]"), "env", "'1BAD' is not a valid name"),
        (skill_md("demo", outputs="[../../etc/x]"), "outputs", "'../../etc/x' is not a valid name"),
        (skill_md("demo", outputs="[/etc/passwd]"), "outputs", "'/etc/passwd' is not a valid name"),
        (skill_md("demo", license="[1, 2]"), "license", "must be a string"),
        (skill_md("demo", body=""), None, "has no instructions"),
        (skill_md("demo", examples="Chart it"), "examples", "must be a list of non-empty strings"),
        (skill_md("demo", examples="[a, '']"), "examples", "must be a list of non-empty strings"),
        (skill_md("demo", examples="[a, b, c, d, e, f]"), "examples", "keep at most 5"),
        (skill_md("demo", examples=f"[{'x' * 201}]"), "examples", "keep each example under 200"),
        (skill_md("demo", serve="80"), "serve", "is not a port; give a number from 1024 to 65535"),
        (skill_md("demo", serve="yes"), "serve", "is not a port"),
    ],
)
def test_bad_skill_files_name_file_and_field(tmp_path: Path, text: str, field: str | None, fragment: str) -> None:
    with pytest.raises(SkillError) as info:
        parse(tmp_path, text)
    error = info.value
    assert error.file.endswith("demo/SKILL.md")
    assert error.field == field
    assert fragment in str(error)
    assert str(error).startswith(error.file)


def test_missing_skill_md(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillError, match="every skill folder needs a SKILL.md"):
        parse_skill_file(tmp_path / "empty")


def test_serve_is_a_port(tmp_path: Path) -> None:
    assert parse(tmp_path, skill_md("demo", serve="8000")).serve == 8000
    assert parse(tmp_path, skill_md("demo")).serve is None
