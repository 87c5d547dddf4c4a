"""Installing skills (archive, folder, Git) and exporting them: round trip, hostile packages
refused with nothing written, name clashes, per-user folders."""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from herdsman.skills import SkillError, load_skills
from herdsman.skills.archive import PackageError, PackageLimits
from herdsman.skills.install import SkillExistsError, export_skill, install_skill
from tests.skills.conftest import skill_md


def make_skill(folder: Path, name: str = "csv-report", description: str = "Turn a CSV into a report.") -> Path:
    """A skill folder with a script (executable), a nested data file and binary bytes."""
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_md(name, description, env="[REPORT_TOKEN]"), encoding="utf-8")
    scripts = folder / "scripts"
    scripts.mkdir()
    (scripts / "run.py").write_text("import sys\nprint('rows', len(sys.argv))\n", encoding="utf-8")
    os.chmod(scripts / "run.py", 0o755)
    (folder / "data" / "deep").mkdir(parents=True)
    (folder / "data" / "deep" / "table.bin").write_bytes(bytes(range(256)) * 40)
    return folder


def files_of(folder: Path) -> dict[str, tuple[bytes, bool]]:
    """Relative path -> (content, executable) of every file under ``folder``."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), bool(p.stat().st_mode & stat.S_IXUSR))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def visible(base: Path) -> list[str]:
    """What a reader of the skills folder finds under ``base`` (the install lock aside)."""
    return sorted(p.name for p in base.iterdir() if p.name != ".install.lock") if base.exists() else []


def zip_with(members: list[tuple[zipfile.ZipInfo | str, bytes]], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return buffer.getvalue()


GOOD_MD = skill_md("evil-skill").encode()


def _symlink_member() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("evil-skill/passwd")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _device_member() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("evil-skill/null")
    info.external_attr = (stat.S_IFCHR | 0o666) << 16
    return info


HOSTILE = {
    "zip-slip": (
        [("evil-skill/SKILL.md", GOOD_MD), ("evil-skill/../../escaped.txt", b"x")],
        "'..' would write outside",
    ),
    "absolute path": (
        [("evil-skill/SKILL.md", GOOD_MD), ("/tmp/herdsman-abs-escape.txt", b"x")],
        "absolute paths are refused",
    ),
    "symlink": ([("evil-skill/SKILL.md", GOOD_MD), (_symlink_member(), b"/etc/passwd")], "is a symlink"),
    "device file": ([("evil-skill/SKILL.md", GOOD_MD), (_device_member(), b"")], "is a device"),
    "oversize file": (
        [("evil-skill/SKILL.md", GOOD_MD), ("evil-skill/big.bin", os.urandom(300_000))],
        "one file may be at most",
    ),
    "bomb": ([("evil-skill/SKILL.md", GOOD_MD), ("evil-skill/zeros.bin", b"\0" * 1_500_000)], "archive bomb"),
    "too many files": (
        [("evil-skill/SKILL.md", GOOD_MD)] + [(f"evil-skill/f{i}.txt", b"x") for i in range(30)],
        "at most 20",
    ),
    "bad front matter": (
        [("evil-skill/SKILL.md", b"---\nname: evil-skill\nallowed_tool: [bash]\ndescription: x\n---\nbody\n")],
        "field 'allowed_tool'",
    ),
    "no SKILL.md": ([("evil-skill/README.md", b"hello")], "no SKILL.md"),
    "script syntax error": (
        [("evil-skill/SKILL.md", GOOD_MD), ("evil-skill/scripts/x.py", b"def broken(:\n")],
        "syntax error",
    ),
}
LIMITS = PackageLimits(max_file_bytes=2_000_000, max_files=20, max_total_bytes=5_000_000)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_package_is_refused_and_nothing_is_written(case: str, tmp_path: Path, skills_root: Path) -> None:
    members, message = HOSTILE[case]
    if case == "oversize file":
        limits = PackageLimits(max_file_bytes=100_000)
    else:
        limits = LIMITS
    archive = tmp_path / "evil.skill"
    archive.write_bytes(zip_with(members))
    with pytest.raises((PackageError, SkillError)) as refused:
        install_skill(archive, skills_root, limits=limits)
    assert message in str(refused.value)
    assert visible(skills_root / "custom") == []  # no skill, no staging folder left behind
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/herdsman-abs-escape.txt").exists()
    assert load_skills(skills_root).all_skills == []


def test_a_header_that_understates_the_size_is_caught_while_reading(tmp_path: Path, skills_root: Path) -> None:
    """The central directory says 10 bytes; the data inflates to 1 MB: the streamed count stops it."""
    data = bytearray(zip_with([("evil-skill/SKILL.md", GOOD_MD), ("evil-skill/liar.txt", b"A" * 1_000_000)]))
    central = data.rfind(b"PK\x01\x02")
    while central != -1:  # patch the declared size of liar.txt in its central directory entry
        name_len = int.from_bytes(data[central + 28 : central + 30], "little")
        if data[central + 46 : central + 46 + name_len] == b"evil-skill/liar.txt":
            data[central + 24 : central + 28] = (10).to_bytes(4, "little")
        central = data.rfind(b"PK\x01\x02", 0, central)
    archive = tmp_path / "liar.skill"
    archive.write_bytes(bytes(data))
    with pytest.raises(PackageError):
        install_skill(archive, skills_root)
    assert visible(skills_root / "custom") == []


def test_export_then_install_round_trips_every_file(tmp_path: Path, skills_root: Path) -> None:
    source = make_skill(tmp_path / "src" / "csv-report")
    first = install_skill(source, skills_root)
    assert first.skill.name == "csv-report" and first.files == 3 and not first.replaced
    installed = skills_root / "custom" / "csv-report"
    assert files_of(installed) == files_of(source)

    archive = tmp_path / "csv-report.skill"
    assert export_skill(first.skill, archive) == 3
    with zipfile.ZipFile(archive) as zf:
        assert sorted(zf.namelist()) == [
            "csv-report/SKILL.md",
            "csv-report/data/deep/table.bin",
            "csv-report/scripts/run.py",
        ]

    other = tmp_path / "elsewhere" / "skills"
    again = install_skill(archive, other)
    assert files_of(other / "custom" / "csv-report") == files_of(source)
    assert load_skills(other).get("csv-report").env == {"REPORT_TOKEN": ""}
    assert again.skill.virtual_path == "/mnt/skills/custom/csv-report/SKILL.md"


def test_a_taken_name_is_refused_unless_replace(tmp_path: Path, skills_root: Path, add_skill) -> None:
    add_skill("csv-report", source="public")  # a shipped skill of the same name
    source = make_skill(tmp_path / "v1" / "csv-report")
    with pytest.raises(SkillExistsError, match="pass --replace"):
        install_skill(source, skills_root)
    install_skill(source, skills_root, replace=True)  # overrides the public one
    assert load_skills(skills_root).get("csv-report").source == "custom"

    v2 = tmp_path / "v2" / "csv-report"
    shutil.copytree(source, v2)
    (v2 / "scripts" / "run.py").write_text("print('v2')\n")
    (v2 / "data" / "deep" / "table.bin").unlink()
    with pytest.raises(SkillExistsError, match="installed for everyone"):
        install_skill(v2, skills_root)
    done = install_skill(v2, skills_root, replace=True)
    assert done.replaced
    assert files_of(skills_root / "custom" / "csv-report") == files_of(v2)  # the old files are gone
    assert visible(skills_root / "custom") == ["csv-report"]


def test_a_folder_with_a_symlink_is_refused(tmp_path: Path, skills_root: Path) -> None:
    source = make_skill(tmp_path / "src" / "csv-report")
    (source / "data" / "secrets").symlink_to("/etc/shadow")
    with pytest.raises(PackageError, match="symbolic link"):
        install_skill(source, skills_root)
    assert visible(skills_root / "custom") == []


def test_a_users_own_skill_is_seen_by_that_user_only(tmp_path: Path, skills_root: Path) -> None:
    source = make_skill(tmp_path / "src" / "csv-report")
    done = install_skill(source, skills_root, user="ana")
    assert (skills_root / "users" / "ana" / "csv-report" / "SKILL.md").is_file()
    assert done.skill.owner == "ana"
    assert done.skill.virtual_path == "/mnt/skills/users/ana/csv-report/SKILL.md"
    assert load_skills(skills_root, user="ana").get("csv-report") is not None
    assert load_skills(skills_root, user="bo").get("csv-report") is None
    assert load_skills(skills_root).get("csv-report") is None  # nor shared, nor a broken folder
    assert load_skills(skills_root).problems == []
    with pytest.raises(PackageError, match="cannot name a user"):
        install_skill(source, skills_root, user="../ana")


def git(*args: str, cwd: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_install_from_a_git_repository(tmp_path: Path, skills_root: Path) -> None:
    repo = make_skill(tmp_path / "repo")
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "skill", cwd=repo)
    (repo / "SKILL.md").write_text(skill_md("csv-report", "Uncommitted: not what the repository holds."))

    done = install_skill(repo.as_uri(), skills_root, user="ana")
    installed = skills_root / "users" / "ana" / "csv-report"
    assert done.skill.description == "Turn a CSV into a report."  # the committed version
    assert not (installed / ".git").exists()
    assert (installed / "scripts" / "run.py").stat().st_mode & stat.S_IXUSR

    with pytest.raises(PackageError, match="file:// repositories are not allowed"):
        install_skill(repo.as_uri(), skills_root, user="bo", git_protocols=("https",))
    with pytest.raises(PackageError, match="could not clone"):
        install_skill((tmp_path / "nothing-here").as_uri(), skills_root)
    assert visible(skills_root / "users" / "bo") == [] and visible(skills_root / "users") == ["ana", "bo"]
