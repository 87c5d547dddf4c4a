"""Latency of the sandbox providers: running a command, and getting a thread's sandbox ready.

For each provider available here (``local``: commands on the host; ``local_bwrap``: bubblewrap;
``docker``: a container on a Docker-API engine), it times ``--runs`` executions of ``true`` in a
warm sandbox and ``--acquires`` first acquisitions of new threads, each until the sandbox can run
a command (for docker: taking a pooled container, and, cold, starting one).

The docker engine is ``--docker-url`` (with ``--docker-image``), else a throwaway podman service
started from a checkout's test helper (tests/sandbox/podman_engine.py), else docker is left out.

Prints one JSON line: ``<provider>_exec_p50_ms``, ``<provider>_exec_p99_ms`` and
``<provider>_acquire_p50_ms`` per provider measured. For docker, acquire is from a warm pool of
two containers; ``docker_cold_acquire_p50_ms`` is the same without a pool (a container start). Targets (issue 6): local_bwrap exec p50 at
most 20 ms; docker exec p50 at most 150 ms on podman; acquire from a warm pool at most 50 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.bwrap import bwrap_status

REPO = Path(__file__).resolve().parents[1]


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank, in the samples' unit."""
    ordered = sorted(samples)
    index = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def measure(provider: Any, runs: int, acquires: int) -> dict[str, float]:
    """Exec p50/p99 on a warm sandbox and acquire p50 of new threads, in milliseconds.

    With a warm pool, each acquisition waits (untimed) for the pool to hold a container first.
    """
    sandbox = provider.acquire("bench-warm")
    sandbox.execute("true")  # warm up (starts a container where there is one)
    execs = []
    for _ in range(runs):
        start = time.perf_counter()
        result = sandbox.execute("true")
        execs.append((time.perf_counter() - start) * 1000)
        if result.exit_code != 0:
            raise RuntimeError(f"true failed: {result.output}")
    ready = []
    pooled = getattr(provider, "_pool", None) is not None
    for _ in range(acquires):
        thread_id = f"bench-{uuid.uuid4().hex[:8]}"
        while pooled and provider.pool_ready == 0:
            time.sleep(0.01)
        start = time.perf_counter()
        fresh = provider.acquire(thread_id)
        ensure = getattr(fresh, "ensure_running", None)
        if callable(ensure):
            ensure()
        ready.append((time.perf_counter() - start) * 1000)
    figures = {"acquire_p50_ms": round(statistics.median(ready), 2)}
    if execs:
        figures["exec_p50_ms"] = round(statistics.median(execs), 2)
        figures["exec_p99_ms"] = round(percentile(execs, 99), 2)
    return figures


def _config(home: Path, **sandbox: Any) -> HerdsmanConfig:
    return HerdsmanConfig.model_validate({"home": str(home), "skills": {"enabled": False}, "sandbox": sandbox})


@contextlib.contextmanager
def docker_engine(url: str | None, image: str | None) -> Iterator[tuple[str, str] | None]:
    """The engine to use: the one given, a throwaway podman service, or None."""
    if url:
        yield url, image or "herdsman-sandbox:latest"
        return
    sys.path.insert(0, str(REPO))
    try:
        from tests.sandbox.podman_engine import EngineUnavailable, podman_engine
    except ImportError:
        yield None
        return
    try:
        manager = podman_engine()
        engine = manager.__enter__()
    except EngineUnavailable as exc:
        print(f"docker left out: {exc}", file=sys.stderr)
        yield None
        return
    try:
        yield engine.base_url, engine.image
    finally:
        manager.__exit__(None, None, None)


def main(runs: int, acquires: int, docker_url: str | None, docker_image: str | None) -> dict[str, float]:
    """Measure every available provider; the figures keyed ``<provider>_<figure>``."""
    from herdsman.sandbox.local import LocalSandboxProvider

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="herdsman-bench-") as tmp:
        root = Path(tmp)
        plans: list[tuple[str, HerdsmanConfig]] = [
            ("local", _config(root / "local", isolation="none", allow_unisolated_bash=True)),
        ]
        if bwrap_status().available:
            plans.append(("local_bwrap", _config(root / "bwrap", isolation="bwrap")))
        for name, config in plans:
            provider = LocalSandboxProvider(config)
            figures.update({f"{name}_{k}": v for k, v in measure(provider, runs, acquires).items()})
            provider.close()
        with docker_engine(docker_url, docker_image) as engine:
            if engine is not None:
                from herdsman.sandbox.docker import DockerSandboxProvider

                url, image = engine
                for pool, prefix in ((0, "docker_cold"), (2, "docker")):
                    docker = {"base_url": url, "image": image, "warm_pool": pool}
                    provider = DockerSandboxProvider(_config(root / prefix, provider="docker", docker=docker))
                    try:
                        measured = measure(provider, runs if pool else 0, acquires)
                    finally:
                        provider.close()
                        provider.cleanup()
                    keys = ("acquire_p50_ms",) if not pool else tuple(measured)
                    figures.update({f"{prefix}_{k}": measured[k] for k in keys})
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="executions per provider")
    parser.add_argument("--acquires", type=int, default=10, help="new threads per provider")
    parser.add_argument("--docker-url", default=None, help="Docker-API engine, e.g. unix:///run/podman/podman.sock")
    parser.add_argument("--docker-image", default=None, help="sandbox image on that engine")
    args = parser.parse_args()
    print(json.dumps(main(args.runs, args.acquires, args.docker_url, args.docker_image)))
