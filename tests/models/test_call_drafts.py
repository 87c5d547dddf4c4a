"""Drafts of a tool call being written: what one holds, and how often they are sent."""

from __future__ import annotations

from herdsman.models.call_drafts import MAX_TEXT, CallDrafts, draft_event


def test_a_draft_is_the_open_call_without_its_tags():
    held = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -l'
    assert draft_event(held) == {
        "type": "tool_call_draft",
        "index": 0,
        "name": "bash",
        "text": '{"name": "bash", "arguments": {"command": "ls -l',
        "chars": 48,
    }


def test_the_second_call_of_a_reply_has_index_one_and_a_closed_call_no_draft():
    first = '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>'
    assert draft_event(first) is None
    second = draft_event(first + '\n<tool_call>\n{"name": "read_file", "arg')
    assert second["index"] == 1 and second["name"] == "read_file" and second["text"].startswith('{"name": "read_file"')


def test_no_object_started_is_no_draft_and_a_name_not_yet_written_is_none():
    assert draft_event("<tool_call>\n") is None and draft_event("<tool") is None
    assert draft_event('<tool_call>\n{"na')["name"] is None
    assert draft_event('{"name": "caf\\u00e9", "arguments": {')["name"] == "café"  # bare JSON calls too
    assert draft_event('{"name": "ba\\u12", "arguments": {')["name"] == "ba\\u12"  # a broken escape: as written


def test_a_long_call_sends_its_end():
    event = draft_event('{"name": "write_file", "arguments": {"content": "' + "x" * 5000 + "y")
    assert len(event["text"]) == MAX_TEXT and event["text"].endswith("xy") and event["chars"] > 5000


def test_drafts_are_sent_at_most_every_interval_and_only_when_changed():
    sent, now = [], [0]
    drafts = CallDrafts(writer=sent.append, interval=5, clock=lambda: now[0])
    held = "<tool_call>\n{"
    for _step in range(20):  # a piece each tick, a draft every 5 ticks at most
        held += "a"
        drafts.see(held)
        now[0] += 1
    assert [e["chars"] for e in sent] == [2, 7, 12, 17]
    now[0] += 5
    drafts.see(held)  # due, and written since: sent
    now[0] += 5
    drafts.see(held)  # nothing new was written: nothing sent
    assert [e["chars"] for e in sent] == [2, 7, 12, 17, 21]


def test_a_writer_that_fails_stops_the_drafts_not_the_generation():
    calls = []

    def broken(event):
        calls.append(event)
        raise RuntimeError("closed")

    drafts = CallDrafts(writer=broken, interval=0)
    drafts.see("<tool_call>\n{")
    drafts.see("<tool_call>\n{a")
    assert len(calls) == 1 and not drafts.active


def test_outside_a_run_there_is_no_writer():
    drafts = CallDrafts()
    assert not drafts.active and not drafts.due()
    drafts.see("<tool_call>\n{")  # no error
