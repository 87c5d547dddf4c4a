"""Memory keeps what the user said, not what was guessed: each fact needs the user's words."""

from __future__ import annotations

import pytest

from herdsman.memory.extraction import Reply
from herdsman.memory.support import quoted, unsupported


@pytest.mark.parametrize(("quote", "said"), [
    ("i work at  ACME corp", ["I work at Acme Corp."]),
    ("我住在上海", ["你好！我住在上海浦东。"]),
    ("ｗｅ ｕｓｅ Ｐｙｔｈｏｎ", ["We use Python."]),  # full-width letters: NFKC
    ("I'm Ana … I work at Acme", ["I'm Ana.", "Later: I work at Acme."]),
])
def test_a_quote_is_found_whatever_its_case_width_spacing_and_punctuation(quote: str, said: list[str]) -> None:
    assert quoted(quote, said)


@pytest.mark.parametrize(("quote", "said"), [
    ("I work at Acme", ["I worked at Acme."]),  # another word
    ("我住在北京", ["我住在上海"]),
    ("I work at … Acme", ["I work at Initech, then I moved."]),  # a fragment nobody said
])
def test_a_quote_the_user_did_not_say_is_not_found(quote: str, said: list[str]) -> None:
    assert not quoted(quote, said)


def test_the_reply_schema_requires_a_quote_for_each_fact() -> None:
    schema = Reply.model_json_schema()
    fact = schema["$defs"]["ReplyFact"]
    assert set(fact["required"]) == {"content", "quote"}


def test_a_fact_named_after_the_user_needs_their_name_said_or_known() -> None:
    said = ["I use Neovim as my editor."]
    assert unsupported("Ann uses Neovim as her editor", "I use Neovim as my editor", said) == "not in the user's words: ann"
    assert unsupported("Ann uses Neovim as her editor", "I use Neovim as my editor", said, known=["ann"]) is None
    assert unsupported("Ann moved Atlas to GCP in March 2026", "we moved Atlas to GCP on 2026-03-01",
                       ["we moved Atlas to GCP on 2026-03-01"], known=["Ann leads Atlas"]) is None
