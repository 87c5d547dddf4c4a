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


def test_a_fact_that_restates_an_injected_relation_is_left_out() -> None:
    from herdsman.memory.audit import Origin
    from herdsman.memory.graph import GraphStore
    from herdsman.memory.graph_schema import ExtractedRelation
    from herdsman.memory.recall import GraphView
    from langgraph.store.memory import InMemoryStore

    graph = GraphStore(InMemoryStore())
    graph.put_relation("ann", ExtractedRelation(subject="Atlas", predicate="written_in", object="Go"), Origin())
    view = GraphView(graph.entities("ann"), graph.relations("ann"))
    same = Fact.new("Atlas is written in Go", "project")
    more = Fact.new("Atlas is written in Go and Rust", "project")
    section = render_memory([same, more], "", "what is Atlas written in?", 1000, graph=view)
    assert "Atlas written in Go" in section and "[f:" + more.id in section
    assert same.id not in section


def test_memory_unrelated_to_the_request_takes_only_a_share_of_the_budget() -> None:
    from herdsman.memory.injection import BACKGROUND_SHARE, FOOTER, HEADER

    unrelated = [Fact.new(f"Ann collects stamp series number {i} from Peru", "preference") for i in range(200)]
    related = Fact.new("Ann tunes postgres autovacuum herself", "knowledge")
    section = render_memory([*unrelated, related], "", "how do I tune postgres?", 1000)
    body = section.replace(HEADER, "").replace(FOOTER, "")
    assert related.id in section
    stamps = [line for line in body.splitlines() if "stamp" in line]
    assert stamps and sum(estimate_tokens(line) + 1 for line in stamps) <= 1000 * BACKGROUND_SHARE
    assert estimate_tokens(section) < 1000 * BACKGROUND_SHARE + 100  # not filled to the budget with stamps
