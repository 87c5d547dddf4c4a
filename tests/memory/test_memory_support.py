"""Memory keeps what the user said, not what was guessed: each fact needs the user's words.

``data/quoted_facts.yaml`` holds conversations (English and Chinese) and the facts a loose memory
model proposes from them, each with the quote it gives: stated facts, and guesses of an employer,
a city, an age or a nationality, quotes of the assistant, quotes nobody said, no quote. Every
conversation goes through the real updater (queue, the memory model's structured reply, the
support check, the filters, the store, the audit trail); the scripted memory model answers with
the forced ``update_memory`` call, as the embedded model does under its grammar.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from langgraph.store.memory import InMemoryStore

from herdsman.config.schema import MemoryConfig
from herdsman.memory.audit import records
from herdsman.memory.extraction import REPLY_TOOL_NAME, Reply
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.store import MemoryStore, user_label
from herdsman.memory.support import quoted, unsupported
from herdsman.models.scripted import ScriptedChatModel

DATA = Path(__file__).parent / "data" / "quoted_facts.yaml"
CONVERSATIONS: list[dict[str, Any]] = yaml.safe_load(DATA.read_text(encoding="utf-8"))


def extraction_model(conversation: dict[str, Any]) -> ScriptedChatModel:
    """The scripted memory model: every proposed fact, as the arguments of the forced call."""
    facts = [
        {k: f[k] for k in ("content", "category", "quote")} | {"confidence": 1.0} for f in conversation["proposed"]
    ]
    return ScriptedChatModel(
        responses=[{"tool_calls": [{"name": REPLY_TOOL_NAME, "args": {"summary": "", "facts": facts}}]}]
    )


def test_the_set_covers_both_languages_and_every_kind_of_guess() -> None:
    assert len(CONVERSATIONS) >= 12 and len({c["id"] for c in CONVERSATIONS}) == len(CONVERSATIONS)
    assert {c["lang"] for c in CONVERSATIONS} == {"en", "zh"}
    assert sum(c["lang"] == "zh" for c in CONVERSATIONS) >= 5
    kinds = {f["kind"] for c in CONVERSATIONS for f in c["proposed"] if not f["kept"]}
    assert {
        "employer guess",
        "location guess",
        "age guess",
        "assistant inference",
        "invented quote",
        "no quote",
    } <= kinds
    assert all(
        any(f["kept"] for f in c["proposed"]) and any(not f["kept"] for f in c["proposed"]) for c in CONVERSATIONS
    )
    gcp = next(c for c in CONVERSATIONS if c["id"] == "gcp-not-google")
    assert {"content": "Ana works at Google", "kept": False}.items() <= gcp["proposed"][0].items()


def test_no_unsupported_fact_is_kept_and_every_supported_one_is(tmp_path: Path) -> None:
    from herdsman.memory.updater import MemoryUpdater

    store = MemoryStore(InMemoryStore())
    queue = UpdateQueue(tmp_path / "queue.sqlite")
    wrong: list[str] = []
    try:
        for conv in CONVERSATIONS:
            user = conv["user"]
            queue.enqueue(f"t-{conv['id']}", user, conv["turns"])
            model = extraction_model(conv)
            assert MemoryUpdater(store, queue, model, MemoryConfig(enabled=True, debounce_seconds=0)).run_pending() == 1
            assert model.calls[0].tools == [REPLY_TOOL_NAME] and model.calls[0].kwargs["tool_choice"] == REPLY_TOOL_NAME
            kept = {f.content for f in store.facts(user)}
            wrong += [
                f"{conv['id']}: {f['content']!r} ({f['kind']}) kept={f['content'] in kept}"
                for f in conv["proposed"]
                if (f["content"] in kept) != f["kept"]
            ]
    finally:
        queue.close()
    assert not wrong, "\n".join(wrong)


def test_the_audit_shows_each_kept_facts_quote_and_each_refusal_with_its_reason(tmp_path: Path) -> None:
    from herdsman.memory.updater import MemoryUpdater

    conv = next(c for c in CONVERSATIONS if c["id"] == "gcp-not-google")
    store = MemoryStore(InMemoryStore())
    queue = UpdateQueue(tmp_path / "queue.sqlite")
    try:
        queue.enqueue("t-1", "ana", conv["turns"])
        MemoryUpdater(
            store, queue, extraction_model(conv), MemoryConfig(enabled=True, debounce_seconds=0)
        ).run_pending()
    finally:
        queue.close()
    trail = records(store.store, user_label("ana"))
    refused = [r for r in trail if r["action"] == "refuse"]
    assert [(r["content"], r["quote"], r["reason"], r["thread_id"]) for r in refused] == [
        ("Ana works at Google", "my project Atlas deploys to GCP", "not in the user's words: google", "t-1")
    ]
    kept = {
        store.get("ana", r["id"]).content: r["quote"] for r in trail if r["action"] == "put" and r["kind"] == "fact"
    }
    assert kept == {
        "Ana's project Atlas deploys to GCP": "My project Atlas deploys to GCP",
        "The user's name is Ana": "I'm Ana",
    }

    fid = next(f.id for f in store.facts("ana") if f.content == "The user's name is Ana")
    store.delete("ana", fid)  # deleting a fact takes its words out of the trail
    about = [r for r in records(store.store, user_label("ana")) if r["id"] == fid]
    assert [r["action"] for r in about] == ["put", "delete"]  # the trail still says what happened
    assert not any("quote" in r or "content" in r for r in about)  # but no longer in whose words


@pytest.mark.parametrize(
    ("quote", "said"),
    [
        ("i work at  ACME corp", ["I work at Acme Corp."]),
        ("我住在上海", ["你好！我住在上海浦东。"]),
        ("ｗｅ ｕｓｅ Ｐｙｔｈｏｎ", ["We use Python."]),  # full-width letters: NFKC
        ("I'm Ana … I work at Acme", ["I'm Ana.", "Later: I work at Acme."]),
    ],
)
def test_a_quote_is_found_whatever_its_case_width_spacing_and_punctuation(quote: str, said: list[str]) -> None:
    assert quoted(quote, said)


@pytest.mark.parametrize(
    ("quote", "said"),
    [
        ("I work at Acme", ["I worked at Acme."]),  # another word
        ("我住在北京", ["我住在上海"]),
        ("I work at … Acme", ["I work at Initech, then I moved."]),  # a fragment nobody said
    ],
)
def test_a_quote_the_user_did_not_say_is_not_found(quote: str, said: list[str]) -> None:
    assert not quoted(quote, said)


def test_the_reply_schema_requires_a_quote_for_each_fact() -> None:
    schema = Reply.model_json_schema()
    fact = schema["$defs"]["ReplyFact"]
    assert fact["required"] == ["quote", "content"]  # the user's words first, then the fact drawn from them
    assert set(schema["required"]) == {"summary", "facts"}


def test_a_fact_named_after_the_user_needs_their_name_said_or_known() -> None:
    said = ["I use Neovim as my editor."]
    assert (
        unsupported("Ann uses Neovim as her editor", "I use Neovim as my editor", said)
        == "not in the user's words: ann"
    )
    assert unsupported("Ann uses Neovim as her editor", "I use Neovim as my editor", said, known=["ann"]) is None
    assert (
        unsupported(
            "Ann moved Atlas to GCP in March 2026",
            "we moved Atlas to GCP on 2026-03-01",
            ["we moved Atlas to GCP on 2026-03-01"],
            known=["Ann leads Atlas"],
        )
        is None
    )
