"""``/name`` activates a skill for one turn: prompt index, injected SKILL.md, allowed-tools enforced."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.skills.activation import named_skill, skill_command, skill_commands
from tests.skills.conftest import skill_md
from tests.support import REPO, make_config

BODY = "# Audit\nALWAYS-GREP-FIRST: search the workspace before answering."


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


@pytest.fixture
def audit_skills(skills_root: Path, add_skill) -> Path:
    add_skill(
        "audit",
        text=skill_md(
            "audit", description="Audit code for secrets.", body=BODY, **{"allowed-tools": "[grep, read_file]"}
        ),
    )
    add_skill("notes", description="Take notes.")
    return skills_root


def test_skill_command_parsing() -> None:
    assert skill_command("/audit check the repo") == "audit"
    assert skill_command("  /data-analysis") == "data-analysis"
    assert skill_command("/mnt/user-data/x is a path") is None
    assert skill_command("please /audit") is None
    assert skill_command("/Audit") is None


def test_several_commands_at_the_start() -> None:
    assert skill_commands("/audit /notes check the repo") == ["audit", "notes"]
    assert skill_commands("/audit /audit x") == ["audit"]
    assert skill_commands("/audit check /notes") == ["audit"]  # only at the start, as the picker sends them
    assert skill_commands("hello") == []


async def test_two_picked_skills_are_both_active_with_the_tools_either_allows(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills)})
    model = ScriptedChatModel(responses=[call("write_file", path="n.txt", content="ok"), "Noted."])
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("/audit /notes check and note it", thread_id="t-two")]
    system = model.calls[0].messages[0].text
    assert '<active_skill name="audit"' in system and '<active_skill name="notes"' in system
    assert "write_file" in model.calls[0].tools  # notes restricts nothing, so nothing is restricted
    assert not [e for e in events if isinstance(e, ToolResult) and e.is_error]
    assert (home / "threads" / "t-two" / "user-data" / "workspace" / "n.txt").exists()


async def test_a_request_naming_no_skill_gets_the_fitting_ones_offered_or_a_clear_one_activated(
    home: Path, audit_skills: Path
) -> None:
    model = ScriptedChatModel(responses=["ok", "ok", "ok", "ok"])
    for mode in ("suggest", "activate", "off"):
        config = make_config(home, skills={"path": str(audit_skills), "auto_select": mode})
        async with HerdsmanClient(config, model=model) as client:
            await client.run("audit this code for secrets please", thread_id=f"t-{mode}")
    suggest, activate, off = (c.messages[0].text for c in model.calls[:3])
    assert "<skill_candidates>" in suggest and "- audit: read /mnt/skills/public/audit/SKILL.md" in suggest
    assert "- notes:" not in suggest.split("<skill_candidates>")[1]
    assert "ALWAYS-GREP-FIRST" not in suggest
    assert "ALWAYS-GREP-FIRST" in activate and "The harness chose the skill 'audit'" in activate
    # the harness's pick advises: its allowed-tools bind only when the user names the skill
    assert {"grep", "read_file", "bash", "write_file"} <= set(model.calls[1].tools)
    assert "you may use only these tools" not in activate
    assert "<skill_candidates>" not in off and "ALWAYS-GREP-FIRST" not in off


async def test_the_line_the_harness_adds_under_a_chinese_request_is_not_read_as_its_words(home: Path) -> None:
    """The harness writes "请用中文回答。" under a Chinese request; its "中文" met the
    text-to-speech skill's Chinese example and activated it for a request to change a text."""
    model = ScriptedChatModel(responses=["好的。"])
    async with HerdsmanClient(make_config(home, skills={"path": str(REPO / "skills")}), model=model) as client:
        await client.run("把 poem.txt 里的文字改成大写。", thread_id="t-zh")  # "upper-case the text of poem.txt"
        state = await client.agent.aget_state({"configurable": {"thread_id": "t-zh"}})
    assert "请用中文回答。" in model.calls[0].messages[-1].text  # the line is there for the model
    assert not state.values.get("active_skill") and "<active_skill" not in model.calls[0].messages[0].text


def test_a_known_skill_asked_for_in_words() -> None:
    known = {"audit", "data-analysis"}
    assert named_skill("Use the data-analysis skill to draw a chart", known) == "data-analysis"
    assert named_skill("please check the repo using the `audit` skill", known) == "audit"
    assert named_skill("Use the juggling skill", known) is None  # unknown: no activation, no note
    assert named_skill("the audit skill is nice", known) is None  # talked about, not asked for


async def test_asking_for_a_skill_in_words_activates_it(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills)})
    model = ScriptedChatModel(responses=["No secrets.", "Plain answer."])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("Use the audit skill to check for passwords", thread_id="t-words")
        await client.run("thanks", thread_id="t-words")
    assert "ALWAYS-GREP-FIRST" in model.calls[0].messages[0].text
    assert set(model.calls[0].tools) == {"grep", "read_file"}
    assert "ALWAYS-GREP-FIRST" not in model.calls[1].messages[0].text  # one turn only


async def test_prompt_lists_an_index_only(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills)})
    model = ScriptedChatModel(responses=["hi"])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("hello", thread_id="t-index")
    system = model.calls[0].messages[0].text
    assert "- audit (/mnt/skills/public/audit/SKILL.md): Audit code for secrets." in system
    assert "- notes (/mnt/skills/public/notes/SKILL.md): Take notes." in system
    assert "ALWAYS-GREP-FIRST" not in system


async def test_slash_command_injects_skill_and_enforces_allowed_tools(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills)})
    model = ScriptedChatModel(
        responses=[
            call("write_file", path="x.txt", content="nope"),
            call("grep", pattern="password"),
            "No secrets found.",
            "Plain answer.",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("/audit check for passwords", thread_id="t-audit")]
        second = await client.run("thanks, and now anything", thread_id="t-audit")

    results = [e for e in events if isinstance(e, ToolResult)]
    assert results[0].is_error and "not allowed while the skill 'audit' is active" in results[0].content
    assert not (home / "threads" / "t-audit" / "user-data" / "workspace" / "x.txt").exists()
    assert not results[1].is_error
    # every model call of the turn carried the skill and only its tools
    for recorded in model.calls[:3]:
        assert "ALWAYS-GREP-FIRST" in recorded.messages[0].text
        assert '<active_skill name="audit" path="/mnt/skills/public/audit">' in recorded.messages[0].text
        assert sorted(recorded.tools) == ["grep", "read_file"]
    # the next turn has no skill and every tool again
    assert second.answer == "Plain answer."
    assert "ALWAYS-GREP-FIRST" not in model.calls[3].messages[0].text
    assert "write_file" in model.calls[3].tools and "bash" in model.calls[3].tools


async def test_unknown_skill_gets_a_note_and_the_turn_goes_on(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills)})
    model = ScriptedChatModel(responses=["There is no such skill."])
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("/nope do it", thread_id="t-nope")
    assert result.answer == "There is no such skill."
    system = model.calls[0].messages[0].text
    assert "no enabled skill named 'nope'" in system and "/audit, /notes" in system


async def test_disabled_skills_are_neither_listed_nor_activated(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills), "disabled": ["audit"]})
    model = ScriptedChatModel(responses=["ok"])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("/audit now", thread_id="t-off")
    system = model.calls[0].messages[0].text
    assert "audit (/mnt" not in system and "ALWAYS-GREP-FIRST" not in system
    assert "no enabled skill named 'audit'; the skill exists but it is turned off in config.yaml" in system


async def test_skills_off_in_config(home: Path, audit_skills: Path) -> None:
    config = make_config(home, skills={"path": str(audit_skills), "enabled": False})
    model = ScriptedChatModel(responses=["ok"])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("/audit now", thread_id="t-skills-off")
    system = model.calls[0].messages[0].text
    assert "<skills>" not in system and "ALWAYS-GREP-FIRST" not in system


async def test_skill_stays_active_when_its_message_was_summarized_away(home: Path, audit_skills: Path) -> None:
    """The activation is kept in the state, so folding the user's message into a summary keeps it."""
    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, SystemMessage

    from herdsman.middleware.skill_activation import SkillActivationMiddleware
    from herdsman.skills import load_skills

    mw = SkillActivationMiddleware(load_skills(audit_skills, environ={}).skills)
    user = HumanMessage("/audit go", id="m1")
    seen: list[ModelRequest] = []

    def handler(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse(result=[AIMessage("ok")])

    def request(messages, state) -> ModelRequest:
        return ModelRequest(
            model=ScriptedChatModel(responses=[]),
            messages=messages,
            system_message=SystemMessage("base"),
            tool_choice=None,
            tools=[],
            response_format=None,
            state=state,
            runtime=None,
        )

    first = mw.wrap_model_call(request([user], {"messages": [user]}), handler)
    update = first.command.update["active_skill"]
    assert update == {"name": "audit", "message_id": "m1"}
    summary = HumanMessage("summary of earlier work", additional_kwargs={"lc_source": "summarization"})
    mw.wrap_model_call(request([summary], {"messages": [summary], "active_skill": update}), handler)
    assert "ALWAYS-GREP-FIRST" in seen[-1].system_message.text
    # a new user message without a command ends it
    later = HumanMessage("something else", id="m2")
    ended = mw.wrap_model_call(
        request([summary, later], {"messages": [summary, later], "active_skill": update}), handler
    )
    assert ended.command.update["active_skill"] is None
    assert "ALWAYS-GREP-FIRST" not in seen[-1].system_message.text


@pytest.mark.bwrap
async def test_skill_script_runs_from_read_only_mount(home: Path, skills_root: Path, add_skill) -> None:
    from herdsman.sandbox.bwrap import bwrap_status

    if not bwrap_status().available:
        pytest.skip(bwrap_status().reason)
    folder = add_skill("hello", text=skill_md("hello", body="Run /mnt/skills/public/hello/run.py."))
    (folder / "run.py").write_text("print('hello from the skill')\n")
    config = make_config(home, skills={"path": str(skills_root)}, sandbox={"isolation": "bwrap"})
    model = ScriptedChatModel(
        responses=[
            call("bash", command="python3 /mnt/skills/public/hello/run.py"),
            call("write_file", path="/mnt/skills/public/hello/run.py", content="hacked"),
            "done",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        events = [e async for e in client.stream("/hello", thread_id="t-hello")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert "hello from the skill" in results[0].content
    assert results[1].is_error and "read-only" in results[1].content
    assert (folder / "run.py").read_text() == "print('hello from the skill')\n"


async def test_a_reply_that_echoes_the_skill_is_asked_again(home: Path, skills_root: Path, add_skill) -> None:
    """From the benchmark: given the web-page-builder skill, the model answered with the skill's own
    text. The reply is re-asked with the reason; a second echo stands (it is prose) after the last try."""
    steps = "\n".join(
        f"{i}. Write the section number {i} of the page into index.html, with its heading." for i in range(1, 6)
    )
    add_skill("pages", text=skill_md("pages", description="Build pages.", body=f"# Pages\n## Steps\n{steps}\n"))
    config = make_config(home, skills={"path": str(skills_root)})
    echo = f"Follow these steps:\n{steps}"
    model = ScriptedChatModel(
        responses=[echo, call("write_file", path="/mnt/user-data/outputs/index.html", content="<h1>Hi</h1>"), "Done."]
    )
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("/pages make a page", thread_id="t-echo")
    assert "Your reply repeated your instructions instead of doing the task" in model.calls[1].messages[-1].text
    assert result.answer == "Done."
    model = ScriptedChatModel(responses=[echo] * 3)
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("/pages make a page", thread_id="t-echo2")
    assert len(model.calls) == 3 and result.answer == echo


async def test_an_active_skills_declared_outputs_are_checked_before_the_answer_stands(
    home: Path, skills_root: Path, add_skill
) -> None:
    """From the benchmark: with the report-writing skill active, the model ran the render script on
    a report it had not written, touched the file and stopped. A skill's ``outputs`` are files it
    delivers: while it is active, a missing one sends the agent back, once it exists the answer stands."""
    add_skill(
        "memo",
        text=skill_md("memo", description="Write memos.", body="# Memo\nWrite outputs/memo.md.", outputs='["**/*.md"]'),
    )
    config = make_config(home, skills={"path": str(skills_root)}, lead={"model_retries": 0, "verify_rounds": 2})
    model = ScriptedChatModel(
        responses=[
            "The memo is ready.",
            call("write_file", path="/mnt/user-data/outputs/memo.md", content="# Memo\nShip it.\n"),
            "Wrote /mnt/user-data/outputs/memo.md.",
            "Plain answer.",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("Use the memo skill to write a memo on the launch", thread_id="t-outputs")
        other = await client.run("thanks", thread_id="t-outputs")  # no skill active: nothing asked for
    note = model.calls[1].messages[-1].text
    assert "The active memo skill delivers **/*.md in /mnt/user-data/outputs, and there is none yet" in note
    assert model.calls[1].kwargs.get("tool_choice") == "write_file"
    assert result.answer == "Wrote /mnt/user-data/outputs/memo.md."
    assert other.answer == "Plain answer." and len(model.calls) == 4


async def test_a_declared_output_with_a_wildcard_is_named_after_what_the_request_names(
    home: Path, skills_root: Path, add_skill
) -> None:
    """From the benchmark: asked for "a skill named csv-summary" with the skill creator active, the
    model never wrote the file; the note now says which file: skills/csv-summary/SKILL.md."""
    add_skill(
        "maker",
        text=skill_md(
            "maker", description="Make skills.", body="# Maker\nWrite the SKILL.md.", outputs='["skills/*/SKILL.md"]'
        ),
    )
    config = make_config(home, skills={"path": str(skills_root)}, lead={"model_retries": 0, "verify_rounds": 1})
    model = ScriptedChatModel(responses=["Made it.", "Made it."])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("Use the maker skill to make a skill named csv-summary", thread_id="t-named")
    note = model.calls[1].messages[-1].text
    assert "write /mnt/user-data/outputs/skills/csv-summary/SKILL.md with write_file" in note


async def test_the_active_skills_check_runs_on_what_it_delivered_when_nothing_ran_it(
    home: Path, skills_root: Path, add_skill
) -> None:
    """From the dev split: with skill-creator active the model wrote a SKILL.md without front
    matter and said it was done; the validator it ran before writing was not run again. A skill's
    ``check`` runs on the delivered file (here through the harness, in the model's name) when
    nothing ran it since the file was written; the model fixes what it reports."""
    folder = add_skill(
        "memo",
        text=skill_md(
            "memo",
            description="Write memos.",
            body="# Memo\nWrite outputs/memo.md, then run scripts/check_memo.py on it.",
            outputs='["**/*.md"]',
            check="scripts/check_memo.py",
        ),
    )
    (folder / "scripts").mkdir()
    (folder / "scripts" / "check_memo.py").write_text(
        "import sys\ntext = open(sys.argv[1]).read()\n"
        "print('OK' if text.startswith('# ') else f'{sys.argv[1]}: the first line must be a # title')\n"
    )
    config = make_config(
        home, skills={"path": str(skills_root)}, lead={"model_retries": 0, "verify_rounds": 2, "run_shown_code": "on"}
    )
    memo = "/mnt/user-data/outputs/memo.md"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=memo, content="Ship it.\n"),
            "The memo is ready.",
            call("write_file", path=memo, content="# Launch\nShip it.\n"),
            "Added the title.",
            "The memo is ready; its check says OK.",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        result = await client.run("Use the memo skill to write a memo on the launch", thread_id="t-check")
        state = await client.agent.aget_state({"configurable": {"thread_id": "t-check"}})
    results = [m.text for m in state.values["messages"] if m.type == "tool" and "check_memo.py" not in m.text]
    checks = [
        m for m in state.values["messages"] if m.type == "ai" and "check_memo.py" in str(m.tool_calls)
    ]  # made by the harness, after each write
    assert [c.tool_calls[0]["args"]["command"] for c in checks] == [
        f"python3 /mnt/skills/public/memo/scripts/check_memo.py {memo}"
    ] * 2
    assert f"{memo}: the first line must be a # title" in results and "OK" in results
    assert result.answer == "The memo is ready; its check says OK."


def test_a_harness_note_after_the_request_is_no_new_request_for_the_skill() -> None:
    """The completion check's note ("[harness check] ...", a HumanMessage named harness) came after
    the request that named the skill; the skill stays the turn's (it was cleared at the first note,
    so round two checked nothing of the skill's)."""
    from langchain_core.messages import AIMessage, HumanMessage

    from herdsman.skills.activation import active_skill, last_user_message

    request = HumanMessage("Use the memo skill to write a memo", id="u1")
    note = HumanMessage("[harness check] Not done yet:\n- ...", name="harness", id="n1")
    messages = [request, AIMessage("Done."), note]
    assert last_user_message(messages) is request
    assert active_skill({"active_skill": {"name": "memo", "message_id": "u1"}}, messages, ["memo"]) == ("memo", False)


@pytest.fixture
def close_skills(skills_root: Path, add_skill) -> Path:
    """Two skills a request about charts of sales fits about equally (no clear choice)."""
    add_skill("bar-chart", description="Draw a bar chart of sales figures as a PNG image.", body="# Chart\nCHART-BODY")
    add_skill("sales-report", description="Write a report of sales figures with a chart.", body="# Report\nREPORT-BODY")
    return skills_root


def pick(name: str) -> dict:
    return call("choose_skill", skill=name)


@pytest.mark.parametrize(("answer", "active"), [("bar-chart", "bar-chart"), ("none", None), ("no-such-skill", None)])
async def test_the_model_picks_among_candidates_none_of_which_leads(
    home: Path, close_skills: Path, answer: str, active: str | None
) -> None:
    """``activate`` with ``ask_model``: the ranking offers both skills and neither leads, so the
    turn's first model call is the harness's forced pick; what it names (of the list) is active
    for the turn, and "none" or a name not offered activates nothing."""
    from herdsman.prompting.skill_ranking import SkillRanker
    from herdsman.skills import load_skills

    request = "Make a chart of the sales figures in sales.csv"
    ranker = SkillRanker(load_skills(close_skills).skills)
    assert ranker.clear_choice(request) is None and len(ranker.candidates(request)) == 2
    config = make_config(home, skills={"path": str(close_skills), "auto_select": "activate", "ask_model": "on"})
    model = ScriptedChatModel(responses=[pick(answer), "Done."])
    async with HerdsmanClient(config, model=model) as client:
        await client.run(request, thread_id=f"t-pick-{answer}")
        state = await client.agent.aget_state({"configurable": {"thread_id": f"t-pick-{answer}"}})
    asked, turn = model.calls
    assert asked.kwargs.get("tool_choice") == "choose_skill" and asked.tools == ["choose_skill"]
    assert "bar-chart" in asked.messages[-1].text and "sales-report" in asked.messages[-1].text
    assert request in asked.messages[-1].text
    recorded = state.values.get("active_skill")
    assert (recorded or {}).get("name") == active
    assert ("CHART-BODY" in turn.messages[0].text) is (active == "bar-chart")
    assert "REPORT-BODY" not in turn.messages[0].text


async def test_the_pick_is_asked_once_a_turn_and_not_when_one_skill_leads(home: Path, close_skills: Path) -> None:
    """Later model calls of the turn go on with the first call's decision; a request with a clear
    best skill activates it without asking; ``ask_model: off`` only offers."""
    config = make_config(home, skills={"path": str(close_skills), "auto_select": "activate", "ask_model": "on"})
    model = ScriptedChatModel(responses=[pick("none"), call("ls", path="/mnt/user-data"), "Done."])
    clear = ScriptedChatModel(responses=["Done."])
    async with HerdsmanClient(config, model=model) as client:
        await client.run("Make a chart of the sales figures in sales.csv", thread_id="t-once")
    async with HerdsmanClient(config, model=clear) as client:
        await client.run("Write a report of the sales figures with a chart", thread_id="t-clear")
    assert [c.kwargs.get("tool_choice") for c in model.calls] == ["choose_skill", None, None]
    assert len(clear.calls) == 1 and clear.calls[0].kwargs.get("tool_choice") is None
    assert "REPORT-BODY" in clear.calls[0].messages[0].text  # clear: activated without a pick
    off = ScriptedChatModel(responses=["Done."])
    config = make_config(home, skills={"path": str(close_skills), "auto_select": "activate", "ask_model": "off"})
    async with HerdsmanClient(config, model=off) as client:
        await client.run("Make a chart of the sales figures in sales.csv", thread_id="t-off")
    assert len(off.calls) == 1 and "<skill_candidates>" in off.calls[0].messages[0].text
