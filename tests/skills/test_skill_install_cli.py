"""``herdsman skills install`` and ``export`` from the command line: a round trip between two
projects, a refusal that says why and writes nothing, ``--replace`` and ``--user``."""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.skills.test_skill_install import files_of, make_skill, visible
from tests.support import run_cli_here


def test_install_export_install_round_trip(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    source = make_skill(tmp_path / "src" / "csv-report")

    done = run_cli_here("skills", "install", str(source), cwd=first)
    assert done.returncode == 0, done.stderr
    assert "installed csv-report for everyone (3 files)" in done.stdout
    assert "herdsman skills secret set csv-report VAR" in done.stdout  # it declares REPORT_TOKEN
    assert "csv-report" in run_cli_here("skills", "list", cwd=first).stdout

    out = run_cli_here("skills", "export", "csv-report", "-o", str(tmp_path / "x.skill"), cwd=first)
    assert out.returncode == 0 and "exported csv-report (3 files)" in out.stdout
    again = run_cli_here("skills", "install", str(tmp_path / "x.skill"), cwd=second)
    assert again.returncode == 0, again.stderr
    assert files_of(second / "skills" / "custom" / "csv-report") == files_of(source)

    taken = run_cli_here("skills", "install", str(tmp_path / "x.skill"), cwd=second)
    assert taken.returncode == 1 and "exists already" in taken.stderr and "--replace" in taken.stderr
    assert run_cli_here("skills", "install", str(tmp_path / "x.skill"), "--replace", cwd=second).returncode == 0

    own = run_cli_here("skills", "install", str(source), "--user", "ana", cwd=second)
    assert own.returncode == 1 and "would override" in own.stderr  # the shared one of that name
    own = run_cli_here("skills", "install", str(source), "--user", "ana", "--replace", cwd=second)
    assert own.returncode == 0 and "for user ana" in own.stdout
    assert (second / "skills" / "users" / "ana" / "csv-report" / "SKILL.md").is_file()


def test_a_hostile_archive_is_refused_with_the_reason(tmp_path: Path) -> None:
    archive = tmp_path / "evil.skill"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("evil/SKILL.md", "---\nname: evil\ndescription: x\n---\nbody\n")
        zf.writestr("evil/../../../outside.txt", "x")
    project = tmp_path / "p"
    project.mkdir()
    out = run_cli_here("skills", "install", str(archive), cwd=project)
    assert out.returncode == 1
    assert (
        "Refused:" in out.stderr and "'..' would write outside" in out.stderr and "nothing was installed" in out.stderr
    )
    assert visible(project / "skills" / "custom") == [] and not (tmp_path / "outside.txt").exists()
