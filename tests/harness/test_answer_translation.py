"""An answer translation: when the completion check finds only that the answer is not in the
request's language, the harness translates the answer on a clean page instead of sending the model
back, and keeps the translation only when it loses no number, file name or code block. With other
findings, the language waits: it is fixed last, alone."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage

from herdsman.middleware.answer_translation import ORIGINAL_KEY, TRANSLATION_KEY, keeps
from herdsman.middleware.completion.findings import FINDINGS_KEY
from herdsman.models.scripted import ScriptedChatModel
from herdsman.turns.turn import is_harness
from tests.support import marked, page_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"
QUESTION = f"{WS}/notes.txt 有多少行？"
ANSWER = f"The file {WS}/notes.txt has 3 lines in all, one short word on each of them."
TRANSLATION = f"文件 {WS}/notes.txt 共有 3 行，每行一个短词。"


FILES = {"notes.txt": "one\ntwo\nthree\n"}


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel, mode: str = "auto") -> list:
    return await page_run(
        home, thread, message, model, FILES, "answer_translations", mode, value_answers="off", fresh_answers="off"
    )


def notes(messages: list) -> list[list[str]]:
    return [[f["rule"] for f in m.additional_kwargs[FINDINGS_KEY]] for m in messages if is_harness(m)]


async def test_an_english_answer_to_a_chinese_question_is_translated_on_a_clean_page(home: Path) -> None:
    model = ScriptedChatModel(responses=[call("bash", command=f"wc -l < {WS}/notes.txt"), ANSWER, TRANSLATION])
    messages = await run(home, "t-t1", QUESTION, model)
    assert messages[-1].text == TRANSLATION
    [made] = marked(messages, TRANSLATION_KEY)
    assert made is messages[-1] and made.additional_kwargs[ORIGINAL_KEY] == ANSWER  # the model's words kept
    assert notes(messages) == [["reply.wrong_language"]]
    page = model.calls[2]
    assert page.tools == [] and [type(m) for m in page.messages] == [SystemMessage, HumanMessage]
    assert "Chinese" in page.messages[0].text and page.messages[-1].text == ANSWER  # only the answer
    assert len(model.calls) == 3  # the model was not sent back


async def test_without_the_switch_the_model_is_sent_back_as_before(home: Path) -> None:
    model = ScriptedChatModel(responses=[call("bash", command=f"wc -l < {WS}/notes.txt"), ANSWER, TRANSLATION])
    messages = await run(home, "t-t2", QUESTION, model, mode="off")
    assert messages[-1].text == TRANSLATION and not marked(messages, TRANSLATION_KEY)
    assert model.calls[2].tools  # the agent's own call, with its tools: the model answered again


async def test_a_translation_that_loses_a_number_is_not_used(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[call("bash", command=f"wc -l < {WS}/notes.txt"), ANSWER, "文件有几行。", "它有 3 行。"]
    )
    messages = await run(home, "t-t3", QUESTION, model)
    assert not marked(messages, TRANSLATION_KEY)
    assert messages[-1].text == "它有 3 行。"  # the model was sent back, as without the page
    assert model.calls[3].tools


async def test_with_other_findings_the_language_waits_and_is_fixed_last(home: Path) -> None:
    # 7 is in no tool result: the first note is about the number only, not the language
    model = ScriptedChatModel(
        responses=[
            call("read_file", path=f"{WS}/notes.txt"),
            f"The file {WS}/notes.txt has 7 lines in all, one short word on each of them.",
            call("bash", command=f"wc -l < {WS}/notes.txt"),
            ANSWER,
            TRANSLATION,
        ]
    )
    messages = await run(home, "t-t4", QUESTION, model)
    assert notes(messages)[0] == ["number.unsupported"]
    assert notes(messages)[-1] == ["reply.wrong_language"] and messages[-1].text == TRANSLATION


async def test_an_english_request_is_never_translated(home: Path) -> None:
    model = ScriptedChatModel(responses=[call("bash", command=f"wc -l < {WS}/notes.txt"), ANSWER])
    messages = await run(home, "t-t5", f"How many lines does {WS}/notes.txt have?", model)
    assert messages[-1].text == ANSWER and not marked(messages, TRANSLATION_KEY) and not notes(messages)


def test_what_a_translation_must_keep() -> None:
    answer = f"Saved {WS}/outputs/report.md with 12 rows.\n```bash\nwc -l report.md\n```"
    good = f"已保存 {WS}/outputs/report.md，共 12 行。\n```bash\nwc -l report.md\n```"
    assert keeps(answer, good, "zh")
    assert not keeps(answer, good.replace("12", "十二"), "zh")  # a number lost
    assert not keeps(answer, good.replace("report.md，", "报告，"), "zh")  # a file name lost
    assert not keeps(answer, good.replace("wc -l report.md\n```", "```"), "zh")  # the code block lost
    assert not keeps(answer, answer, "zh")  # still English
    assert not keeps(answer, good + "很好。" * 400, "zh")  # went on writing
    long_answer = "The report explains how the herd moves north in spring and why it slows by the river. " * 6
    assert not keeps(long_answer, "报告。", "zh")  # most of it left out
