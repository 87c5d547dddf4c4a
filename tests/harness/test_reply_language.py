"""The answer is in the language of the request: the model is asked in that language, an English
answer to a Chinese request is sent back once, and what the harness itself says to the person (the
"could not", a limit's stop, the folded checks, a failed last step) is in the request's language."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.completion.could_not import COULD_NOT_KEY
from herdsman.middleware.completion.findings import FINDINGS_KEY, Finding
from herdsman.middleware.completion.findings_text import render
from herdsman.middleware.reply_language import wrong_language
from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.runs.final_answer import final_answer
from herdsman.runtime.tracing.harness_notes import fold_notes
from tests.support import make_config

ZH_QUESTION = "请用大约三百字解释灯塔是怎么工作的，不需要文件。"
EN_ANSWER = (
    "A lighthouse houses a bright lamp at the top of a tall tower. A Fresnel lens gathers the light into a "
    "beam that turns, so ships far away see a flash at a known rhythm."
)
ZH_ANSWER = "灯塔的顶部有一盏很亮的灯，菲涅耳透镜把光聚成一束旋转的光，远处的船只能看到有规律的闪光。"


async def run(home: Path, request: str, responses: list, rounds: int = 2, thread: str = "t", **lead: object):
    config = make_config(home, lead={"verify_rounds": rounds, **lead})
    model = ScriptedChatModel(responses=responses)
    async with HerdsmanClient(config, model=model) as client:
        finished = await client.run(request, thread_id=thread)
        messages = await client.messages(thread)
    return model, messages, finished.answer


def notes_of(messages: list) -> list[HumanMessage]:
    return [m for m in messages if isinstance(m, HumanMessage) and m.name == "harness"]


async def test_the_model_is_asked_in_chinese_to_answer_in_chinese_and_the_thread_keeps_what_the_user_typed(
    home: Path,
) -> None:
    model, messages, answer = await run(home, ZH_QUESTION, [ZH_ANSWER])
    assert answer == ZH_ANSWER
    seen = [m for m in model.calls[0].messages if isinstance(m, HumanMessage)][-1]
    assert seen.text.startswith(ZH_QUESTION) and seen.text.endswith("请用中文回答。")
    assert messages[0].text == ZH_QUESTION  # stored (and shown) as typed
    assert not notes_of(messages)


async def test_an_english_request_gets_no_line(home: Path) -> None:
    model, _, _ = await run(home, "Explain how a lighthouse works.", [EN_ANSWER])
    seen = [m for m in model.calls[0].messages if isinstance(m, HumanMessage)][-1]
    assert seen.text == "Explain how a lighthouse works."


async def test_an_english_answer_to_a_chinese_request_is_sent_back_once_with_no_tool_forced(home: Path) -> None:
    model, messages, answer = await run(home, ZH_QUESTION, [EN_ANSWER, ZH_ANSWER])
    assert answer == ZH_ANSWER
    [note] = notes_of(messages)
    assert [f["rule"] for f in note.additional_kwargs[FINDINGS_KEY]] == ["reply.wrong_language"]
    assert "Chinese" in note.text and "请用中文回答。" in note.text
    assert "force_tools" not in note.additional_kwargs and "tool_choice" not in model.calls[-1].kwargs


async def test_a_second_english_answer_stands(home: Path) -> None:
    """Once: the model may have a reason (a quoted English text), and a loop of notes helps nobody."""
    model, messages, answer = await run(home, ZH_QUESTION, [EN_ANSWER, EN_ANSWER], rounds=2)
    assert answer == EN_ANSWER and len(model.calls) == 2
    assert len(notes_of(messages)) == 1


async def test_the_check_can_be_turned_off_with_the_line(home: Path) -> None:
    model, messages, answer = await run(home, ZH_QUESTION, [EN_ANSWER], answer_language=False)
    assert answer == EN_ANSWER and len(model.calls) == 1
    assert not any("请用中文回答" in m.text for m in model.calls[0].messages)


def test_what_counts_as_an_answer_in_the_wrong_language() -> None:
    assert wrong_language(ZH_QUESTION, EN_ANSWER) == "zh"
    assert wrong_language(ZH_QUESTION, ZH_ANSWER) is None
    assert wrong_language(ZH_QUESTION, f"{ZH_ANSWER} (Fresnel lens, 1822)") is None  # English terms in a Chinese answer
    assert (
        wrong_language(
            "把这句话翻译成英文：灯塔在夜里发光。", "The lighthouse shines at night, guiding the ships home."
        )
        is None
    )
    assert wrong_language(ZH_QUESTION, "已保存 /mnt/user-data/outputs/lighthouse.md") is None
    assert (
        wrong_language(ZH_QUESTION, "Saved /mnt/user-data/outputs/lighthouse_report.md") is None
    )  # too few letters to tell
    assert wrong_language("Explain how a lighthouse works.", EN_ANSWER) is None


TODO = "/mnt/user-data/workspace/todo.txt 里写了什么？"
LOOKED_NOT = render(Finding("tool.none_used", {"uploaded": False}))


async def test_the_honest_could_not_is_in_the_language_of_the_request(home: Path) -> None:
    """The model answers without looking, is sent back, and copies the note: the run ends with the
    "could not" in Chinese, naming what was wrong in Chinese."""
    _, messages, answer = await run(home, TODO, ["这是一个任务列表。", LOOKED_NOT], rounds=1, unusable_reply_retries=0)
    assert answer.startswith("我没能完成这个请求"), answer
    assert "回复重复了系统的提示" in answer and "I could not" not in answer
    assert "reply.echoes_note" in messages[-1].additional_kwargs[COULD_NOT_KEY]


async def test_the_step_limit_says_so_in_the_language_of_the_request(home: Path) -> None:
    config = make_config(home, lead={"max_steps": 2}, sandbox={"allow_unisolated_bash": True})
    model = ScriptedChatModel(
        respond=lambda messages: {"tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}}]}
    )
    async with HerdsmanClient(config, model=model) as client:
        finished = await client.run("列出工作区的文件，一直列下去。", thread_id="t")
    assert finished.answer.startswith("我在调用模型 2 次后停下了") and "lead.max_steps" in finished.answer


def test_the_failed_last_step_and_the_folded_checks_are_told_in_the_language_of_the_turn() -> None:
    call = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    note = {
        "type": "human",
        "name": "harness",
        "content": "[harness check] Not done yet: ...",
        "additional_kwargs": {FINDINGS_KEY: [{"rule": "call.as_text"}, {"rule": "tool.none_used"}]},
    }
    written = {"type": "ai", "content": call, "additional_kwargs": {"herdsman_call_as_text": ["bash"]}}
    zh = [{"type": "human", "content": "列出工作区的文件"}, note, written]
    en = [{"type": "human", "content": "List the workspace"}, note, written]
    shown_zh, shown_en = final_answer(zh), final_answer(en)
    assert shown_zh.startswith("没有回答：") and "bash" in shown_zh
    assert shown_en.startswith("No answer:")
    assert "已检查：2 个问题，已退回给智能体" in fold_notes(zh)
    assert "checked: 2 findings, sent back to the agent" in fold_notes(en)
    both = fold_notes([*en, {"type": "ai", "content": "ok"}, *zh])  # each turn in its own language
    assert [line for line in both if isinstance(line, str)] == [
        "checked: 2 findings, sent back to the agent",
        "已检查：2 个问题，已退回给智能体",
    ]


async def test_an_answer_in_chinese_after_tools_is_not_sent_back(home: Path) -> None:
    """Tool results in English (a listing) do not make the answer's language English."""
    responses = [
        AIMessage(content="", tool_calls=[{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}, "id": "c1"}]),
        "工作区是空的，没有任何文件。",
    ]
    config = make_config(home, lead={"verify_rounds": 2}, sandbox={"allow_unisolated_bash": True})
    async with HerdsmanClient(config, model=ScriptedChatModel(responses=responses)) as client:
        finished = await client.run("工作区里有哪些文件？", thread_id="t")
        messages = await client.messages("t")
    assert finished.answer == "工作区是空的，没有任何文件。" and not notes_of(messages)


async def test_the_loop_stop_says_so_in_the_language_of_the_request(home: Path) -> None:
    config = make_config(home, context={"loop_warn_after": 2, "loop_stop_after": 3})
    ls = {"tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}}]}
    async with HerdsmanClient(config, model=ScriptedChatModel(responses=[ls] * 5)) as client:
        finished = await client.run("找一下那个文件。", thread_id="t")
    assert finished.answer.startswith("我停下了：我一直重复同一个工具调用（ls") and "连续 3 次" in finished.answer
