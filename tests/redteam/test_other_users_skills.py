"""Red team: a thread's sandbox tries to read another user's own skills (issue 34).

Skills one user installs for themselves live in ``skills/users/<user>/``. The docker and
kubernetes sandboxes mounted the whole skills folder, so any thread's container could read every
user's skills (and their scripts); the bubblewrap jail hid the folders it knew of when the
command started. Now each provider mounts the shared folders and the thread's own user's
folder only: from inside, another user's skill is not there, not even one installed after the
container started, and the file tools refuse the path. A pooled docker container (started for
no one) shows no user's skills at all.

Where it runs for real: the bubblewrap jail, and podman's Docker-compatible service (skipped
when it cannot start here). Kubernetes at the wire: the pod the API server receives mounts
only ``public``, ``custom`` and ``users/<owner>`` of the skills claim.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.base import PathEscapeError, SandboxError
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.sandbox.owners import record_owner
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.skills.install import install_skill
from tests.skills.conftest import skill_md
from tests.skills.test_skill_install import make_skill

SECRET_LINE = "bo's private procedure"


def _skills(tmp_path: Path) -> Path:
    """A skills folder: a public skill, a shared custom one, and one of ana's and one of bo's own."""
    root = tmp_path / "skills"
    (root / "public" / "hello").mkdir(parents=True)
    (root / "public" / "hello" / "SKILL.md").write_text(skill_md("hello"), encoding="utf-8")
    install_skill(make_skill(tmp_path / "src" / "team-notes", "team-notes"), root)
    install_skill(make_skill(tmp_path / "src" / "ana-report", "ana-report"), root, user="ana")
    bo = make_skill(tmp_path / "src" / "bo-report", "bo-report")
    (bo / "SKILL.md").write_text(skill_md("bo-report", body=SECRET_LINE), encoding="utf-8")
    install_skill(bo, root, user="bo")
    return root


def _threads(home: Path) -> None:
    record_owner(home, "t-ana", "ana")
    record_owner(home, "t-bo", "bo")
    record_owner(home, "t-dan", "dan")  # a user with no skills of their own


PROBE = (
    "cat /mnt/skills/public/hello/SKILL.md /mnt/skills/custom/team-notes/SKILL.md | grep -c '^name:'; "
    "cat /mnt/skills/users/ana/ana-report/SKILL.md | grep '^name:'; "
    "echo users: $(ls -A /mnt/skills/users 2>&1); "
    "cat /mnt/skills/users/bo/bo-report/SKILL.md 2>/dev/null || echo no-bo; "
    "grep -rl 'private procedure' /mnt/skills 2>/dev/null; "
    "find / -xdev -name 'bo-report' 2>/dev/null; find /mnt -name 'bo-report' 2>/dev/null; true"
)


def _check_probe(output: str) -> None:
    """What ana's thread sees: the shared skills, her own, nothing of bo's."""
    assert output.splitlines()[0].strip() == "2", output  # public and shared custom
    assert "name: ana-report" in output, output
    assert "users: ana" in output and "bo" not in output.split("users:", 1)[1].splitlines()[0], output
    assert "no-bo" in output and SECRET_LINE not in output and "bo-report" not in output, output


def _check_file_tools(sandbox: Any) -> None:
    assert "name: ana-report" in sandbox.read_text("/mnt/skills/users/ana/ana-report/SKILL.md")
    for path in (
        "/mnt/skills/users/bo/bo-report/SKILL.md",
        "/mnt/skills/users/bo",
        "/mnt/skills/users/ana/../bo/bo-report/SKILL.md",
        "/mnt/skills/custom/../users/bo/bo-report/SKILL.md",
    ):
        with pytest.raises((PathEscapeError, SandboxError)):
            sandbox.read_text(path)
    listed = sandbox.list_dir("/mnt/skills", max_depth=5) + sandbox.glob("**/SKILL.md", "/mnt/skills")
    assert "/mnt/skills/users/ana/ana-report/SKILL.md" in listed and "/mnt/skills/custom/team-notes/SKILL.md" in listed
    assert not any("/bo" in p for p in listed), listed


# -- bubblewrap ------------------------------------------------------------------------


@pytest.fixture
def bwrap_provider(tmp_path: Path) -> Iterator[Any]:
    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")
    home = tmp_path / "home"
    config = HerdsmanConfig.model_validate(
        {"home": str(home), "skills": {"path": str(_skills(tmp_path))}, "sandbox": {"isolation": "bwrap"}}
    )
    _threads(home)
    provider = build_sandbox_provider(config)
    yield provider
    provider.close()


@pytest.mark.bwrap
def test_a_bwrap_jail_shows_its_users_skills_and_no_one_elses(bwrap_provider: Any, tmp_path: Path) -> None:
    ana = bwrap_provider.acquire("t-ana")
    _check_probe(ana.execute(PROBE).output)
    _check_file_tools(ana)
    # a user's first skill, installed while ana's thread is live, stays out of ana's jail
    install_skill(make_skill(tmp_path / "src" / "cy-notes", "cy-notes"), tmp_path / "skills", user="cy")
    later = ana.execute("ls -A /mnt/skills/users; cat /mnt/skills/users/cy/cy-notes/SKILL.md; true")
    assert "cy" not in later.output.split("\n", 1)[0] and "name: cy-notes" not in later.output
    dan = bwrap_provider.acquire("t-dan").execute("ls -A /mnt/skills/users 2>&1; ls /mnt/skills")
    assert "ana" not in dan.output and "bo" not in dan.output and "public" in dan.output
    local = bwrap_provider.acquire("t-local").execute("ls -AR /mnt/skills 2>&1")  # no owner: the local user
    assert "ana-report" not in local.output and "bo-report" not in local.output and "team-notes" in local.output


@pytest.mark.bwrap
def test_legacy_user_folders_inside_custom_are_moved_out_of_every_view(tmp_path: Path) -> None:
    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status().reason}")
    root = tmp_path / "skills"
    (root / "public").mkdir(parents=True)
    legacy = root / "custom" / "@bo" / "bo-report"  # where an earlier Herdsman installed bo's skill
    legacy.mkdir(parents=True)
    (legacy / "SKILL.md").write_text(skill_md("bo-report", body=SECRET_LINE), encoding="utf-8")
    home = tmp_path / "home"
    record_owner(home, "t-ana", "ana")
    config = HerdsmanConfig.model_validate(
        {"home": str(home), "skills": {"path": str(root)}, "sandbox": {"isolation": "bwrap"}}
    )
    provider = build_sandbox_provider(config)
    try:
        assert (root / "users" / "bo" / "bo-report" / "SKILL.md").is_file() and not (root / "custom" / "@bo").exists()
        out = provider.acquire("t-ana").execute(
            "grep -rl 'private procedure' /mnt/skills; ls -A /mnt/skills/custom; true"
        )
        assert SECRET_LINE not in out.output and "@bo" not in out.output and "bo-report" not in out.output
    finally:
        provider.close()


# -- docker (podman's Docker-compatible service) -----------------------------------------


@pytest.fixture
def docker_provider(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    from herdsman.sandbox.docker import DockerSandboxProvider
    from tests.sandbox.podman_engine import engine_or_skip

    engine = engine_or_skip()
    made: list[Any] = []
    home = tmp_path / "home"
    skills = _skills(tmp_path)
    _threads(home)

    def factory(warm_pool: int = 0) -> Any:
        config = HerdsmanConfig.model_validate({
            "home": str(home), "skills": {"path": str(skills)},
            "sandbox": {"provider": "docker", "command_timeout_seconds": 30,
                        "docker": {"base_url": engine.base_url, "image": engine.image, "pull": "never",
                                   "warm_pool": warm_pool},
                        "limits": {"memory_mb": 256, "pids": 64, "cpus": 1}},
        })  # fmt: skip
        provider = DockerSandboxProvider(config)
        made.append(provider)
        return provider

    yield factory
    for provider in made:
        provider.cleanup()
        provider.close()


def test_a_docker_container_shows_its_users_skills_and_no_one_elses(
    docker_provider: Callable[..., Any], tmp_path: Path
) -> None:
    provider = docker_provider()
    ana = provider.acquire("t-ana")
    _check_probe(ana.execute(PROBE).output)
    _check_file_tools(ana)
    # the container lives on: a user's first skill installed now is in no mount of it
    install_skill(make_skill(tmp_path / "src" / "cy-notes", "cy-notes"), tmp_path / "skills", user="cy")
    later = ana.execute(
        "ls -A /mnt/skills/users; grep -rl cy-notes /mnt/skills; find / -xdev -name cy-notes 2>/dev/null; true"
    )
    assert "cy" not in later.output, later.output
    # ana's own skill installed now shows at once (her folder is mounted, not its contents)
    install_skill(make_skill(tmp_path / "src" / "ana-more", "ana-more"), tmp_path / "skills", user="ana")
    assert "name: ana-more" in ana.execute("cat /mnt/skills/users/ana/ana-more/SKILL.md").output


def test_a_pooled_docker_container_never_carries_a_users_skills(
    docker_provider: Callable[..., Any], tmp_path: Path
) -> None:
    provider = docker_provider(warm_pool=1)
    from herdsman.sandbox.docker import LABEL_POOL

    pool = provider._pool
    for _ in range(1200):  # the pool fills in the background
        if pool.ready:
            break
        time.sleep(0.1)
    assert pool.ready == 1
    dan = provider.acquire("t-dan")  # no skills of his own: he gets the pooled container
    assert provider.client.containers.get(dan.box.container_id).labels.get(LABEL_POOL) == "1"
    seen = dan.execute(
        "ls -A /mnt/skills/users 2>&1; grep -rl 'private procedure' /mnt/skills; ls /mnt/skills/custom; true"
    )
    assert "ana" not in seen.output and SECRET_LINE not in seen.output and "team-notes" in seen.output
    # dan installs his first skill: his next command sees it (a container of his own), still nothing of bo's
    install_skill(make_skill(tmp_path / "src" / "dan-notes", "dan-notes"), tmp_path / "skills", user="dan")
    after = dan.execute(
        "cat /mnt/skills/users/dan/dan-notes/SKILL.md; ls -A /mnt/skills/users; grep -rl 'private procedure' /mnt/skills; true"
    )
    assert "name: dan-notes" in after.output and "bo" not in after.output.replace("dan-notes", "")
    assert provider.client.containers.get(dan.box.container_id).labels.get(LABEL_POOL) is None
    ana = provider.acquire("t-ana")  # she has skills: a fresh container showing them, never the pooled one
    _check_probe(ana.execute(PROBE).output)


# -- kubernetes, at the wire ---------------------------------------------------------------


def test_a_kubernetes_pod_mounts_its_users_skills_and_no_one_elses(tmp_path: Path) -> None:
    from herdsman.sandbox.kubernetes import KubernetesSandboxProvider
    from tests.sandbox.kube_emulator import EmulatedCluster, HostExecOpener

    cluster = EmulatedCluster()
    home = tmp_path / "home"
    skills = _skills(tmp_path)
    _threads(home)
    config = HerdsmanConfig.model_validate({
        "home": str(home), "skills": {"path": str(skills)},
        "sandbox": {"provider": "kubernetes", "command_timeout_seconds": 20,
                    "kubernetes": {"namespace": "sandboxes", "startup_timeout_seconds": 5, "skills_claim": "skills"}},
    })  # fmt: skip
    provider = KubernetesSandboxProvider(
        config, api_client=cluster.api_client(), exec_opener=HostExecOpener(cluster, lambda m: tmp_path)
    )
    try:
        for thread, user in (("t-ana", "ana"), ("t-dan", "dan"), ("t-local", None)):
            sandbox = provider.acquire(thread)
            assert sandbox.execute("true").exit_code == 0  # starts the pod
            if user == "ana":
                _check_file_tools(sandbox)
        pods = {p["metadata"]["annotations"]["herdsman/thread-id"]: p for p in cluster.live_pods("sandboxes")}
        for thread, own in (("t-ana", ["users/ana"]), ("t-dan", ["users/dan"]), ("t-local", [])):
            mounts = [m for m in pods[thread]["spec"]["containers"][0]["volumeMounts"] if m["name"] == "skills"]
            assert all(m.get("subPath") and m["readOnly"] for m in mounts), mounts  # never the whole claim
            assert sorted(m["subPath"] for m in mounts) == sorted(["custom", "public", *own])
            assert all(m["mountPath"] == f"/mnt/skills/{m['subPath']}" for m in mounts)
    finally:
        provider.cleanup()
        provider.close()
        cluster.stop()
