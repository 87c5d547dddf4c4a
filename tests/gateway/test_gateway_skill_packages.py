"""``/api/skills/install``, ``/export`` and ``/secrets`` over HTTP, with API keys: a user's own
skill is invisible to another user, shared installs need an admin key, hostile archives are
refused with nothing written, and no answer holds a secret's value."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import httpx

from tests.gateway.gateway_support import running_gateway
from tests.skills.conftest import skill_md
from tests.support import make_config

ANA, BO, ADMIN = {"x-api-key": "key-ana"}, {"x-api-key": "key-bo"}, {"x-api-key": "key-admin"}
KEYS = [
    {"key": "key-ana", "user": "ana"},
    {"key": "key-bo", "user": "bo"},
    {"key": "key-admin", "user": "root", "role": "admin"},
]
SECRET = "gw-s3cret-value-4471"


def archive(name: str = "csv-report", extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name}/SKILL.md", skill_md(name, "Turn a CSV into a report.", env="[REPORT_TOKEN]"))
        zf.writestr(f"{name}/scripts/run.py", "print('report')\n")
        for member, data in (extra or {}).items():
            zf.writestr(member, data)
    return buffer.getvalue()


def upload(data: bytes) -> dict:
    return {"files": ("csv-report.skill", data, "application/zip")}


async def test_install_export_isolation_and_secrets(home: Path, tmp_path: Path) -> None:
    root = tmp_path / "skills"
    (root / "public").mkdir(parents=True)
    config = make_config(home, skills={"path": str(root)}, gateway={"api_keys": KEYS})
    with running_gateway(config) as gw:
        async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
            res = await http.post("/api/skills/install", headers=ANA, files=upload(archive()))
            assert res.status_code == 201, res.text
            assert res.json()["skill"]["scope"] == "own" and res.json()["files"] == 2
            assert res.json()["skill"]["path"] == "/mnt/skills/users/ana/csv-report/SKILL.md"

            mine = (await http.get("/api/skills", headers=ANA)).json()["skills"]
            theirs = (await http.get("/api/skills", headers=BO)).json()["skills"]
            assert [s["name"] for s in mine] == ["csv-report"] and mine[0]["env"] == ["REPORT_TOKEN"]
            assert theirs == []
            assert (await http.get("/api/skills/csv-report", headers=BO)).status_code == 404
            assert (await http.get("/api/skills/csv-report/export", headers=BO)).status_code == 404
            assert (
                await http.put("/api/skills/csv-report/secrets/REPORT_TOKEN", headers=BO, json={"value": "x"})
            ).status_code == 404

            exported = await http.get("/api/skills/csv-report/export", headers=ANA)
            assert exported.status_code == 200 and exported.headers["content-type"] == "application/zip"
            with zipfile.ZipFile(io.BytesIO(exported.content)) as zf, zipfile.ZipFile(io.BytesIO(archive())) as sent:
                assert {n: zf.read(n) for n in zf.namelist()} == {n: sent.read(n) for n in sent.namelist()}

            again = await http.post("/api/skills/install", headers=ANA, files=upload(archive()))
            assert again.status_code == 409 and "replace" in again.json()["detail"]
            replaced = await http.post("/api/skills/install?replace=true", headers=ANA, files=upload(exported.content))
            assert replaced.status_code == 201 and replaced.json()["replaced"] is True

            shared = await http.post("/api/skills/install?shared=true", headers=BO, files=upload(archive("team-notes")))
            assert shared.status_code == 403 and "admin key" in shared.json()["detail"]
            shared = await http.post(
                "/api/skills/install?shared=true", headers=ADMIN, files=upload(archive("team-notes"))
            )
            assert shared.status_code == 201 and shared.json()["skill"]["scope"] == "shared"
            assert [s["name"] for s in (await http.get("/api/skills", headers=BO)).json()["skills"]] == ["team-notes"]

            slip = await http.post(
                "/api/skills/install", headers=BO, files=upload(archive(extra={"../../x.txt": b"x"}))
            )
            assert slip.status_code == 422 and "'..' would write outside" in slip.json()["detail"]
            path = await http.post(
                "/api/skills/install", headers=BO, json={"url": str(root / "users" / "ana" / "csv-report")}
            )
            assert path.status_code == 422 and "must be a Git URL" in path.json()["detail"]
            git = await http.post("/api/skills/install", headers=BO, json={"url": (root / "custom").as_uri()})
            assert git.status_code == 422 and "file:// repositories are not allowed" in git.json()["detail"]
            assert sorted(p.name for p in (root / "custom").iterdir() if p.name != ".install.lock") == ["team-notes"]
            assert sorted(p.name for p in (root / "users").iterdir()) == ["ana", "bo"]
            assert [p.name for p in (root / "users" / "bo").iterdir() if p.name != ".install.lock"] == []

            put = await http.put("/api/skills/csv-report/secrets/REPORT_TOKEN", headers=ANA, json={"value": SECRET})
            assert put.status_code == 200 and put.json() == {
                "skill": "csv-report",
                "declared": ["REPORT_TOKEN"],
                "set": ["REPORT_TOKEN"],
            }
            undeclared = await http.put("/api/skills/csv-report/secrets/OTHER", headers=ANA, json={"value": "x"})
            assert undeclared.status_code == 422 and "does not declare 'OTHER'" in undeclared.json()["detail"]
            team = await http.put("/api/skills/team-notes/secrets/REPORT_TOKEN", headers=ANA, json={"value": SECRET})
            assert team.status_code == 200
            assert (await http.get("/api/skills/team-notes/secrets", headers=BO)).json()["set"] == []  # ana's, not bo's
            listing = (await http.get("/api/skills/csv-report/secrets", headers=ANA)).text
            assert SECRET not in listing + put.text + team.text
            gone = await http.delete("/api/skills/csv-report/secrets/REPORT_TOKEN", headers=ANA)
            assert gone.status_code == 200 and gone.json()["set"] == []
            assert (await http.delete("/api/skills/csv-report/secrets/REPORT_TOKEN", headers=ANA)).status_code == 404
