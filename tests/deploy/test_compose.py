"""deploy/compose: the file is valid Compose, its services are wired to each other, and the
config.yaml the gateways mount passes Herdsman's own config schema.

Read by real tools (see deploy_support): podman-compose resolves the file as an engine would,
the Compose Specification's JSON schema refuses unknown keys, and ``parse_config`` is what
``herdsman serve`` runs on the mounted file. Bringing the stack up is not tested here: its images
start from base images on a container registry this machine cannot reach (docs/deploy.md).
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from herdsman.commands.check import check_config
from herdsman.config import ConfigError, parse_config
from tests.deploy.deploy_support import (
    COMPOSE_DIR,
    COMPOSE_ENV_EXAMPLE,
    COMPOSE_FILE,
    REPO,
    bind_mounts,
    compose_schema_errors,
    env_file_values,
    podman_compose,
    resolved_compose,
)

HERDSMAN_SERVICES = ("gateway-1", "gateway-2", "worker")


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def resolved() -> dict:
    return resolved_compose(COMPOSE_FILE, COMPOSE_ENV_EXAMPLE, "workers")


def test_the_file_follows_the_compose_specification(raw: dict) -> None:
    assert compose_schema_errors(raw) == []


def test_the_schema_check_catches_a_mistyped_key(raw: dict) -> None:
    broken = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    broken["services"]["proxy"]["port"] = broken["services"]["proxy"].pop("ports")
    broken["services"]["redis"]["volumes"] = "redis-data:/data"  # a list in the spec
    errors = compose_schema_errors(broken)
    assert any("$.services.proxy" in e and "'port'" in e for e in errors), errors
    assert any(e.startswith("$.services.redis.volumes:") for e in errors), errors


def test_podman_compose_resolves_it_with_the_example_env(resolved: dict) -> None:
    services = resolved["services"]
    assert {"proxy", "gateway-1", "gateway-2", "worker", "web", "sandbox", "postgres", "redis", "init"} <= set(services)
    # The secrets of .env.example reached the gateways' environment through interpolation.
    example = env_file_values(COMPOSE_ENV_EXAMPLE)
    env = services["gateway-1"]["environment"]
    assert env["HERDSMAN_API_KEY"] == example["HERDSMAN_API_KEY"]
    assert example["POSTGRES_PASSWORD"] in env["DATABASE_URL"]


def test_a_missing_secret_stops_compose_with_its_name(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    lines = [ln for ln in COMPOSE_ENV_EXAMPLE.read_text().splitlines() if not ln.startswith("POSTGRES_PASSWORD=")]
    env_file.write_text("\n".join(lines) + "\n")
    done = podman_compose(COMPOSE_FILE, env_file, "config")
    assert done.returncode != 0
    assert "set POSTGRES_PASSWORD in .env" in done.stderr


def test_workers_wait_for_their_profile(raw: dict) -> None:
    """Separate workers are optional (the gateways' in-process workers execute runs): a plain `up`
    starts none, `--profile workers` starts `herdsman worker` processes."""
    assert raw["services"]["worker"]["profiles"] == ["workers"]
    assert raw["services"]["worker"]["command"] == ["worker"]
    assert "profiles" not in raw["services"]["gateway-1"]


def test_every_dependency_and_build_exists(resolved: dict) -> None:
    services = resolved["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on {dependency}, which is not a service"
        build = service.get("build")
        if build:
            context = (COMPOSE_DIR / build["context"]).resolve()
            assert (context / build.get("dockerfile", "Dockerfile")).is_file(), f"{name}: no Dockerfile in {context}"
    # Gateways and workers run the one image built from docker/gateway, with their own command.
    images = {services[s]["image"] for s in (*HERDSMAN_SERVICES, "init")}
    assert images == {"herdsman:latest"}
    assert services["gateway-1"]["command"][0] == "serve" and services["worker"]["command"] == ["worker"]


def test_only_the_proxy_is_published_and_it_reaches_both_gateways_and_the_web_ui(resolved: dict) -> None:
    services = resolved["services"]
    published = {name for name, s in services.items() if s.get("ports")}
    assert published == {"proxy"}
    nginx = (COMPOSE_DIR / "nginx.conf").read_text()
    assert bind_mounts(services["proxy"])["/etc/nginx/conf.d/default.conf"] == "./nginx.conf"
    upstreams = dict(re.findall(r"upstream (\w+) \{(.*?)\}", nginx, re.S))
    gateways = set(re.findall(r"server ([\w-]+):(\d+)", upstreams["herdsman_gateways"]))
    assert gateways == {("gateway-1", "2026"), ("gateway-2", "2026")}
    for name, port in gateways:
        assert port in services[name]["expose"] and port in " ".join(services[name]["command"])
        assert f"127.0.0.1:{port}/ok" in " ".join(services[name]["healthcheck"]["test"])
    assert re.findall(r"server ([\w-]+):(\d+)", upstreams["herdsman_web"]) == [("web", "8080")]
    # Each client (API key, else address) is rate-limited, and over-limit requests get a 429.
    assert re.search(r"limit_req_zone \$herdsman_client zone=\w+:\w+ rate=\d+r/s;", nginx)
    assert "limit_req_status 429;" in nginx and "proxy_buffering off;" in nginx


def test_gateways_mount_the_config_the_data_and_the_engine_socket(resolved: dict) -> None:
    example = env_file_values(COMPOSE_ENV_EXAMPLE)
    for name in HERDSMAN_SERVICES:
        service = resolved["services"][name]
        mounts = bind_mounts(service)
        assert (COMPOSE_DIR / mounts["/etc/herdsman/config.yaml"]).resolve() == COMPOSE_DIR / "config.yaml"
        assert service["environment"]["HERDSMAN_CONFIG"] == "/etc/herdsman/config.yaml"
        assert mounts["/data"] == example["HERDSMAN_DATA_DIR"] == service["environment"]["HERDSMAN_HOST_HOME"]
        assert mounts["/var/run/docker.sock"] == example["DOCKER_SOCKET"]
        assert service["group_add"] == [example["DOCKER_GID"]]


def test_the_mounted_config_passes_the_config_schema_with_the_gateways_environment(resolved: dict) -> None:
    """What `herdsman serve` does with the file, with exactly the variables the service gets."""
    services = resolved["services"]
    gateway = services["gateway-1"]
    text = (COMPOSE_DIR / "config.yaml").read_text(encoding="utf-8")
    config = parse_config(text, "deploy/compose/config.yaml", env=gateway["environment"])
    problems = [str(p) for p in check_config(config, probe_network=False)]
    assert problems == []

    assert config.checkpointer.type == "postgres" and config.memory.store == "postgres"
    assert config.gateway.stream_bridge == "redis"
    assert config.sandbox.provider == "docker"
    # The URLs name the compose services, with the passwords those services are given.
    database = urlsplit(config.checkpointer.url)
    assert (database.hostname, database.port) == ("postgres", 5432)
    assert database.password == services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert database.path.lstrip("/") == services["postgres"]["environment"]["POSTGRES_DB"]
    redis = urlsplit(config.gateway.redis_url)
    assert (redis.hostname, redis.password) == ("redis", services["redis"]["environment"]["REDIS_PASSWORD"])
    # The home is the data mount; the engine finds it at its host path; skills live under it.
    mounts = bind_mounts(gateway)
    assert str(config.home) == "/data" and str(config.sandbox.docker.host_home) == mounts["/data"]
    assert config.skills.path.is_relative_to(config.home)
    assert config.sandbox.docker.base_url == "unix:///var/run/docker.sock"
    assert config.sandbox.docker.image == services["sandbox"]["image"]
    # Off loopback, the gateway needs keys: a user key and an admin key.
    assert {k.role for k in config.gateway.keys()} == {"user", "admin"}
    assert config.gateway.port == 2026


def test_the_config_check_catches_a_broken_config(resolved: dict) -> None:
    env = dict(resolved["services"]["gateway-1"]["environment"])
    text = (COMPOSE_DIR / "config.yaml").read_text(encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        parse_config(text.replace("    pull: never", "    pul: never"), "config.yaml", env=env)
    assert "sandbox.docker.pul" in str(caught.value)
    env.pop("REDIS_URL")
    with pytest.raises(ConfigError, match="REDIS_URL"):
        parse_config(text, "config.yaml", env=env)


def test_the_images_build_from_the_repository() -> None:
    gateway = (REPO / "docker" / "gateway" / "Dockerfile").read_text()
    web = (REPO / "docker" / "web" / "Dockerfile").read_text()
    assert gateway.count("\nFROM ") + gateway.startswith("FROM ") >= 2, "multi-stage"
    assert "USER 1000:1000" in gateway and 'ENTRYPOINT ["tini", "--", "herdsman"]' in gateway
    assert "COPY src ./src" in gateway and "COPY skills /app/skills" in gateway
    assert "nginx-unprivileged" in web and "npm run build" in web
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", "web/node_modules", ".env"} <= set(ignored)


def test_the_gateway_image_build_stage_makes_a_package_with_the_serve_command(tmp_path: Path) -> None:
    """The build stage's `pip install .`, on exactly what its COPY lines bring into the context
    (less .dockerignore): the wheel holds both packages and the `herdsman serve` entry points.
    Building the image itself needs its base image from a container registry; this does not."""
    dockerfile = (REPO / "docker" / "gateway" / "Dockerfile").read_text()
    build_stage = dockerfile.split("\nFROM ")[1]
    ignored = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    context = tmp_path / "context"
    context.mkdir()
    for line in build_stage.splitlines():
        if not line.startswith("COPY ") or "--from" in line:
            continue
        *sources, _ = line.split()[1:]
        for source in sources:
            assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), f"{source} is in .dockerignore"
            target = context / source
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy(REPO / source, target)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "wheel"), str(context)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("herdsman-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert "herdsman/cli.py" in names and "herdsman_gateway/app.py" in names
    assert "herdsman = herdsman.cli:app" in entry_points
    assert "serve = herdsman_gateway.command:register" in entry_points
