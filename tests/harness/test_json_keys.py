"""The request shows the JSON object a file must hold ({"a": <sum>, "b": <sum>}) and the file the
run wrote lacks some of its keys: the completion check names them, and the model writes it again."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import HumanMessage

from herdsman.middleware.completion.files import keys_missing
from herdsman.models.scripted import ScriptedChatModel
from tests.support import small_model_run
from tests.support import tool_call as call

OUT = "/mnt/user-data/outputs/sums.json"
REQUEST = f'Sum a.txt and b.txt and save both sums to {OUT} as {{"a": <sum>, "b": <sum>}}.'


def test_the_keys_of_the_object_the_request_shows() -> None:
    found = keys_missing(REQUEST, OUT, '{"sum": 899}')
    assert found is not None and found.rule == "file.keys_missing" and found.evidence["missing"] == ["a", "b"]
    assert keys_missing(REQUEST, OUT, '{"a": 296, "b": 603}') is None
    assert keys_missing(REQUEST, OUT, '[{"a": 1, "b": 2}]') is None  # a list of such objects
    assert keys_missing(REQUEST, OUT, "296, 603") is None  # not JSON: not this rule's
    assert keys_missing(REQUEST, "/mnt/user-data/outputs/sums.txt", '{"sum": 1}') is None
    # two files, two shapes: each file is held to the object after its name, in any language
    two = '把结果写到 /mnt/user-data/outputs/x.json，格式 {"total": <数>}；再写 /mnt/user-data/outputs/y.json，格式 {"count": <数>}。'
    assert keys_missing(two, "/mnt/user-data/outputs/y.json", '{"total": 3}').evidence["missing"] == ["count"]
    assert keys_missing(two, "/mnt/user-data/outputs/x.json", '{"total": 3}') is None


async def test_a_file_without_the_keys_is_sent_back_and_written_again(home: Path) -> None:
    thread = "t-json-keys"
    model = ScriptedChatModel(
        responses=[
            call("bash", command="awk '{s+=$1} END {print s}' a.txt b.txt"),  # the sum of both: 899
            call("write_file", path=OUT, content='{"sum": 899}'),
            "Saved the sums.",
            call("bash", command="for f in a.txt b.txt; do awk '{s+=$1} END {print s}' $f; done"),
            call("write_file", path=OUT, content='{"a": 296, "b": 603}'),
            "Saved a and b.",
        ]
    )
    inputs = {"a.txt": "100\n196\n", "b.txt": "600\n3\n"}
    messages = await small_model_run(home, thread, REQUEST, model, inputs, {"verify_rounds": 2})
    note = next(m for m in messages if isinstance(m, HumanMessage) and m.name == "harness")
    assert "but it has no 'a', 'b' (its keys: 'sum')" in note.text
    saved = home / "threads" / thread / "user-data" / "outputs" / "sums.json"
    assert json.loads(saved.read_text()) == {"a": 296, "b": 603} and messages[-1].text == "Saved a and b."
