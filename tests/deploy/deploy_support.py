"""Checkers the deployment tests share: the Compose file and the Helm chart, read by real tools.

- Compose: ``podman-compose config`` (PyPI, a maintained Compose implementation) resolves the file
  as an engine would (``${VAR:?}`` interpolation from an env file, YAML merge keys, profiles), and
  the Compose Specification's own JSON schema (``schemas/compose-spec.json``, vendored from the
  compose-spec repository, Apache-2.0; no PyPI package ships it) catches unknown or mistyped keys,
  which podman-compose passes through silently. ``docker compose`` is a Go plugin with no Debian
  or PyPI package for this Debian; the Debian ``docker-compose`` is the retired 1.x.
- Helm: ``helm-python-sdk`` binds Helm's own Go SDK (v4, rendering and lint), so the chart is
  rendered by Helm's template engine rather than by an imitation; there is no ``helm`` binary on
  PyPI, Debian or npm.
- Kubernetes: ``kubernetes-validate`` checks each manifest against the JSON schemas generated
  from the Kubernetes OpenAPI of the version asked for, in their strict form (unknown fields are
  errors). ``kubeconform`` has no package on the registries reachable here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_DIR = REPO / "deploy" / "compose"
COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yaml"
COMPOSE_ENV_EXAMPLE = COMPOSE_DIR / ".env.example"
CHART = REPO / "deploy" / "helm" / "herdsman"
COMPOSE_SCHEMA = Path(__file__).resolve().parent / "schemas" / "compose-spec.json"

# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest schemas known.
KUBERNETES_VERSIONS = ("1.27.0", "1.37.0")

# Values that satisfy every `required` of the chart: what a minimal install passes.
CHART_REQUIRED = {
    "secrets": {"apiKey": "user-key", "adminKey": "admin-key", "env": {"OPENAI_API_KEY": "sk-test"}},
    "postgresql": {"password": "pg pass/with@odd:chars"},
    "redis": {"password": "redis pass+1"},
}


# --- Compose -------------------------------------------------------------------------------


def compose_schema_errors(document: dict[str, Any]) -> list[str]:
    """Every way ``document`` breaks the Compose Specification's schema, as ``path: message``."""
    schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    return sorted(f"{error.json_path}: {error.message}" for error in validator.iter_errors(document))


def podman_compose(compose_file: Path, env_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``podman-compose -f compose_file --env-file env_file ARGS`` with no Compose variables
    inherited from this process, so only ``env_file`` feeds the interpolation."""
    exe = shutil.which("podman-compose", path=str(Path(sys.executable).parent)) or shutil.which("podman-compose")
    command = [exe] if exe else [sys.executable, "-m", "podman_compose"]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "XDG_RUNTIME_DIR")}
    return subprocess.run(
        [*command, "-f", str(compose_file), "--env-file", str(env_file), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=compose_file.parent,
    )


def resolved_compose(
    compose_file: Path = COMPOSE_FILE, env_file: Path = COMPOSE_ENV_EXAMPLE, *profiles: str
) -> dict[str, Any]:
    """The Compose model as podman-compose resolves it (variables interpolated, anchors merged)."""
    profile_args = [arg for p in profiles for arg in ("--profile", p)]
    done = podman_compose(compose_file, env_file, *profile_args, "config")
    assert done.returncode == 0, f"podman-compose config failed:\n{done.stderr[-3000:]}"
    return yaml.safe_load(done.stdout)


def env_file_values(path: Path) -> dict[str, str]:
    """KEY=value lines of an env file (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def bind_mounts(service: dict[str, Any]) -> dict[str, str]:
    """``{container path: host path}`` of a resolved service's volumes (short syntax)."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target = str(volume).split(":")[:2]
        mounts[target] = source
    return mounts


NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)


def local_nginx_conf(port: int, upstreams: dict[str, int]) -> str:
    """deploy/compose/nginx.conf listening on loopback ``port``, with each Compose service
    (``gateway-1``, ``gateway-2``, ``web``) replaced by ``127.0.0.1:upstreams[name]``."""
    conf = (COMPOSE_DIR / "nginx.conf").read_text(encoding="utf-8")
    replacements = {r"listen 8080;": f"listen 127.0.0.1:{port};"}
    replacements.update(
        {
            rf"server {name}:{service_port}(?=[ ;])": f"server 127.0.0.1:{upstreams[name]}"
            for name, service_port in (("gateway-1", 2026), ("gateway-2", 2026), ("web", 8080))
        }
    )
    for pattern, address in replacements.items():
        conf, count = re.subn(pattern, address, conf)
        assert count == 1, f"nginx.conf no longer has {pattern!r} once; update tests/deploy"
    return conf


@contextmanager
def serve_nginx(workdir: Path, upstreams: dict[str, int]) -> Iterator[str]:
    """Run nginx in the foreground with the shipped proxy config (see :func:`local_nginx_conf`)
    for the ``with`` block; yield its URL. Fails the test with nginx's words if it refuses."""
    import pytest

    from tests.services import free_port

    assert NGINX, "nginx is not installed"
    port = free_port()
    (workdir / "default.conf").write_text(local_nginx_conf(port, upstreams))
    temp = "\n".join(
        f"  {kind}_temp_path {workdir / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (workdir / "nginx.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"worker_processes 1;\ndaemon off;\npid {workdir / 'nginx.pid'};\nerror_log {workdir / 'error.log'} warn;\n"
        + "events { worker_connections 256; }\n"
        + f"http {{\n  access_log off;\n{temp}\n  include {workdir / 'default.conf'};\n}}\n"
    )
    nginx = subprocess.Popen(
        [NGINX, "-e", str(workdir / "error.log"), "-p", str(workdir), "-c", str(workdir / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(200):  # until it listens (at most ~10 s)
            if nginx.poll() is not None:
                pytest.fail(f"nginx refused the config: {nginx.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("nginx did not start listening")
        yield f"http://127.0.0.1:{port}"
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


# --- Helm and Kubernetes ---------------------------------------------------------------------


def render_chart(
    values: dict[str, Any], chart: Path = CHART, *, name: str = "herdsman", namespace: str = "herdsman"
) -> list[dict[str, Any]]:
    """Every object the chart renders with ``values``, in template order (Helm's engine)."""
    import helm_python as helm

    with helm.Chart.load(str(chart)) as loaded:
        rendered = loaded.render(values, name=name, namespace=namespace, is_install=True)
    objects = []
    for path in sorted(rendered):
        if not path.endswith(".yaml"):
            continue  # NOTES.txt
        objects += [doc for doc in yaml.safe_load_all(rendered[path]) if doc]
    return objects


def lint_chart(values: dict[str, Any], chart: Path = CHART) -> list[str]:
    """``helm lint --strict`` findings of warning or error severity."""
    import helm_python as helm

    report = helm.lint(str(chart), values, strict=True)
    findings = [f"{m['path']}: {m['error']}" for m in report.get("messages", []) if m.get("severity", 0) >= 2]
    return findings + list(report.get("errors") or [])


def kubernetes_errors(objects: list[dict[str, Any]], version: str) -> list[str]:
    """Each object that the Kubernetes ``version`` API schema (strict) refuses, with the reason."""
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError

    errors = []
    for obj in objects:
        name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except SchemaNotFoundError:
            errors.append(f"{name}: no schema for {obj.get('apiVersion')} {obj.get('kind')} in Kubernetes {version}")
        except jsonschema.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            errors.append(f"{name}: {where}: {exc.message}")
    return errors


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    """The objects of ``kind`` (and ``name``, when given)."""
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The single object of ``kind`` called ``name``."""
    found = find(objects, kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def pod_templates(objects: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """``(workload, pod template)`` of every Deployment and StatefulSet."""
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet"):
            yield obj, obj["spec"]["template"]
