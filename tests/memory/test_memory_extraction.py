"""The memory model's reply: JSON read safely, low-value and duplicate facts filtered out."""

from __future__ import annotations

import pytest

from herdsman.memory.extraction import MemoryModelError, build_prompt, filter_facts, parse_reply
from herdsman.memory.facts import Fact


def test_reply_in_a_code_fence_is_read() -> None:
    reply = """Sure!
```json
{"summary": "Ann builds a billing service.",
 "facts": [{"content": "Ann prefers Postgres", "category": "preference", "confidence": 0.9},
           "Ann's team deploys on Fridays"],
 "forget": ["abc"]}
```"""
    update = parse_reply(reply, "t1")
    assert update.summary == "Ann builds a billing service."
    assert [f.content for f in update.facts] == ["Ann prefers Postgres", "Ann's team deploys on Fridays"]
    assert update.facts[0].source_thread == "t1" and update.facts[1].category == "other"
    assert update.forget == ["abc"]


@pytest.mark.parametrize("reply", ["I could not find anything.", "{oops}", "[1, 2]", '{"facts": "x"}'])
def test_invalid_replies_raise(reply: str) -> None:
    with pytest.raises(MemoryModelError):
        parse_reply(reply)


def test_json_a_small_model_broke_is_mended() -> None:
    """A missing comma (the embedded model's usual slip) no longer loses the turn's update."""
    update = parse_reply('{"summary": "" "facts": [{"content": "Ann prefers Postgres", "category": "preference"}]}')
    assert [f.content for f in update.facts] == ["Ann prefers Postgres"]


def test_filter_drops_unsure_vague_and_duplicate_facts() -> None:
    existing = [Fact.new("Ann prefers dark mode in every editor", "preference", 0.9)]
    candidates = [
        Fact.new("Ann maybe likes tea", "preference", 0.3),  # unsure
        Fact.new("ok", "other", 0.9),  # too short
        Fact.new("Ann uses Neovim for Python work", "preference", 0.8),
        Fact.new("Ann uses Neovim for Python work.", "preference", 0.8),  # duplicate of the one above
        Fact.new("Ann prefers dark mode in every editor!", "preference", 0.95),  # refreshes the existing one
    ]
    kept = filter_facts(candidates, existing, min_confidence=0.5)
    assert [f.content for f in kept] == ["Ann uses Neovim for Python work", "Ann prefers dark mode in every editor!"]
    assert kept[1].id == existing[0].id


def test_prompt_lists_facts_with_ids_and_the_conversation() -> None:
    fact = Fact.new("Ann lives in Lyon", "profile")
    prompt = build_prompt("", [fact], [{"role": "user", "content": "I moved to Paris"}])
    assert f"{fact.id}: [profile] Ann lives in Lyon" in prompt
    assert "user: I moved to Paris" in prompt and "JSON only" in prompt


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("Bruno lives in Porto", "And I moved too: I live in Porto now."),
        ("Ann works at Globex", "I work at Globex since February."),
        ("Ann prefers Polars", "I have a preference for Polars."),
    ],
)
def test_a_fact_in_other_forms_of_the_users_words_is_grounded(fact: str, said: str) -> None:
    from herdsman.memory.grounding import STATED, evidence_cap

    assert evidence_cap(fact, [{"role": "user", "content": said}]) == STATED


def test_stems_drop_a_final_s_but_not_a_double_one() -> None:
    from herdsman.memory.facts import stem

    assert stem("lives") == stem("live") == "live" and stem("works") == stem("work")
    assert stem("class") == "class" and stem("gas") == "gas"
