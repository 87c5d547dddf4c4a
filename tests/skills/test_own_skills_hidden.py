"""A user's own skills (``skills/custom/@<user>/``) are out of reach of every sandbox: the jail
sees an empty folder and the file tools refuse the path (the lead agent does not offer them yet,
and another user's agent must never read them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.sandbox.base import PathEscapeError
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.skills.install import install_skill
from tests.skills.test_skill_install import make_skill
from tests.support import make_config


@pytest.mark.bwrap
def test_a_users_own_skill_is_hidden_from_jails_and_file_tools(tmp_path: Path, skills_root: Path) -> None:
    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")
    install_skill(make_skill(tmp_path / "src" / "csv-report"), skills_root, user="ana")
    install_skill(make_skill(tmp_path / "src2" / "team-notes", "team-notes"), skills_root)
    config = make_config(tmp_path / "home", skills={"path": str(skills_root)}, sandbox={"isolation": "bwrap"})
    provider = build_sandbox_provider(config)
    try:
        sandbox = provider.acquire("t-bo")
        shared = sandbox.execute("cat /mnt/skills/custom/team-notes/SKILL.md")
        assert shared.exit_code == 0 and "name: team-notes" in shared.output
        own = sandbox.execute("ls -A /mnt/skills/custom/@ana; cat /mnt/skills/custom/@ana/csv-report/SKILL.md")
        assert own.exit_code != 0 and "name: csv-report" not in own.output
        assert "name: team-notes" in sandbox.read_text("/mnt/skills/custom/team-notes/SKILL.md")
        with pytest.raises(PathEscapeError, match="own skills"):
            sandbox.read_text("/mnt/skills/custom/@ana/csv-report/SKILL.md")
        listed = sandbox.list_dir("/mnt/skills/custom") + sandbox.glob("**/SKILL.md", "/mnt/skills")
        assert "/mnt/skills/custom/team-notes/SKILL.md" in listed and not any("@ana" in p for p in listed)
    finally:
        provider.close()
