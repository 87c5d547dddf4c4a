"""The default lead agent on the embedded local model, for real: a tool call in the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.client import HerdsmanClient, ToolCall
from herdsman.models.local import llama_cpp_available
from tests.support import make_config

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not llama_cpp_available(), reason="llama-cpp-python is not installed (pip install 'herdsman[local]')"
    ),
]


async def test_lead_agent_writes_a_file_with_the_embedded_model(home: Path) -> None:
    # the embedded model's defaults: the small profile and the completion check
    config = make_config(
        home, local_model={"max_tokens": 256, "profile": "small"}, lead={"model_retries": 0, "verify_rounds": 2}
    )
    async with HerdsmanClient(config) as client:
        events = [
            e
            async for e in client.stream(
                "Use the write_file tool to write the text 'hello herdsman' to /mnt/user-data/outputs/hello.txt",
                thread_id="local-e2e",
            )
        ]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert any(c.name == "write_file" for c in calls), calls
    written = home / "threads" / "local-e2e" / "user-data" / "outputs" / "hello.txt"
    assert written.exists()
    assert "hello herdsman" in written.read_text().lower()
    assert events[-1].outputs == ["/mnt/user-data/outputs/hello.txt"]
