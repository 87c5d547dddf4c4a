"""schemathesis against the gateway's own OpenAPI: generated requests never get a 5xx, and
responses match the documented schemas. Runs schemathesis's CLI against a live gateway (its
pytest plugin does not support this pytest version)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.gateway.gateway_support import running_gateway, scripted_model
from tests.support import make_config


def test_generated_requests_get_no_server_errors(home: Path, tmp_path: Path) -> None:
    model = scripted_model()
    model.release()
    with running_gateway(make_config(home), model=model) as served:
        result = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")), "run", f"{served.url}/openapi.json",
                "--checks", "not_a_server_error,response_schema_conformance",
                "--max-examples", "5", "--phases", "examples,fuzzing", "--no-shrink",
                "--generation-deterministic", "--workers", "1", "--request-timeout", "20",
            ],
            capture_output=True, text=True, timeout=240, cwd=tmp_path,
        )
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
