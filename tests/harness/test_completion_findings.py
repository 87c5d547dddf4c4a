"""The completion check's findings: structural rules hold for a request in any language, rules
that read English intent only for an English request (and when the profile asks for them), the
plan follows the findings' fields, and each note carries its findings as data."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient
from herdsman.language.detect import language_of
from herdsman.middleware.completion.check import CompletionCheckMiddleware, intent_languages
from herdsman.middleware.completion.findings import (
    COMMAND,
    FINDINGS_KEY,
    RULES,
    SEARCH,
    WRITE_IF_ALONE,
    Finding,
    applies,
)
from herdsman.middleware.completion.findings_text import TEXTS, render
from herdsman.middleware.completion.plan import next_tools
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config


def call(name: str, n: int, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{n}"}]}


async def run(
    home: Path,
    thread: str,
    message: str,
    responses: list,
    intent_rules: str = "on",
    lead_extra: dict | None = None,
    **sections,
) -> tuple[ScriptedChatModel, dict]:
    lead = {"model_retries": 0, "verify_rounds": 2, "intent_rules": intent_rules, **(lead_extra or {})}
    config = make_config(home, lead=lead, **sections)
    model = ScriptedChatModel(responses=responses)
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream(message, thread_id=thread)]
        state = await client.agent.aget_state({"configurable": {"thread_id": thread}})
    return model, state.values


def notes(state: dict) -> list[HumanMessage]:
    return [m for m in state["messages"] if isinstance(m, HumanMessage) and m.name == "harness"]


def rules_of(note: HumanMessage) -> list[str]:
    return [f["rule"] for f in note.additional_kwargs[FINDINGS_KEY]]


def workspace(home: Path, thread: str) -> Path:
    ws = home / "threads" / thread / "user-data" / "workspace"
    ws.mkdir(parents=True)
    return ws


async def test_a_chinese_request_for_an_output_file_that_was_not_written_gets_path_missing(home: Path) -> None:
    """A Chinese request naming /mnt/user-data/outputs/report.md: the model answers "done"
    without writing it; the note says the path is missing (as data: rule and path), the next call
    is forced to write_file, and once the file is there the answer passes."""
    out = "/mnt/user-data/outputs/report.md"
    workspace(home, "t-zh1")
    model, state = await run(
        home,
        "t-zh1",
        f"请总结工作区的文件，并把报告写入{out}",
        [
            call("ls", 1, path="/mnt/user-data/workspace"),
            "已完成，报告已经写好了。",
            call("write_file", 2, path=out, content="# 报告\n"),
            "报告已写入。",
        ],
        skills={"auto_select": "off"},  # a report: the report-writing skill fits; its checks are tested apart
    )
    [note] = notes(state)
    [finding] = note.additional_kwargs[FINDINGS_KEY]
    assert finding["rule"] == "path.missing" and finding["evidence"] == {"path": out} and finding["languages"] is None
    assert note.text.startswith("[harness check]") and out in note.text
    assert model.calls[2].kwargs.get("tool_choice") == "write_file"
    assert (home / "threads" / "t-zh1" / "user-data" / "outputs" / "report.md").read_text() == "# 报告\n"
    assert len(model.calls) == 4 and state["completion_unresolved"] == []


async def test_a_chinese_request_gets_the_failed_command_and_the_unsupported_number(home: Path) -> None:
    """A failed command answered as if it had worked, and a count no tool printed: both found on
    a request in Chinese, with the failing call's id and the number as evidence."""
    workspace(home, "t-zh2")
    model, state = await run(
        home,
        "t-zh2",
        "运行 /mnt/user-data/workspace/app.py，告诉我结果。",
        [
            call("bash", 1, command="python3 /mnt/user-data/workspace/app.py"),  # no such file: exit code 2
            "程序运行成功。",
            "程序不存在，无法运行。",
        ],
    )
    [note] = notes(state)
    [finding] = note.additional_kwargs[FINDINGS_KEY]
    assert finding["rule"] == "command.failed_not_retried"
    assert finding["evidence"]["tool_call_id"] == "call-1" and "exit code" in finding["evidence"]["detail"]
    assert len(model.calls) == 3  # said once: the answer after it may be the explanation

    (workspace(home, "t-zh3") / "orders.txt").write_text("failed\nok\nfailed\n")
    model, state = await run(
        home,
        "t-zh3",
        "orders.txt 里有多少个失败的订单？",
        [
            call("bash", 1, command="grep -c failed /mnt/user-data/workspace/orders.txt"),
            "共有5个失败的订单。",
            call("bash", 2, command="grep -c failed /mnt/user-data/workspace/orders.txt"),
            "共有2个失败的订单。",
        ],
    )
    [note] = notes(state)
    assert rules_of(note) == ["number.unsupported"]
    assert note.additional_kwargs[FINDINGS_KEY][0]["evidence"]["numbers"] == ["5"]
    assert state["messages"][-1].text == "共有2个失败的订单。"


@pytest.mark.parametrize(
    ("request_text", "fires"),
    [
        ("How many lines does /mnt/user-data/workspace/notes.txt have", True),
        ("/mnt/user-data/workspace/notes.txt 有多少行", True),
        ("Сколько строк в файле /mnt/user-data/workspace/notes.txt", False),
    ],
)
async def test_an_intent_rule_fires_on_a_request_in_a_language_it_declares_only(
    home: Path, request_text: str, fires: bool
) -> None:
    """number.missing reads "how many" and 多少: it sends back an answer without a number to an
    English or a Chinese request, never to one in a language whose words it does not know (where
    it would see only the file name)."""
    thread = f"t-{language_of(request_text)}"
    (workspace(home, thread) / "notes.txt").write_text("a\nb\nc\n")
    model, state = await run(
        home,
        thread,
        request_text,
        [
            call("read_file", 1, path="/mnt/user-data/workspace/notes.txt"),
            "It is short.",
            call("bash", 2, command="wc -l notes.txt"),
            "3",
        ],
    )
    assert [rules_of(n) for n in notes(state)] == ([["number.missing"]] if fires else [])
    assert RULES["number.missing"].languages == ("en", "zh")


async def test_intent_rules_follow_the_profile_and_the_switch(home: Path) -> None:
    """auto: the English-intent rules run for a small-profile model only; off: never; the
    structural ones always (the benchmark's no_intent_rules variant measures the difference)."""
    assert intent_languages("auto", small=True) == ("en", "zh") and intent_languages("auto", small=False) == ()
    assert intent_languages("on", small=False) == ("en", "zh") and intent_languages("off", small=True) == ()
    ask = "How many lines does /mnt/user-data/workspace/notes.txt have"
    (workspace(home, "t-auto") / "notes.txt").write_text("a\n")
    model, state = await run(
        home, "t-auto", ask, [call("read_file", 1, path="notes.txt"), "It is short."], intent_rules="auto"
    )
    assert notes(state) == [] and len(model.calls) == 2  # the scripted model has the standard profile


@pytest.mark.parametrize(
    ("request_text", "answer"),
    [
        ("Explain how a lighthouse works, no files needed.", "A lamp and a lens send a beam that turns."),
        ("解释一下灯塔是如何工作的，不需要文件。", "灯和透镜把光聚成一束旋转的光。"),
    ],
)
async def test_a_question_about_the_world_gets_no_note_to_use_the_tools(
    home: Path, request_text: str, answer: str
) -> None:
    model, state = await run(home, "t-light", request_text, [answer])
    assert notes(state) == [] and len(model.calls) == 1


async def test_a_request_naming_a_file_answered_without_a_tool_gets_tool_none_used_in_any_language(home: Path) -> None:
    (workspace(home, "t-zh5") / "data.csv").write_text("a,b\n1,2\n")
    model, state = await run(
        home, "t-zh5", "读取data.csv，告诉我有哪些列", ["有两列。", call("read_file", 1, path="data.csv"), "a 和 b。"]
    )
    assert [rules_of(n) for n in notes(state)] == [["tool.none_used"]]


async def test_findings_still_there_when_the_rounds_run_out_are_kept_typed(home: Path) -> None:
    workspace(home, "t-left")
    _, state = await run(home, "t-left", "把结果保存到 /mnt/user-data/outputs/a.txt", ["好的。", "好的。", "好的。"])
    missing, unused = state["completion_unresolved"]
    assert missing["rule"] == "path.missing" and missing["evidence"] == {"path": "/mnt/user-data/outputs/a.txt"}
    assert unused["rule"] == "tool.none_used"
    assert missing["text"] == render(Finding.from_dict(missing))


def test_the_plan_follows_the_findings_fields_not_their_words() -> None:
    """The forced tools come from next_tools and priority: a finding whose words speak of code to
    run but whose fields say grep is sent to grep; a write that applies alone yields to any other
    finding."""
    worded = Finding(
        "verifier.misleading",
        {"detail": "Your reply shows code that nothing ran. Run those commands with bash."},
        ("grep",),
        SEARCH,
    )
    assert next_tools([worded]) == ["grep"]
    assert next_tools([worded, Finding("script.changed_not_run", {"scripts": ["a.py"]}, ("bash",), COMMAND)]) == [
        "bash"
    ]
    missing = Finding("path.missing", {"path": "/mnt/user-data/outputs/a.md"}, ("write_file",), WRITE_IF_ALONE)
    assert next_tools([missing]) == ["write_file"]
    assert next_tools([missing, Finding("reply.refusal")]) == ["any"]
    assert next_tools([Finding("call.as_text")]) == ["any"]


def test_every_rule_has_words_and_declared_languages() -> None:
    assert set(TEXTS) == set(RULES)
    assert all(r.languages in (None, ("en",), ("en", "zh")) for r in RULES.values() if r.intent)
    # a rule that counts scripts, not words, applies to the languages it declares whatever the intent rules
    assert RULES["reply.wrong_language"].languages == ("zh",) and not RULES["reply.wrong_language"].intent
    assert applies("reply.wrong_language", "zh", ()) and not applies("reply.wrong_language", "en", ("en", "zh"))
    neutral = {
        "path.missing",
        "path.empty",
        "command.failed_not_retried",
        "code.shown_not_run",
        "number.unsupported",
        "file.unchanged",
        "call.as_text",
        "tool.unknown",
        "reply.placeholder",
    }
    assert all(RULES[r].languages is None for r in neutral)


def test_the_language_of_a_request_is_read_from_its_letters_not_its_paths() -> None:
    assert language_of("把结果写入 /mnt/user-data/outputs/report.md") == "zh"
    assert language_of("Fix greet.py") == "en"
    assert language_of("report.mdを作成してください") == "ja"
    assert language_of("Summarize 报告.md in English please") == "en"  # a quoted name does not make it Chinese
    assert language_of("/mnt/user-data/outputs/a.md") == "und"


def test_a_question_in_chinese_is_a_question_for_the_answer_nudge() -> None:
    from herdsman.middleware.answer_nudge import is_question

    assert is_question("orders.txt 里有多少个失败的订单？") and not is_question("把结果写入 a.txt。")


def test_a_reply_in_chinese_is_not_read_as_an_english_refusal_or_claim() -> None:
    """The refusal and claim rules read the reply's English; a direct call of the check (no
    sandbox) on a Chinese reply finds nothing of theirs, an English refusal is found."""
    check = CompletionCheckMiddleware(None, tool_names=["bash"])

    def state(reply: str) -> dict:
        return {"messages": [HumanMessage("写一首诗"), AIMessage(reply)]}

    assert check.problems(state("抱歉，我无法完成。")) == []
    assert [f.rule for f in check.problems(state("I'm sorry, but I can't assist with that."))] == ["reply.refusal"]
    assert (
        CompletionCheckMiddleware(None, intent_languages=()).problems(state("I'm sorry, but I can't assist with that."))
        == []
    )


async def test_a_file_written_back_unchanged_then_changed_and_not_run_in_chinese(home: Path) -> None:
    """No verb needed (the intent rules are off): a named file the run wrote back with its old
    content is file.unchanged (the next call forced to edit it, already read); once changed, the
    script is run before the answer passes (script.changed_not_run, forced to bash)."""
    ws = workspace(home, "t-zh6")
    (ws / "stats.py").write_text("def mean(v):\n    return sum(v)\n")
    path = "/mnt/user-data/workspace/stats.py"
    model, state = await run(
        home,
        "t-zh6",
        "stats.py 的 mean 算错了，请修复它。",
        intent_rules="off",
        responses=[
            call("read_file", 1, path=path),
            call("write_file", 2, path=path, content="def mean(v):\n    return sum(v)"),
            "已修复。",
            call("str_replace", 3, path=path, old="sum(v)", new="sum(v) / len(v)"),
            "已修复。",
            call("bash", 4, command="python3 -c 'import stats; print(stats.mean([2, 4]))'"),
            "已修复，mean([2, 4]) 是 3.0。",
        ],
    )
    assert [rules_of(n) for n in notes(state)] == [["file.unchanged"], ["script.changed_not_run"]]
    assert [c.kwargs.get("tool_choice") for c in model.calls[3:]] == ["str_replace", None, "bash", None]
    assert (ws / "stats.py").read_text() == "def mean(v):\n    return sum(v) / len(v)"


async def test_a_chinese_request_to_fix_a_file_that_is_unchanged_gets_change_not_made(home: Path) -> None:
    """修复 (fix) is a word of intent in Chinese: the model answers "fixed" without touching the
    file and is sent back to edit it, with the file read first."""
    ws = workspace(home, "t-zh7")
    (ws / "stats.py").write_text("def mean(v):\n    return sum(v)\n")
    path = "/mnt/user-data/workspace/stats.py"
    model, state = await run(
        home,
        "t-zh7",
        "请修复 stats.py 里的 mean 函数，它没有除以个数。",
        [
            call("read_file", 1, path=path),
            "已修复。",
            call("str_replace", 2, path=path, old="sum(v)", new="sum(v) / len(v)"),
            call("bash", 3, command="python3 -c 'import stats; print(stats.mean([2, 4]))'"),
            "已修复，mean([2, 4]) 是 3.0。",
        ],
    )
    [note] = notes(state)
    assert rules_of(note) == ["file.change_not_made"] and note.additional_kwargs[FINDINGS_KEY][0]["languages"] == [
        "en",
        "zh",
    ]
    assert model.calls[2].kwargs.get("tool_choice") == "str_replace"
    assert (ws / "stats.py").read_text() == "def mean(v):\n    return sum(v) / len(v)\n"


@pytest.mark.parametrize(
    ("intent", "text", "expected"),
    [
        ("change", "把 config.ini 里的端口改成 9090", "改成"),
        ("make", "把统计结果保存到 /mnt/user-data/outputs/total.txt", "保存"),
        ("count", "app.log 里有几行是错误？", "几行"),
        ("superlative", "哪个文件最大？", "最大"),
        ("superlative", "最新的文件是哪一个", "最新"),
        ("sorted", "把名字按字母排序后写入 names.txt", "按字母"),
        ("change", "請修復 app.py", "修復"),  # Traditional characters
    ],
)
def test_chinese_words_of_intent(intent: str, text: str, expected: str) -> None:
    from herdsman.middleware.completion.intent_words import said_word, says

    match = says(intent, text, "zh")
    assert match is not None and said_word(match) == expected
    assert says(intent, text, "ru") is None  # a language with no words: the rule stays off


def test_chinese_questions_counts_and_file_topics() -> None:
    from herdsman.middleware.completion.intent_words import counted_unit, files_topic, zh_question
    from herdsman.middleware.completion.rules import count_command

    assert zh_question("app.log 里有多少行错误") and zh_question("这个目录存在吗")
    assert not zh_question("统计行数并保存到 /mnt/user-data/outputs/n.txt")  # a file to make: a task
    assert counted_unit("统计 essay.txt 的字数", "zh") == "words"
    assert count_command("essay.txt 有多少行？", "zh") == "wc -l < essay.txt"
    assert files_topic("分析上传的数据", "zh") and not files_topic("解释一下灯塔是如何工作的，不需要文件。", "zh")


ORDERS = '[\n {"id": 7, "status": "failed"},\n {"id": 11, "status": "ok"},\n {"id": 12, "status": "failed"}\n]\n'


@pytest.mark.parametrize(
    "ask",
    [
        "How many orders in /mnt/user-data/workspace/orders.json have the status failed?",
        "/mnt/user-data/workspace/orders.json 里有多少个订单的状态是 failed？",
    ],
)
async def test_a_count_read_off_the_data_is_sent_back_to_be_computed(home: Path, ask: str) -> None:
    """The model reads the JSON and answers 11 (an id it saw): a number the data shows, so not
    unsupported, but no command counted it. It is sent back to count with a command (forced to
    bash); the command's 2 passes."""
    thread = f"t-eye-{language_of(ask)}"
    (workspace(home, thread) / "orders.json").write_text(ORDERS)
    path = "/mnt/user-data/workspace/orders.json"
    model, state = await run(
        home,
        thread,
        ask,
        [
            call("read_file", 1, path=path),
            "11",
            call("bash", 2, command=f"grep -c '\"failed\"' {path}"),
            "2",
        ],
    )
    [note] = notes(state)
    assert rules_of(note) == ["count.not_computed"] and note.additional_kwargs[FINDINGS_KEY][0]["evidence"][
        "numbers"
    ] == ["11"]
    assert model.calls[2].kwargs.get("tool_choice") == "bash"
    assert state["messages"][-1].text == "2" and len(model.calls) == 4


async def test_a_guess_repeated_after_counting_is_sent_back_once_more(home: Path) -> None:
    """The model counts with a pattern that matches nothing, gets 0 (and the bash tool's note of
    how the file writes it), and answers its first guess again: sent back once more, it answers
    with the count; a third guess is not sent back again (two notes at most)."""
    (workspace(home, "t-eye2") / "orders.json").write_text(ORDERS)
    path = "/mnt/user-data/workspace/orders.json"
    model, state = await run(
        home,
        "t-eye2",
        "How many orders in /mnt/user-data/workspace/orders.json have the status failed?",
        [
            call("read_file", 1, path=path),
            "11",
            call("bash", 2, command=f"grep -c 'status: failed' {path}"),
            "11",
            call("bash", 3, command=f"grep -c '\"failed\"' {path}"),
            "2",
        ],
    )
    first, second = notes(state)
    assert rules_of(first) == ["count.not_computed"] and "count.not_computed" in rules_of(second)
    again = next(f for f in second.additional_kwargs[FINDINGS_KEY] if f["rule"] == "count.not_computed")
    assert again["evidence"]["again"] is True and "still gives 11" in again["text"]
    assert state["messages"][-1].text == "2"


async def test_a_count_a_command_printed_passes(home: Path) -> None:
    (workspace(home, "t-cmd") / "orders.json").write_text(ORDERS)
    path = "/mnt/user-data/workspace/orders.json"
    model, state = await run(
        home,
        "t-cmd",
        "How many orders in /mnt/user-data/workspace/orders.json have the status failed?",
        [
            call("bash", 1, command=f"grep -c '\"failed\"' {path}"),
            "2",
        ],
    )
    assert notes(state) == [] and len(model.calls) == 2


@pytest.mark.parametrize(
    "ask",
    [
        "Create /mnt/user-data/outputs/summary.md with a line 'Total: <total amount>' and a line 'Rows: <number of data rows>' "
        "for /mnt/user-data/workspace/sales.csv.",
        "为 /mnt/user-data/workspace/sales.csv 创建 /mnt/user-data/outputs/summary.md，包含一行“Total: <总金额>”和一行“Rows: <数据行数>”。",
    ],
)
async def test_a_file_without_the_quoted_lines_fixed_words_is_sent_back(home: Path, ask: str) -> None:
    """The request quotes the lines with placeholders; the model writes only the values. The
    note names the missing words and the next call rewrites the file at once (the agent wrote
    it, so read before write lets it), and the file with them passes."""
    thread = f"t-tpl-{language_of(ask)}"
    (workspace(home, thread) / "sales.csv").write_text("amount\n10.5\n20\n")
    out = "/mnt/user-data/outputs/summary.md"
    model, state = await run(
        home,
        thread,
        ask,
        [
            call("bash", 1, command='python3 -c "print(30.5); print(2)"'),
            call("write_file", 2, path=out, content="30.5\n2\n"),
            "Done.",
            call("write_file", 4, path=out, content="Total: 30.5\nRows: 2\n"),
            "Done.",
        ],
    )
    [note] = notes(state)
    [finding] = note.additional_kwargs[FINDINGS_KEY]
    assert finding["rule"] == "file.template_missing" and finding["evidence"]["missing"] == ["Total:", "Rows:"]
    assert model.calls[3].kwargs.get("tool_choice") == "write_file"
    assert not any(m.status == "error" for m in state["messages"] if isinstance(m, ToolMessage))
    assert (home / "threads" / thread / "user-data" / "outputs" / "summary.md").read_text() == "Total: 30.5\nRows: 2\n"
    assert len(model.calls) == 5


async def test_a_file_changed_after_the_agent_read_it_is_read_again_before_the_rewrite(home: Path) -> None:
    """The planner asks read before write's own state: the agent wrote the file, then something
    else changed it (a user's upload, a script it ran): the note's way reads it first, and the
    rewrite is not refused."""
    thread = "t-tpl-changed"
    (workspace(home, thread) / "sales.csv").write_text("amount\n10.5\n20\n")
    out = "/mnt/user-data/outputs/summary.md"
    target = home / "threads" / thread / "user-data" / "outputs" / "summary.md"
    model, state = await run(
        home,
        thread,
        f"Create {out} with a line 'Total: <total amount>' for /mnt/user-data/workspace/sales.csv.",
        [
            call("bash", 1, command="python3 -c 'print(30.5)'"),
            call("write_file", 2, path=out, content="30.5\n"),
            call("bash", 3, command=f"sed -i 's/30.5/30.5 /' {out}"),
            "Done.",
            call("read_file", 4, path=out),
            call("write_file", 5, path=out, content="Total: 30.5\n"),
            "Done.",
        ],
    )
    [note] = notes(state)
    assert rules_of(note) == ["file.template_missing"]
    assert [c.kwargs.get("tool_choice") for c in model.calls[4:6]] == ["read_file", "write_file"]
    assert not any(m.status == "error" for m in state["messages"] if isinstance(m, ToolMessage))
    assert target.read_text() == "Total: 30.5\n"


async def test_a_way_taken_that_did_not_help_gives_way_to_the_next(home: Path) -> None:
    """The model shows a command instead of writing the file: it is sent to run the code (forced
    bash), runs it, and answers with the same text. The next note does not force bash again: the
    next finding's way (write the file) is forced, and the written file passes."""
    (workspace(home, "t-spent") / "team.txt").write_text("Zoe\nAdam\nMira\n")
    out = "/mnt/user-data/outputs/team.json"
    shown = "Sort the names like this:\n```bash\nsort /mnt/user-data/workspace/team.txt\n```"
    model, state = await run(
        home,
        "t-spent",
        f"Create {out}, a JSON list of the names in /mnt/user-data/workspace/team.txt sorted alphabetically.",
        [
            shown,
            call("bash", 1, command="sort /mnt/user-data/workspace/team.txt"),
            shown,
            call("write_file", 2, path=out, content='["Adam", "Mira", "Zoe"]'),
            "Done.",
        ],
    )
    first, second = notes(state)
    assert "code.shown_not_run" in rules_of(first) and "code.shown_not_run" in rules_of(second)
    assert [c.kwargs.get("tool_choice") for c in model.calls[1:4:2]] == ["bash", "write_file"]
    assert (
        home / "threads" / "t-spent" / "user-data" / "outputs" / "team.json"
    ).read_text() == '["Adam", "Mira", "Zoe"]'


async def test_a_file_a_command_made_without_the_quoted_words_is_rewritten_at_once(home: Path) -> None:
    """The model saved a command's bare output to the file: the note forces write_file at once,
    and read before write lets it (the agent's own command wrote the file whole)."""
    (workspace(home, "t-tpl-cmd") / "sales.csv").write_text("amount\n10.5\n20\n")
    out = "/mnt/user-data/outputs/summary.md"
    model, state = await run(
        home,
        "t-tpl-cmd",
        f"Create {out} with a line 'Total: <total amount>' for /mnt/user-data/workspace/sales.csv.",
        [
            call("bash", 1, command=f"mkdir -p /mnt/user-data/outputs && python3 -c 'print(30.5)' > {out}"),
            "Done.",
            call("write_file", 3, path=out, content="Total: 30.5\n"),
            "Done.",
        ],
    )
    [note] = notes(state)
    assert rules_of(note) == ["file.template_missing"]
    assert model.calls[2].kwargs.get("tool_choice") == "write_file"
    assert not any(m.status == "error" for m in state["messages"] if isinstance(m, ToolMessage))
    assert (home / "threads" / "t-tpl-cmd" / "user-data" / "outputs" / "summary.md").read_text() == "Total: 30.5\n"


def test_the_verifier_answers_through_a_forced_tool_call_into_a_typed_verdict() -> None:
    """The judge's reply is a Verdict tool call (forced), not prose; its findings are verifier.<id>."""
    from herdsman.middleware.completion.verifier import verify

    messages = [HumanMessage("Save a poem to /mnt/user-data/outputs/poem.txt"), AIMessage("Here is a poem: ...")]
    judge = ScriptedChatModel(
        responses=[
            {
                "tool_calls": [
                    {
                        "name": "Verdict",
                        "args": {
                            "done": False,
                            "findings": [{"rule": "File Missing", "detail": "poem.txt was not written."}],
                        },
                    }
                ]
            },
            {"tool_calls": [{"name": "Verdict", "args": {"done": True, "findings": []}}]},
            "MISSING: prose is not a verdict",
        ]
    )
    [finding] = verify(judge, messages)
    assert finding.rule == "verifier.file_missing" and render(finding) == "poem.txt was not written."
    assert judge.calls[0].tools == ["Verdict"] and judge.calls[0].kwargs.get("tool_choice") not in (
        None,
        "auto",
        "none",
    )
    assert verify(judge, messages) == []  # done
    assert verify(judge, messages) == []  # prose: no verdict, nothing found (the rules have spoken already)


async def test_a_script_written_as_a_description_is_sent_back_because_it_does_not_parse(home: Path) -> None:
    """Language-neutral: a .py file the run wrote that does not compile is script.does_not_parse,
    the next call forced to write_file; fixed, the answer passes."""
    workspace(home, "t-parse")
    path = "/mnt/user-data/workspace/topword.py"
    model, state = await run(
        home,
        "t-parse",
        f"Write {path}: python3 topword.py FILE prints the most frequent word.",
        intent_rules="off",
        responses=[
            call("write_file", 1, path=path, content="python3 topword.py FILE prints the most frequent word."),
            "Done.",
            call("write_file", 2, path=path, content="import sys\nprint(open(sys.argv[1]).read().split()[0])\n"),
            call("bash", 3, command=f"echo a b > /tmp/s.txt && python3 {path} /tmp/s.txt"),
            "Done: it prints a.",
        ],
    )
    found = [rules_of(n) for n in notes(state)]
    assert found == [["script.does_not_parse"]], found
    assert "SyntaxError" in notes(state)[0].text and state["messages"][-1].text == "Done: it prints a."


async def test_a_json_file_the_request_asks_for_that_does_not_parse_is_sent_back_however_it_was_made(
    home: Path,
) -> None:
    """A .json deliverable made by a bash command (or a sub-agent: not the lead's write_file) that
    is not JSON is script.does_not_parse too: on dev a sub-agent's sed pipeline left a file that
    was not JSON and the lead passed on its answer."""
    workspace(home, "t-parse-json")
    path = "/mnt/user-data/outputs/team.json"
    model, state = await run(
        home,
        "t-parse-json",
        f"创建 {path}：team.txt 里的名字按字母排序后的 JSON 列表。",
        intent_rules="off",
        responses=[
            call("bash", 1, command=f"printf 'Ann,Bob' > {path}"),
            "完成。",
            call("write_file", 2, path=path, content='["Ann", "Bob"]'),
            "已写入 JSON 列表。",
        ],
    )
    found = [rules_of(n) for n in notes(state)]
    assert found == [["script.does_not_parse"]], found
    assert "team.json" in notes(state)[0].text and state["messages"][-1].text == "已写入 JSON 列表。"


async def test_a_new_script_that_prints_nothing_for_the_requests_command_is_sent_back_in_chinese(home: Path) -> None:
    """A script the request names and the run made is run before the answer passes
    (script.changed_not_run, with the request's own command, which ends where the Chinese goes on);
    run, printing nothing for that command, it is script.printed_nothing."""
    workspace(home, "t-add")
    path = "/mnt/user-data/workspace/add.py"
    model, state = await run(
        home,
        "t-add",
        f"创建命令行工具 {path}：python3 add.py 2 3 4 输出这些数的和（这里是 9）。",
        intent_rules="off",
        responses=[
            call("write_file", 1, path=path, content="def add(a, b, c):\n    return a + b + c\n"),
            "已创建。",
            call("bash", 2, command="cd /mnt/user-data/workspace && python3 add.py 2 3 4"),
            "已创建。",
            call("write_file", 3, path=path, content="import sys\nprint(sum(int(a) for a in sys.argv[1:]))\n"),
            call("bash", 4, command="cd /mnt/user-data/workspace && python3 add.py 2 3 4"),
            "已创建，输出 9。",
        ],
    )
    found = [rules_of(n) for n in notes(state)]
    assert found == [["script.changed_not_run"], ["script.printed_nothing"]], found
    assert "python3 add.py 2 3 4)" in notes(state)[0].text  # the command, without the Chinese after it
    assert state["messages"][-1].text == "已创建，输出 9。"


async def test_a_fix_whose_output_lacks_a_value_the_request_gives_is_sent_back(home: Path) -> None:
    """The request's own command, run on the changed script, printed 2 and 1 where the request
    says 3, 2, 1: script.output_differs; once it prints all three the answer passes."""
    ws = workspace(home, "t-count")
    (ws / "countdown.py").write_text("import sys\nfor i in range(int(sys.argv[1]), 1, -1):\n    print(i)\n")
    path = "/mnt/user-data/workspace/countdown.py"
    model, state = await run(
        home,
        "t-count",
        f"{path} should print 3, 2, 1 on separate lines (python3 countdown.py 3), but it misses one. Fix it.",
        intent_rules="off",
        responses=[
            call("read_file", 0, path=path),
            call("str_replace", 1, path=path, old="print(i)", new="print(i - 1)"),
            call("bash", 2, command="cd /mnt/user-data/workspace && python3 countdown.py 3"),
            "Fixed.",
            call("str_replace", 3, path=path, old="1, -1):\n    print(i - 1)", new="0, -1):\n    print(i)"),
            call("bash", 4, command="cd /mnt/user-data/workspace && python3 countdown.py 3"),
            "Fixed: it prints 3, 2, 1.",
        ],
    )
    found = [rules_of(n) for n in notes(state)]
    assert found == [["script.output_differs"]], found
    assert "printed '2\\n1'" in notes(state)[0].text and "expects 3 too" in notes(state)[0].text
    assert (ws / "countdown.py").read_text().count("0, -1") == 1


async def test_the_code_a_reply_shows_is_written_into_the_file_that_does_not_parse(home: Path) -> None:
    """The model wrote the request's sentence into topword.py, then showed the program in its
    answer: the harness writes that block into the file in the model's name (write_file, marked),
    and the model runs it."""
    workspace(home, "t-shown")
    path = "/mnt/user-data/workspace/topword.py"
    program = "import sys\nwords = open(sys.argv[1]).read().lower().split()\nprint(max(set(words), key=words.count))"
    model, state = await run(
        home,
        "t-shown",
        f"Write {path}: python3 topword.py FILE prints the most frequent word.",
        intent_rules="off",
        lead_extra={"run_shown_code": "on"},
        responses=[
            call("write_file", 1, path=path, content="python3 topword.py FILE prints the most frequent word."),
            f"Here is the corrected file:\n```python\n{program}\n```",
            call("bash", 2, command=f"echo b a b > /tmp/s.txt && python3 {path} /tmp/s.txt"),
            "It prints b.",
        ],
    )
    written = (home / "threads" / "t-shown" / "user-data" / "workspace" / "topword.py").read_text()
    assert written == program + "\n"
    harness = [
        m for m in state["messages"] if isinstance(m, AIMessage) and m.additional_kwargs.get("herdsman_ran_shown_code")
    ]
    assert [c["name"] for m in harness for c in m.tool_calls] == ["write_file"]
    assert "The harness wrote the code your reply showed" in notes(state)[0].text
    assert state["messages"][-1].text == "It prints b."


def test_what_the_command_printed_before_the_script_changed_is_not_held_against_it() -> None:
    from langchain_core.messages import ToolMessage

    from herdsman.middleware.completion.rules import command_outcome

    path = "/mnt/user-data/workspace/countdown.py"
    request = f"{path} should print 3, 2, 1 (python3 countdown.py 3). Fix it."
    ran = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 countdown.py 3"}, "id": "b1"}]),
        ToolMessage("3\n2", tool_call_id="b1", name="bash"),
    ]
    edited = [
        AIMessage("", tool_calls=[{"name": "str_replace", "args": {"path": path, "old": "1", "new": "0"}, "id": "e1"}]),
        ToolMessage("Replaced 1 occurrence(s)", tool_call_id="e1", name="str_replace"),
    ]
    found = command_outcome(request, [path], ran)
    assert found is not None and found.rule == "script.output_differs" and found.evidence["missing"] == ["1"]
    assert command_outcome(request, [path], ran + edited) is None


def test_a_search_whose_result_showed_the_file_is_not_sent_to_search_the_same_term_again() -> None:
    from langchain_core.messages import ToolMessage

    from herdsman.middleware.completion.search import fruitless_search
    from herdsman.sandbox.grep_hint import NO_MATCH_NOTE

    def searched(output: str) -> list:
        return [
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "grep",
                        "args": {"pattern": "client", "path": "/mnt/user-data/workspace/a.log"},
                        "id": "g1",
                    }
                ],
            ),
            ToolMessage(output, tool_call_id="g1", name="grep"),
        ]

    request = "How many distinct client addresses appear in /mnt/user-data/workspace/a.log?"
    bare = "no matches for 'client' in /mnt/user-data/workspace/a.log"
    assert fruitless_search(request, searched(bare)) is not None
    shown = f"{bare}\n{NO_MATCH_NOTE}, and no line of /mnt/user-data/workspace/a.log contains 'client' at all.]"
    assert fruitless_search(request, searched(shown)) is None


async def test_a_name_no_tool_printed_is_sent_back_and_a_no_the_listing_contradicts(home: Path) -> None:
    """name.unsupported: "Neptune" after a script that printed only 9.54; answer.denied_but_shown:
    "No." to whether d.bin is anywhere below a folder whose listing shows deep/d.bin (also in Chinese)."""
    ws = workspace(home, "t-name")
    (ws / "planets.csv").write_text("name,au\nMars,1.52\nSaturn,9.54\n")
    script = "python3 -c \"import csv; print(max(float(r['au']) for r in csv.DictReader(open('planets.csv'))))\""
    named = "python3 -c \"import csv; print(max(csv.DictReader(open('planets.csv')), key=lambda r: float(r['au']))['name'])\""
    _, state = await run(
        home,
        "t-name",
        "Which planet in planets.csv is farthest from the sun? Reply with the name only.",
        intent_rules="off",
        responses=[
            call("bash", 1, command=f"cd /mnt/user-data/workspace && {script}"),
            "The farthest is Neptune.",
            call("bash", 2, command=f"cd /mnt/user-data/workspace && {named}"),
            "Saturn",
        ],
    )
    assert [rules_of(n) for n in notes(state)] == [["name.unsupported"]] and "Neptune" in notes(state)[0].text
    for thread, question, no, yes in [
        (
            "t-deep",
            "Is there a file called d.bin anywhere under /mnt/user-data/workspace/media? Answer yes or no.",
            "No.",
            "Yes.",
        ),
        ("t-deep-zh", "/mnt/user-data/workspace/media 下面有没有名为 d.bin 的文件？", "没有。", "有。"),
    ]:
        media = workspace(home, thread) / "media" / "deep"
        media.mkdir(parents=True)
        (media / "d.bin").write_bytes(b"x")
        _, state = await run(
            home,
            thread,
            question,
            intent_rules="on",
            responses=[call("bash", 1, command="find /mnt/user-data/workspace/media -type f"), no, yes],
        )
        found = [rules_of(n) for n in notes(state)]
        assert found == [["answer.denied_but_shown"]], found
        assert "/mnt/user-data/workspace/media/deep/d.bin" in notes(state)[0].text and state["messages"][-1].text == yes


def test_a_name_given_bare_counts_as_a_name() -> None:
    from langchain_core.messages import ToolMessage

    from herdsman.middleware.completion.rules import unsupported_names

    printed = [ToolMessage("9.54", tool_call_id="b", name="bash")]
    question = "Which planet in planets.csv is farthest from the sun? Reply with the name only."
    assert unsupported_names(question, "Neptune", printed) == ["Neptune"]
    assert unsupported_names(question, "New Horizons.", printed) == ["New", "Horizons"]
    assert unsupported_names(question, "Yes.", printed) == [] and unsupported_names(question, "None", printed) == []
    assert unsupported_names(question, "Saturn", [ToolMessage("Saturn", tool_call_id="b", name="bash")]) == []
    assert unsupported_names(question, "Neptune is the farthest one", printed) == []  # starts a sentence


async def test_no_matches_in_a_searched_file_does_not_deny_the_file(home: Path) -> None:
    """The answer "No matches for 'client' in .../access.log" to a count over access.log is not
    a "no" to whether access.log exists: a search's result names the file it searched, it is no
    listing (answer.denied_but_shown stays out; the missing number is what the note says)."""
    ws = workspace(home, "t-grep-no")
    (ws / "access.log").write_text("10.0.0.1 - - GET /\n10.0.0.2 - - GET /a\n")
    _, state = await run(
        home,
        "t-grep-no",
        "How many distinct client IP addresses appear in /mnt/user-data/workspace/access.log?",
        intent_rules="on",
        responses=[
            call("grep", 1, pattern="client", path="/mnt/user-data/workspace/access.log"),
            "No matches for 'client' in /mnt/user-data/workspace/access.log",
            "2",
            "2",
            "2",
        ],
    )
    found = [rule for n in notes(state) for rule in rules_of(n)]
    assert found and "answer.denied_but_shown" not in found, found


def test_a_file_name_in_a_question_does_not_end_its_sentence() -> None:
    """ "Which item in stock.csv has the least qty?": the dot of a file name is not a full stop,
    so the superlative after it is still the question's; a sentence that ended before it is not."""
    from herdsman.middleware.completion.intent_words import said_word, says

    match = says("superlative", "Which item in /mnt/user-data/workspace/stock.csv has the least qty?", "en")
    assert match is not None and said_word(match) == "least"
    assert says("superlative", "What is in data.csv. Then list the largest rows", "en") is None


async def test_a_note_the_model_ignored_is_left_unresolved_in_the_state(home: Path) -> None:
    """The script failed, the note said so, and the model only said again what it said before:
    the rule that speaks once stays quiet, and the state now says what is left
    (``completion_unresolved``), which the web UI's outcome line and ``herdsman run`` read, so the
    run shows as not delivered instead of done."""
    ws = workspace(home, "t-ignored")
    (ws / "primes.py").write_text("import primesieve_not_installed\n")
    claim = "The script ran and printed the primes."
    _, state = await run(
        home,
        "t-ignored",
        "Run /mnt/user-data/workspace/primes.py and tell me what it prints.",
        [call("bash", 1, command="python3 primes.py"), claim, claim],
    )
    [note] = notes(state)
    assert "command.failed_not_retried" in rules_of(note)
    left = state["completion_unresolved"]
    assert [f["rule"] for f in left] == rules_of(note)
    assert any("primesieve_not_installed" in f["text"] for f in left)


@pytest.mark.parametrize(
    ("request_text", "owed"),
    [
        # names its own file, of another kind: the harness's pick of the skill owes no PNG
        ("Write /mnt/user-data/outputs/c2f.py that turns celsius temperature readings into fahrenheit.", False),
        # names a file of the kind the skill makes: it is owed
        ("Draw the celsius temperature readings as /mnt/user-data/outputs/temps.png", True),
    ],
)
async def test_a_skill_the_harness_chose_owes_only_the_kinds_of_file_the_request_names(
    home: Path, tmp_path: Path, request_text: str, owed: bool
) -> None:
    from herdsman.prompting.skill_ranking import SkillRanker
    from herdsman.skills import load_skills
    from tests.skills.conftest import skill_md

    root = tmp_path / "skills"
    (root / "public" / "temp-chart").mkdir(parents=True)
    (root / "public" / "temp-chart" / "SKILL.md").write_text(
        skill_md("temp-chart", "Draw celsius temperature readings as a PNG chart.", outputs='["**/*.png"]')
    )
    assert SkillRanker(load_skills(root).skills).clear_choice(request_text) is not None
    script = "print(round(float(__import__('sys').argv[1]) * 9 / 5 + 32, 1))\n"
    responses = [
        call("write_file", 1, path="/mnt/user-data/outputs/c2f.py", content=script),
        "Done.",
        "Done.",
        "Done.",
        "Done.",
    ]
    _, state = await run(home, f"t-kind-{owed}", request_text, responses, skills={"path": str(root)})
    assert state["active_skill"]["chosen"]
    rules = [r for note in notes(state) for r in rules_of(note)]
    assert ("skill.output_missing" in rules) is owed, rules
