"""The shipped sandbox Dockerfile and the command that builds images through the engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import docker
from herdsman.sandbox.image import build_image, default_context, main
from tests.sandbox.podman_engine import EngineUnavailable, PodmanEngine, shared_engine

DOCKERFILE = default_context() / "Dockerfile"


@pytest.fixture(scope="module")
def engine() -> PodmanEngine:
    try:
        return shared_engine()
    except EngineUnavailable as exc:
        pytest.skip(str(exc))


def test_dockerfile_installs_the_promised_tools_and_runs_as_non_root() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM debian:\S+", text, re.M)
    for package in ("python3", "bash", "coreutils", "procps", "util-linux", "jq", "sqlite3", "python3-pandas"):
        assert re.search(rf"\s{re.escape(package)}\s", text), package
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert "WORKDIR /mnt/user-data/workspace" in text
    assert "python -m herdsman.sandbox.image" in text


def test_build_image_builds_on_the_engine(engine: PodmanEngine, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {engine.image}\nRUN echo built > /built.txt\nUSER 1000:1000\n")
    client = docker.DockerClient(base_url=engine.base_url)
    lines: list[str] = []
    image_id = build_image(client, tmp_path, "localhost/herdsman-derived:test", log=lines.append)
    assert image_id.startswith("sha256:")
    assert any("built" in line.lower() for line in lines)
    # Detached, then waited on: podman's compat API can leave an attached run's log stream open after the
    # container exited (CI hung 300 s in it once), and the sandbox provider never attaches either.
    container = client.containers.run("localhost/herdsman-derived:test", ["cat", "/built.txt"], detach=True)
    try:
        assert container.wait(timeout=120)["StatusCode"] == 0
        assert container.logs(stdout=True, stderr=False) == b"built\n"
    finally:
        container.remove(force=True)


def test_a_failing_build_says_why(engine: PodmanEngine, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {engine.image}\nRUN exit 7\n")
    client = docker.DockerClient(base_url=engine.base_url)
    with pytest.raises(RuntimeError, match="building localhost/broken:1 failed"):
        build_image(client, tmp_path, "localhost/broken:1")


def test_command_without_a_dockerfile_explains(tmp_path: Path, capsys) -> None:
    assert main(["--context", str(tmp_path), "--base-url", "unix:///nonexistent.sock"]) == 1
    assert "no Dockerfile" in capsys.readouterr().err
