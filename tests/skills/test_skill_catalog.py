"""Discovery: custom overrides public, disabled and secret-less skills are left out, bad files skipped."""

from __future__ import annotations

from pathlib import Path

from herdsman.skills import load_skills
from herdsman.skills.scaffold import new_skill
from tests.skills.conftest import skill_md


def test_custom_skill_overrides_public_of_same_name(skills_root: Path, add_skill) -> None:
    add_skill("charts", description="Public charts.")
    add_skill("charts", description="My own charts.", source="custom")
    add_skill("notes")
    catalog = load_skills(skills_root, environ={})
    assert sorted(catalog.skills) == ["charts", "notes"]
    assert catalog.skills["charts"].description == "My own charts."
    assert catalog.skills["charts"].virtual_path == "/mnt/skills/custom/charts/SKILL.md"
    assert [s.source for s in catalog.overridden] == ["public"]


def test_broken_skill_is_reported_and_the_others_still_load(skills_root: Path, add_skill) -> None:
    add_skill("good")
    add_skill("broken", text="---\nname: broken\n---\nbody\n")
    catalog = load_skills(skills_root, environ={})
    assert list(catalog.skills) == ["good"]
    assert len(catalog.problems) == 1
    assert "broken/SKILL.md: field 'description'" in str(catalog.problems[0])


def test_disabled_and_missing_secrets(skills_root: Path, add_skill) -> None:
    add_skill("retired")
    add_skill("paid", text=skill_md("paid", **{"required-secrets": "[PAID_API_KEY]"}))
    catalog = load_skills(skills_root, disabled=["retired"], environ={})
    assert catalog.skills == {}
    assert [s.name for s in catalog.disabled] == ["retired"]
    assert catalog.unavailable == {"paid": ["PAID_API_KEY"]}
    with_key = load_skills(skills_root, disabled=["retired"], environ={"PAID_API_KEY": "k"})
    assert list(with_key.skills) == ["paid"]


def test_missing_folder_gives_empty_catalog(tmp_path: Path) -> None:
    assert len(load_skills(tmp_path / "nowhere")) == 0
    assert len(load_skills(None)) == 0


def test_new_skill_is_valid_and_refuses_to_overwrite(skills_root: Path) -> None:
    skill = new_skill(skills_root, "csv-tools", "Converts files: CSV to JSON.")
    assert skill.source == "custom" and skill.description == "Converts files: CSV to JSON."
    assert load_skills(skills_root, environ={}).get("csv-tools") is not None
    try:
        new_skill(skills_root, "csv-tools")
    except ValueError as exc:
        assert "already exists" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("overwrote an existing skill")


def test_repository_public_skills_are_valid() -> None:
    root = Path(__file__).resolve().parents[2] / "skills"
    catalog = load_skills(root, environ={})
    assert catalog.problems == []
