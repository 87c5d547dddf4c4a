"""The embedded model builds a page, serves it in its sandbox, and the Preview tab shows it live (#35).

As a user with ``make run`` would: the default configuration (the embedded model, the small
profile, the completion check), a request typed into the web UI in headless Chromium, and once
the run ended, the Preview tab opened on the server the agent started: the page must be live in
the sandboxed frame with a button to click (screenshots ``liveSite-*.png`` in
``tests/web/artifacts``). One request, bounded (``LIVE_SECONDS``); marked ``local_model``, and run only when
``HERDSMAN_LIVE_PREVIEW=1`` (by hand: it is the acceptance check of issue #35 and takes minutes
of the model). Run for the local (bubblewrap) provider and the docker provider (podman; see
:func:`docker_sandbox` for its image).

History: on 2026-12-04 the embedded model answered with instructions instead of building and
serving the page. On 2026-12-05 at 5ab5d39 both runs passed (258 s local, 265 s docker): the
request activated the web page builder, the model refused, ran the skill's check on
``outputs/site`` before writing it, wrote the whole page into a file named ``outputs/site`` and
refused again; the harness moved it to ``outputs/site/index.html`` (``skill.output_misnamed``) and
served the folder (``skill.not_served``), and the button counted in the frame. The final reply
stays a refusal, so the page says "Not delivered" above a live page.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from herdsman.config import parse_config
from tests.gateway.gateway_support import running_gateway
from tests.web.test_web_ui import ARTIFACTS, run_scenario
from tests.web.web_support import browser_missing

REQUEST = "Build a one-page site that shows a counter with a button, serve it, and show it to me."
LIVE_SECONDS = 900
SANDBOX_IMAGE = "localhost/herdsman-sandbox-live:latest"
# what the shipped Dockerfile sets on top of its packages (docker/sandbox/Dockerfile)
IMAGE_CHANGES = (
    "USER 1000:1000",
    "WORKDIR /mnt/user-data/workspace",
    "ENV HOME=/mnt/user-data/workspace",
    "ENV LANG=C.UTF-8",
    'CMD ["sleep", "infinity"]',
)


def docker_sandbox() -> dict:
    """The ``sandbox`` section for the docker provider on podman's Docker API, with an image made
    from the Debian root filesystem named by ``HERDSMAN_SANDBOX_ROOTFS`` (the shipped Dockerfile
    needs a registry for its base image; a ``debootstrap --variant=minbase --include=python3,curl``
    tree with the Dockerfile's ``sandbox`` user and ``/mnt/user-data`` folders stands in for it)."""
    from tests.sandbox.podman_engine import EngineUnavailable, import_tree, shared_engine

    rootfs = os.environ.get("HERDSMAN_SANDBOX_ROOTFS")
    if not rootfs or not (Path(rootfs) / "usr" / "bin" / "python3").exists():
        pytest.skip("the docker provider's run needs HERDSMAN_SANDBOX_ROOTFS: a Debian root filesystem with python3")
    try:
        engine = shared_engine()
        import_tree(engine.root, Path(rootfs), SANDBOX_IMAGE, IMAGE_CHANGES)
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    docker = {"base_url": engine.base_url, "image": SANDBOX_IMAGE, "pull": "never"}
    return {"provider": "docker", "docker": docker}


@pytest.mark.local_model
@pytest.mark.timeout(LIVE_SECONDS + 300)  # the request's bound, the browser's start and the gateway's stop
@pytest.mark.parametrize("provider", ["local", "docker"])
def test_the_embedded_model_builds_serves_and_shows_a_counter_site(tmp_path: Path, provider: str) -> None:
    from herdsman.models.local import build_local_model
    from herdsman.sandbox.bwrap import bwrap_status

    if os.environ.get("HERDSMAN_LIVE_PREVIEW") != "1":
        pytest.skip(
            "the live-preview acceptance check runs by hand: HERDSMAN_LIVE_PREVIEW=1 (minutes of the embedded model)"
        )
    reason = browser_missing() or (
        None if provider != "local" or bwrap_status().available else f"bubblewrap unusable: {bwrap_status().reason}"
    )
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    ARTIFACTS.mkdir(exist_ok=True)
    # make run's defaults; only the preview listener on a free port (2027 may be taken here), and
    # for the docker run the provider and its image
    data: dict = {"home": str(tmp_path / "home"), "gateway": {"preview_origin": {"port": 0}}}
    if provider == "docker":
        data["sandbox"] = docker_sandbox()
    config = parse_config(yaml.safe_dump(data), env={})
    model = build_local_model(config.local_model)
    with running_gateway(config, model=model) as served:
        checks = run_scenario(
            served, "liveSite", {"LIVE_REQUEST": REQUEST, "LIVE_SECONDS": str(LIVE_SECONDS)}, timeout=LIVE_SECONDS + 180
        )
    assert checks["a server the agent started is listed"]
    assert checks["the page is live in the frame with a button"]
