"""A skill's secrets reach a command in a Kubernetes pod, and nowhere else on the way.

The real client opens the exec websocket (``WebsocketExecOpener``) against a loopback endpoint
speaking Kubernetes' channel protocol (``kube_exec_server.py``); pods live in kmock's emulated API.
The command must see the value byte for byte; the exec request's URL (what an API server's
audit log records), the pod spec (readable by whoever may read pods) and the gateway's log must
not hold it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from kubernetes import client

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.kubernetes import KubernetesSandboxProvider, WebsocketExecOpener
from tests.sandbox.kube_emulator import EmulatedCluster
from tests.sandbox.kube_exec_server import ExecServer

SECRET = "tok-'quote\"$(touch pwned)`id`\nline two ü\n"  # quotes, substitutions, newlines, non-ASCII


def test_secrets_cross_the_exec_stream_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cluster = EmulatedCluster()
    server = ExecServer(tmp_path)
    config = HerdsmanConfig.model_validate({
        "home": str(tmp_path / "home"), "skills": {"enabled": False},
        "sandbox": {"provider": "kubernetes", "command_timeout_seconds": 20,
                    "kubernetes": {"namespace": "sandboxes", "startup_timeout_seconds": 5}},
    })  # fmt: skip
    opener = WebsocketExecOpener(client.CoreV1Api(client.ApiClient(client.Configuration(host=server.url))))
    provider = KubernetesSandboxProvider(config, api_client=cluster.api_client(), exec_opener=opener)
    caplog.set_level(logging.DEBUG)
    try:
        sandbox = provider.acquire("t1")
        done = sandbox.execute(
            'printf %s "$DEMO_TOKEN" | od -An -tx1 | tr -d " \\n"; echo; echo "[$OTHER]"',
            env={"DEMO_TOKEN": SECRET, "OTHER": "two"},
        )
        assert done.exit_code == 0, done.output
        first, second = done.output.splitlines()[:2]
        assert first == SECRET.encode().hex() and second == "[two]"  # byte for byte, nothing run
        assert not (tmp_path / "pwned").exists()
        plain = sandbox.execute('echo "[${DEMO_TOKEN-unset}]"')  # the next command has no secret
        assert plain.output.strip() == "[unset]"

        assert len(server.requests) >= 2
        wire = "".join(server.requests)
        for piece in ("tok-", "quote", "line", "two"):
            assert piece not in wire, wire
        assert any(frame.startswith(b"\x00") for frame in server.received)  # it went on stdin
        pods = json.dumps(cluster.live_pods("sandboxes"), default=str)
        assert "tok-" not in pods and "DEMO_TOKEN" not in pods and "two" not in pods
        assert "tok-" not in caplog.text and "line two" not in caplog.text
    finally:
        provider.cleanup()
        provider.close()
        server.stop()
        cluster.stop()
