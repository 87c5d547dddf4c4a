"""Build the sandbox image (``docker/sandbox/Dockerfile``) on the configured Docker-API engine.

Run ``python -m herdsman.sandbox.image [--tag TAG] [--context DIR] [--base-url URL]`` from a
checkout. It builds through the ``docker`` SDK, so it works with Docker and with podman's
Docker-compatible service alike, and streams the build log. The Dockerfile starts from
``debian:bookworm-slim``, so building needs access to a registry; on a machine without one, build
elsewhere and ``docker save`` / ``docker load`` the image, or set ``sandbox.docker.image``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_TAG = "herdsman-sandbox:latest"


def default_context() -> Path:
    """``docker/sandbox`` of the checkout this package runs from."""
    return Path(__file__).resolve().parents[3] / "docker" / "sandbox"


def build_image(
    client: Any,
    context: Path,
    tag: str = DEFAULT_TAG,
    log: Callable[[str], None] = lambda line: None,
) -> str:
    """Build the image in ``context`` as ``tag`` on ``client``'s engine; returns the image id.

    Raises RuntimeError with the engine's message when the build fails.
    """
    if not (context / "Dockerfile").is_file():
        raise RuntimeError(f"no Dockerfile in {context}; run from a Herdsman checkout or pass --context docker/sandbox")
    import docker.errors

    try:
        image, stream = client.images.build(path=str(context), tag=tag, rm=True, forcerm=True)
    except docker.errors.BuildError as exc:
        for chunk in exc.build_log:
            if "stream" in chunk:
                log(chunk["stream"].rstrip("\n"))
        raise RuntimeError(
            f"building {tag} failed: {exc.msg}; the base image comes from a registry, so check "
            "that the engine can reach it"
        ) from None
    for chunk in stream:
        if "stream" in chunk:
            log(chunk["stream"].rstrip("\n"))
    return str(image.id)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; prints the build log and the image id."""
    parser = argparse.ArgumentParser(prog="python -m herdsman.sandbox.image", description=__doc__.split("\n")[0])
    parser.add_argument("--tag", default=DEFAULT_TAG, help=f"image tag (default {DEFAULT_TAG})")
    parser.add_argument("--context", type=Path, default=default_context(), help="directory with the Dockerfile")
    parser.add_argument(
        "--base-url", default=os.environ.get("DOCKER_HOST"), help="engine address (default $DOCKER_HOST)"
    )
    args = parser.parse_args(argv)
    import docker.errors
    from docker.client import DockerClient

    base_url = args.base_url or "unix:///var/run/docker.sock"
    try:
        if not (args.context / "Dockerfile").is_file():
            raise RuntimeError(f"no Dockerfile in {args.context}; pass --context docker/sandbox from a checkout")
        try:
            client = DockerClient(base_url=base_url, timeout=3600)
        except docker.errors.DockerException as exc:
            raise RuntimeError(
                f"cannot reach the Docker engine at {base_url} ({exc}); start Docker or podman "
                "system service and pass --base-url or set DOCKER_HOST"
            ) from None
        image_id = build_image(client, args.context, args.tag, log=print)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.tag} ({image_id}); use it with sandbox.docker.image: {args.tag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
