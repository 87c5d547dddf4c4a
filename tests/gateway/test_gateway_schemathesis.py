"""schemathesis against the gateway's own OpenAPI: generated requests never get a 5xx, and
responses match the documented schemas. Runs schemathesis's CLI against a live gateway (its
pytest plugin does not support this pytest version).

Two runs: single requests (examples and fuzzing), and stateful sequences that follow the links
schemathesis infers between operations (create a thread, start runs on it with generated
bodies, read it, search, update its state...), so a request that breaks a thread for the
requests after it shows as a 5xx there. Both are bounded by ``--max-examples``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.gateway.gateway_support import running_gateway, scripted_model
from tests.support import make_config

#: Seconds schemathesis waits for a response. A thread's event stream (``GET /threads/{id}/stream``)
#: stays open until the client leaves, so each generated request for a thread that exists waits
#: this long (schemathesis counts no failure for it). Every other operation answers in well under a
#: second here, so 5 s still sees their 5xx on a busy machine. Was 20: four such requests cost
#: over a minute of the run.
REQUEST_TIMEOUT_SECONDS = 5


def _schemathesis(home: Path, cwd: Path, *, phases: str, max_examples: int) -> str:
    """Run schemathesis against a fresh gateway; its report (fails the test on any issue)."""
    model = scripted_model()
    model.release()
    with running_gateway(make_config(home), model=model) as served:
        result = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                "run",
                f"{served.url}/openapi.json",
                "--checks",
                "not_a_server_error,response_schema_conformance",
                "--max-examples",
                str(max_examples),
                "--phases",
                phases,
                "--no-shrink",
                "--generation-deterministic",
                "--workers",
                "1",
                "--request-timeout",
                str(REQUEST_TIMEOUT_SECONDS),
            ],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=cwd,
        )
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    return result.stdout


def test_generated_requests_get_no_server_errors(home: Path, tmp_path: Path) -> None:
    _schemathesis(home, tmp_path, phases="examples,fuzzing", max_examples=5)


def test_generated_request_sequences_get_no_server_errors(home: Path, tmp_path: Path) -> None:
    report = _schemathesis(home, tmp_path, phases="stateful", max_examples=100)
    covered = re.search(r"API Links:\s+(\d+) covered", report)
    assert covered and int(covered.group(1)) > 0, report  # sequences really followed links
