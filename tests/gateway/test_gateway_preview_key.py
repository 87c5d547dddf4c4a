"""Preview links outlive a gateway restart and work on every gateway of one home (#35).

The tokens of the preview origin are signed with the home's secret (``<home>/preview.key``), not
one drawn per process: a link the user opened keeps working when the gateway restarts or when
another gateway process of the same home answers it, and a gateway of another home refuses it.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import httpx
import pytest

from herdsman_gateway.preview.tokens import SECRET_FILE, InvalidToken, PreviewKeyError, PreviewTokens, home_secret
from tests.gateway.gateway_support import CLIENT, running_gateway
from tests.support import make_config


def _page_link(home: Path) -> tuple[str, str]:
    """Start a gateway on ``home``, make a thread with an HTML output; its thread id and preview link."""
    with running_gateway(
        make_config(home, checkpointer={"type": "sqlite"}, gateway={"preview_origin": {"port": 0}})
    ) as served:
        with httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http:
            tid = http.post("/threads", json={}).json()["thread_id"]
            served.app.state.gateway.sandbox.acquire(tid).write_text(
                "/mnt/user-data/outputs/site/index.html", "<h1>hi</h1>"
            )
            link = http.post(f"/api/threads/{tid}/preview/token").json()
    return tid, link["token"]


def _fetch(home: Path, tid: str, token: str) -> httpx.Response:
    with running_gateway(
        make_config(home, checkpointer={"type": "sqlite"}, gateway={"preview_origin": {"port": 0}})
    ) as served:
        origin = served.app.state.preview_origin.url
        return httpx.get(f"{origin}/t/{token}/preview/{tid}/files/outputs/site/index.html", timeout=30)


def test_a_preview_link_survives_a_restart_and_is_refused_by_another_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tid, token = _page_link(home)
    key = home / SECRET_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32
    again = _fetch(home, tid, token)  # a new gateway process on the same home
    assert again.status_code == 200 and "<h1>hi</h1>" in again.text, again.text
    other = tmp_path / "other"
    _page_link(other)  # a home of its own, with its own key and a thread of the same id missing
    refused = _fetch(other, tid, token)
    assert refused.status_code == 403 and "not issued" in refused.json()["detail"]


def test_the_home_secret_is_made_once_private_and_shared(tmp_path: Path) -> None:
    secrets: list[bytes] = []
    starters = [threading.Thread(target=lambda: secrets.append(home_secret(tmp_path))) for _ in range(8)]
    for t in starters:
        t.start()
    for t in starters:
        t.join()
    assert len(set(secrets)) == 1 and len(secrets[0]) == 32  # eight gateways starting at once agree on one key
    token, _ = PreviewTokens(60, home_secret(tmp_path)).issue("t1", "ana")
    assert PreviewTokens(60, home_secret(tmp_path)).check(token, "t1").user == "ana"
    with pytest.raises(InvalidToken, match="not issued"):
        PreviewTokens(60, home_secret(tmp_path / "elsewhere")).check(token, "t1")
    key = tmp_path / SECRET_FILE
    os.chmod(key, 0o644)  # made readable by others (a careless copy): private again on the next start
    assert home_secret(tmp_path) == secrets[0] and stat.S_IMODE(key.stat().st_mode) == 0o600


def test_a_bad_key_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / SECRET_FILE).write_bytes(b"short")
    with pytest.raises(PreviewKeyError, match="remove it and restart"):
        home_secret(tmp_path)
    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "elsewhere.key").write_bytes(b"k" * 32)
    (linked / SECRET_FILE).symlink_to(tmp_path / "elsewhere.key")  # a link is not followed to another file
    with pytest.raises(PreviewKeyError, match="remove it and restart"):
        home_secret(linked)
