"""A note of the harness never becomes the final answer: a reply that copies a note back is
found (in any language), sent back to answer in words with no tool forced, and when the rounds
run out an honest "could not" built from the findings ends the run in its place."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.completion.could_not import COULD_NOT_KEY
from herdsman.middleware.completion.findings import FINDINGS_KEY, Finding
from herdsman.middleware.completion.findings_text import render
from herdsman.middleware.completion.note_echo import NOTE_ECHO_KEY, echoes_note
from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.runs.final_answer import final_answer
from tests.support import make_config

NOTE = (
    "[harness check] Not done yet:\n- The request is about 'NOTE', but none of your tool calls looked for it, "
    "so your answer is not based on the files. Search for it with grep."
)


def test_a_copied_note_is_an_echo_in_any_language_and_an_answer_is_not() -> None:
    body = NOTE.split("- ", 1)[1]
    assert echoes_note(body, [NOTE])
    assert echoes_note(f"Sure.\n{body}", [NOTE])
    zh_note = "[harness check] 还没完成：\n- 请求提到了文件 notes.txt，但你没有用任何工具查看它，所以你的回答不是基于文件内容的。"
    assert echoes_note(
        "请求提到了文件 notes.txt，但你没有用任何工具查看它，所以你的回答不是基于文件内容的。", [zh_note]
    )
    answer = "NOTE appears twice in the logs: once in app.log and once in db.log, both at startup."
    assert not echoes_note(answer, [NOTE])
    # what the note quotes from the request is the user's own words, not a copy of the harness
    request = "Explain how a lighthouse works, in about 300 words, no files needed."
    quoting = f"[harness check] Not done yet:\n- The request says: {request}"
    assert not echoes_note(request, [quoting], known=[request])


async def run(
    home: Path, thread: str, request: str, responses: list, rounds: int, retries: int = 0
) -> tuple[ScriptedChatModel, list, str]:
    config = make_config(home, lead={"verify_rounds": rounds, "unusable_reply_retries": retries, "intent_rules": "on"})
    model = ScriptedChatModel(responses=responses)
    async with HerdsmanClient(config, model=model) as client:
        finished = await client.run(request, thread_id=thread)
        messages = await client.messages(thread)
    return model, messages, finished.answer


TODO = "What is in /mnt/user-data/workspace/todo.txt"
LOOKED_NOT = render(Finding("tool.none_used", {"uploaded": False}))


async def test_when_the_rounds_run_out_on_a_copied_note_the_run_ends_with_an_honest_could_not(home: Path) -> None:
    """The request names a file; the model answers without looking, is sent back, and copies the note."""
    _, messages, answer = await run(home, "t-echo1", TODO, ["It is a list of tasks.", LOOKED_NOT], rounds=1)
    assert LOOKED_NOT not in answer and answer.startswith("I could not finish this request")
    last = messages[-1]
    assert isinstance(last, AIMessage) and "reply.echoes_note" in last.additional_kwargs[COULD_NOT_KEY]
    copied = messages[-2]
    assert (
        isinstance(copied, AIMessage) and copied.additional_kwargs.get(NOTE_ECHO_KEY) is True
    )  # shown as a failed step
    assert final_answer(messages[:-1]) != copied.text  # even without the honest end, the copy is no answer


async def test_a_copied_note_is_sent_back_to_answer_in_words_with_no_tool_forced(home: Path) -> None:
    """A question that needs no tool: the model refuses, is sent back, copies the note; the next
    note asks for an answer in words and forces no tool; the model answers."""
    refused = render(Finding("reply.refusal"))
    responses = ["I'm sorry, but I can't assist with that.", refused, "A lighthouse focuses a lamp into a beam."]
    model, messages, answer = await run(home, "t-echo2", "Explain how a lighthouse works.", responses, rounds=2)
    assert answer == "A lighthouse focuses a lamp into a beam."
    notes = [m for m in messages if isinstance(m, HumanMessage) and m.name == "harness"]
    assert [f["rule"] for f in notes[-1].additional_kwargs[FINDINGS_KEY]] == ["reply.echoes_note"]
    assert "force_tools" not in notes[-1].additional_kwargs
    assert "tool_choice" not in model.calls[-1].kwargs


async def test_the_model_guard_asks_again_when_a_reply_copies_a_note(home: Path) -> None:
    """With re-asks on, the guard sees the copy first: the model is told so and answers."""
    responses = ["It is a list of tasks.", LOOKED_NOT, "The file lists three tasks."]
    model, messages, answer = await run(home, "t-echo3", TODO, responses, rounds=1, retries=1)
    assert answer == "The file lists three tasks."
    assert "repeated a note of the harness" in model.calls[2].messages[-1].text
    assert not any(isinstance(m, AIMessage) and m.text == LOOKED_NOT for m in messages)


async def test_an_answer_that_repeats_the_background_notice_is_sent_back(home: Path) -> None:
    """The request is to serve a folder in the background *and* fetch a value through it; the
    model started the server and repeated the bash tool's notice as its answer. The notice is the
    harness's words for the model, so the answer is an echo; the value fetched next is the answer."""
    from langchain_core.messages import ToolMessage

    from tests.harness.test_completion_findings import call, notes, rules_of, workspace
    from tests.harness.test_completion_findings import run as checked_run

    api = workspace(home, "t-bg-echo") / "api"
    api.mkdir()
    (api / "status.json").write_text('{"version": "2.7.1"}\n')
    request = "Serve /mnt/user-data/workspace/api with python3 -m http.server 8765 in the background, then tell me the version in /status.json."
    fetch = "curl -s http://127.0.0.1:8765/status.json"
    model, state = await checked_run(
        home,
        "t-bg-echo",
        request,
        [
            call("bash", 1, command="cd /mnt/user-data/workspace/api && python3 -m http.server 8765", background=True),
            "The server is running in the background (job 1); listening on port 8765 inside the sandbox. Later "
            "bash commands reach it at http://127.0.0.1:8765/ (curl -s http://127.0.0.1:8765/...).",
            call("bash", 2, command=fetch),
            "The version is 2.7.1.",
        ],
    )
    started = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert started.text.startswith("Started in the background"), started.text
    # the note also says no command used the server yet, with the fetch of the request's path
    assert [rules_of(n) for n in notes(state)] == [["reply.echoes_note", "server.not_used"]]
    assert fetch in notes(state)[0].text
    assert state["messages"][-1].text == "The version is 2.7.1."
