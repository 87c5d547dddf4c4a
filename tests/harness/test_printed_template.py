"""A command printed the values of the lines the request quotes ('Total: <total amount>') and
nothing saved them: the harness writes the quoted lines with those values into the file."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from herdsman.middleware.completion.files import filled_template
from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE
from herdsman.models.scripted import ScriptedChatModel
from tests.support import small_model_run
from tests.support import tool_call as call

REQUEST = (
    "Create /mnt/user-data/outputs/summary.md with a line 'Total: <total amount>' and a line "
    "'Rows: <number of data rows>' for /mnt/user-data/workspace/sales.csv."
)


def test_the_quoted_lines_take_the_printed_values_in_order() -> None:
    assert filled_template(REQUEST, "7990.9299999999985\n30\n") == "Total: 7990.93\nRows: 30"
    zh = "在 /mnt/user-data/outputs/s.md 里写一行「合计：<金额>」"
    assert filled_template(zh, "12.5\n") == "合计：12.5"
    # not one value per quoted line: nothing to fill
    assert filled_template(REQUEST, "7990.93\n") is None
    assert filled_template(REQUEST, "total is 7990.93 and the rows are many more words\n30") is None
    assert filled_template("Write 'Range: <low> to <high>' to r.txt", "1\n") is None  # two holes in one line
    assert filled_template("Write the total to t.txt", "7990.93\n") is None  # no quoted line


async def test_the_harness_writes_the_lines_the_model_could_not(home: Path) -> None:
    thread = "t-template"
    program = (
        "python3 - <<'EOF'\nimport csv\nv = [float(r['amount']) for r in csv.DictReader(open("
        "'/mnt/user-data/workspace/sales.csv'))]\nprint(sum(v))\nprint(len(v))\nEOF"
    )
    model = ScriptedChatModel(
        responses=[call("bash", command=program), "Use echo to write the lines.", "Wrote summary.md."]
    )
    rows = "amount\n" + "\n".join(["0.1", "0.2", "7990.63"]) + "\n"
    messages = await small_model_run(home, thread, REQUEST, model, {"sales.csv": rows}, {"verify_rounds": 2})
    note = next(m for m in messages if isinstance(m, HumanMessage) and m.name == "harness")
    assert "The harness wrote them there for you" in note.text
    made = next(m for m in messages if isinstance(m, AIMessage) and m.additional_kwargs.get(RAN_SHOWN_CODE))
    assert made.tool_calls[0]["name"] == "write_file"
    summary = home / "threads" / thread / "user-data" / "outputs" / "summary.md"
    assert summary.read_text() == "Total: 7990.93\nRows: 3\n"  # 0.1 + 0.2 + 7990.63 prints 7990.929999999999
    assert messages[-1].text == "Wrote summary.md."
