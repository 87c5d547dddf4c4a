"""What this machine has for the sandbox: bubblewrap, a Docker-API engine, a kubeconfig.

``detect_machine`` looks (bubblewrap is started once, the engine is pinged over its socket, a
kubeconfig is read, not contacted); ``choose_sandbox`` is the pure rule that picks a provider from
what was found. The engine is pinged with httpx (``GET /_ping`` over the Unix socket, the
Docker API's health call) rather than the ``docker`` package, which is an optional extra that a
new user may not have installed yet: the wizard then says to install it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

DEFAULT_DOCKER_URL = "unix:///var/run/docker.sock"
DEFAULT_KUBECONFIG = Path("~/.kube/config")


@dataclass(frozen=True)
class Found:
    """One thing looked for: whether it is usable, a one-line why, and where it is."""

    available: bool
    detail: str
    where: str | None = None
    context: str | None = None  # kubeconfig: its current context


@dataclass(frozen=True)
class Machine:
    """Everything ``choose_sandbox`` decides from."""

    bwrap: Found
    docker: Found
    kubernetes: Found


@dataclass(frozen=True)
class SandboxChoice:
    """A sandbox provider and the keys under ``sandbox:`` it needs set, with what to tell the user."""

    provider: str
    settings: dict[str, object] = field(default_factory=dict)  # dotted keys under sandbox:, e.g. docker.base_url
    notes: tuple[str, ...] = ()


def find_bwrap() -> Found:
    """Whether bubblewrap can build a sandbox here (starts one, once)."""
    from herdsman.sandbox.bwrap import bwrap_status

    status = bwrap_status()
    if status.available:
        return Found(True, f"bubblewrap works ({status.path})", status.path)
    return Found(False, status.reason, status.path)


def docker_candidates(env: Mapping[str, str]) -> list[str]:
    """Engine addresses to try, in order: $DOCKER_HOST, Docker's socket, podman's (root, then the user's)."""
    urls = [env.get("DOCKER_HOST", ""), DEFAULT_DOCKER_URL, "unix:///run/podman/podman.sock"]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        urls += [f"unix://{runtime}/podman/podman.sock", f"unix://{runtime}/docker.sock"]
    return list(dict.fromkeys(u for u in urls if u))


def ping_engine(url: str, timeout: float = 2.0) -> str | None:
    """``None`` when the Docker-API engine at ``url`` answers ``/_ping``, else why not."""
    import httpx  # only when looking: it is slow to import and the CLI starts with this module

    if url.startswith("unix://"):
        socket_path = url.removeprefix("unix://")
        if not Path(socket_path).exists():
            return f"no socket at {socket_path}"
        transport, base = httpx.HTTPTransport(uds=socket_path), "http://engine"
    elif url.startswith(("tcp://", "http://", "https://")):
        transport, base = None, "http://" + url.split("://", 1)[1] if url.startswith("tcp://") else url
    else:
        return f"{url} is not a unix:// or tcp:// address"
    try:
        with httpx.Client(transport=transport, timeout=timeout) as client:
            answer = client.get(f"{base.rstrip('/')}/_ping")
    except httpx.HTTPError as exc:
        return f"{url} does not answer ({type(exc).__name__})"
    if answer.status_code != 200:
        return f"{url} answered {answer.status_code} to /_ping"
    return None


def find_docker(env: Mapping[str, str] | None = None) -> Found:
    """The first Docker-API engine (Docker or podman's service) that answers, or why none did."""
    env = os.environ if env is None else env
    reasons = []
    for url in docker_candidates(env):
        reason = ping_engine(url)
        if reason is None:
            return Found(True, f"a Docker-API engine answers at {url}", url)
        reasons.append(reason)
    return Found(False, "no Docker-API engine answers (" + "; ".join(reasons) + ")")


def find_kubeconfig(env: Mapping[str, str] | None = None, home: Path | None = None) -> Found:
    """A kubeconfig with a current context ($KUBECONFIG, else ~/.kube/config), or in-cluster credentials."""
    env = os.environ if env is None else env
    if env.get("KUBERNETES_SERVICE_HOST") and Path("/var/run/secrets/kubernetes.io/serviceaccount/token").is_file():
        return Found(True, "running inside a Kubernetes cluster (service account)", None)
    first = (env.get("KUBECONFIG") or "").split(os.pathsep)[0]
    path = Path(first).expanduser() if first else (home or Path.home()) / ".kube" / "config"
    if not path.is_file():
        return Found(False, f"no kubeconfig at {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return Found(False, f"cannot read the kubeconfig {path} ({type(exc).__name__})", str(path))
    context = data.get("current-context") if isinstance(data, dict) else None
    if not context:
        return Found(False, f"the kubeconfig {path} has no current-context", str(path))
    return Found(True, f"kubeconfig {path}, context {context}", str(path), str(context))


def detect_machine() -> Machine:
    """Look for all three (a few seconds at most: bubblewrap starts once, engines get 2 s each)."""
    return Machine(find_bwrap(), find_docker(), find_kubeconfig())


def choose_sandbox(machine: Machine, provider: str | None = None) -> SandboxChoice:
    """The sandbox for this machine: ``provider`` when given, else bubblewrap's local one, else a
    Docker-API engine, else Kubernetes, else the local one without isolation (bash off)."""
    if provider is None:
        provider = next(
            (
                name
                for name, found in (
                    ("local", machine.bwrap),
                    ("docker", machine.docker),
                    ("kubernetes", machine.kubernetes),
                )
                if found.available
            ),
            "local",
        )
    if provider in _REMOTE:
        return _remote_choice(provider, machine.docker if provider == "docker" else machine.kubernetes)
    if machine.bwrap.available:
        return SandboxChoice(
            "local", {}, ("commands run in bubblewrap: no network, only the thread's folders writable",)
        )
    return SandboxChoice(
        "local",
        {},
        (
            f"bubblewrap cannot be used ({machine.bwrap.detail}): the bash tool stays off; install it "
            "(apt-get install bubblewrap) or choose the docker sandbox",
        ),
    )


@dataclass(frozen=True)
class _Remote:
    """What a container provider needs: the key naming where its engine is, the step before the
    first run, the fix when nothing was found, and the extra with its client package."""

    setting: str
    default: str
    first_step: str
    fix: str
    package: str


_REMOTE = {
    "docker": _Remote(
        "docker.base_url",
        DEFAULT_DOCKER_URL,
        "build the sandbox image once: python -m herdsman.sandbox.image",
        "start Docker or podman (podman system service --time=0) before running",
        "docker",
    ),
    "kubernetes": _Remote(
        "kubernetes.kubeconfig",
        str(DEFAULT_KUBECONFIG.expanduser()),
        "apply the manifests in deploy/kubernetes/ (namespace, volume claim, RBAC) first",
        "set sandbox.kubernetes.kubeconfig before running",
        "kubernetes",
    ),
}


def _remote_choice(provider: str, found: Found) -> SandboxChoice:
    remote = _REMOTE[provider]
    settings: dict[str, object] = {}
    notes = [remote.first_step]
    if found.available and found.where and found.where != remote.default:
        settings[remote.setting] = found.where
    if not found.available:
        notes.insert(0, f"{found.detail}; {remote.fix}")
    if importlib.util.find_spec(remote.package) is None:
        notes.append(f"install its client: pip install 'herdsman[{remote.package}]'")
    return SandboxChoice(provider, settings, tuple(notes))
