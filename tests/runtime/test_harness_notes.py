"""The harness's notes to the model, folded to one line per turn for the CLI and the IM channels."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from herdsman.runtime.tracing.harness_notes import fold_line, fold_notes, is_note, note_rules


def _note(rules: list[str] | None = None) -> HumanMessage:
    kwargs = {"herdsman_findings": [{"rule": r, "message": "..."} for r in rules]} if rules is not None else {}
    return HumanMessage(
        content="[harness check] Not done yet:\n- a.md does not exist", name="harness", additional_kwargs=kwargs
    )


def test_a_note_is_told_from_the_users_message_as_an_object_and_as_json() -> None:
    assert is_note(_note()) and is_note(_note().model_dump())
    assert not is_note(HumanMessage(content="[harness check] typed by the user"))
    assert not is_note(AIMessage(content="x", name="harness"))


def test_findings_are_counted_by_rule_when_every_note_names_them_else_the_notes() -> None:
    assert note_rules(_note(["missing_file", "no_tool_used"])) == ["missing_file", "no_tool_used"]
    assert note_rules(_note()) is None
    assert (
        fold_line([["missing_file", "no_tool_used"], ["missing_file"]]) == "checked: 3 findings, sent back to the agent"
    )
    assert fold_line([["missing_file"], None]) == "checked: 2 notes, sent back to the agent"
    assert fold_line([None]) == "checked: 1 note, sent back to the agent"


def test_each_turns_notes_become_one_line_at_the_end_of_that_turn() -> None:
    first, answer1, answer2 = (
        HumanMessage(content="save a.md"),
        AIMessage(content="Here it is"),
        AIMessage(content="Saved"),
    )
    second, answer3 = HumanMessage(content="and b.md?"), AIMessage(content="No")
    folded = fold_notes(
        [first, answer1, _note(["missing_file"]), answer2, _note(["missing_file"]), answer2, second, answer3, _note()]
    )
    assert folded == [
        first,
        answer1,
        answer2,
        answer2,
        "checked: 2 findings, sent back to the agent",
        second,
        answer3,
        "checked: 1 note, sent back to the agent",
    ]
    assert fold_notes([first, answer1]) == [first, answer1]
