"""What the model is told: most relevant facts first, never past the token budget."""

from __future__ import annotations

from herdsman.memory.facts import Fact
from herdsman.memory.injection import estimate_tokens, rank, render_memory


def facts(n: int) -> list[Fact]:
    topics = ["postgres database tuning", "react frontend styling", "kubernetes cluster upgrades", "tea and biscuits"]
    return [Fact.new(f"Ann cares about {topics[i % 4]} (note {i})", "preference", 0.6 + (i % 3) * 0.1) for i in range(n)]


def test_injection_keeps_to_its_budget() -> None:
    many = facts(300)
    for budget in (40, 100, 250, 1000):
        section = render_memory(many, "Ann runs the platform team.", "how do I tune postgres?", budget)
        assert estimate_tokens(section) <= budget, budget
    assert render_memory(many, "", "anything", 0) == ""


def test_relevant_facts_come_first() -> None:
    many = facts(40)
    ranked = rank(many, "Which kubernetes upgrades are planned for the cluster?")
    assert all("kubernetes" in f.content for f in ranked[:10])
    section = render_memory(many, "", "kubernetes cluster upgrade", 120)
    assert "kubernetes" in section and "tea and biscuits" not in section


def test_empty_memory_renders_nothing() -> None:
    assert render_memory([], "", "hello", 1000) == ""
