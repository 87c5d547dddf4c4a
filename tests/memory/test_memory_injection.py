"""What the model is told: most relevant facts first, never past the token budget."""

from __future__ import annotations

from langgraph.store.memory import InMemoryStore

from herdsman.memory.audit import Origin
from herdsman.memory.facts import Fact
from herdsman.memory.graph import GraphStore
from herdsman.memory.graph_schema import ExtractedRelation
from herdsman.memory.injection import estimate_tokens, rank, render_memory
from herdsman.memory.recall import GraphView


def facts(n: int) -> list[Fact]:
    topics = ["postgres database tuning", "react frontend styling", "kubernetes cluster upgrades", "tea and biscuits"]
    return [
        Fact.new(f"Ann cares about {topics[i % 4]} (note {i})", "preference", 0.6 + (i % 3) * 0.1) for i in range(n)
    ]


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


def graph_of(*relations: dict) -> GraphView:
    """A user's graph holding ``relations`` (ExtractedRelation fields)."""
    graph = GraphStore(InMemoryStore())
    for relation in relations:
        graph.put_relation("ann", ExtractedRelation(**relation), Origin())
    return GraphView(graph.entities("ann"), graph.relations("ann"))


GO = {"subject": "Atlas", "predicate": "written_in", "object": "Go"}


def test_a_fact_that_restates_an_injected_relation_is_left_out() -> None:
    view = graph_of(GO)
    same = Fact.new("Atlas is written in Go", "project")
    section = render_memory([same], "", "what is Atlas written in?", 1000, graph=view)
    assert f"- Atlas: [r:{view.relations[0].id}] written in Go" in section and same.id not in section
    # the same when the fact came first (unrelated background, the relation after it): said once
    assert render_memory([same], "", "hello", 1000, graph=view).count("written in Go") == 1


def test_a_fact_that_says_more_than_a_relation_replaces_it() -> None:
    view = graph_of(
        GO,
        {"subject": "Nova", "predicate": "uses", "object": "pnpm"},
        {"subject": "Nova", "predicate": "deploys_to", "object": "Cloudflare Pages"},
    )
    more = Fact.new("Atlas is written in Go and Rust", "project")
    section = render_memory([more], "", "what is Atlas written in?", 1000, graph=view)
    assert f"[f:{more.id}]" in section and "[r:" not in section  # one line says it, the fuller one
    chose = Fact.new(
        "The team chose pnpm over npm for Nova", "project"
    )  # both ends of "Nova uses pnpm", in other words
    section = render_memory([chose], "", "How do we build and ship Nova?", 1000, graph=view)
    assert f"[f:{chose.id}]" in section and "- Nova: [r:" in section
    assert "uses pnpm" not in section and "deploys to Cloudflare Pages" in section


def test_dates_count_only_when_the_request_is_about_time() -> None:
    view = graph_of({**GO, "predicate": "deploys_to", "object": "GCP", "valid_from": "2026-03-01"})
    dated = Fact.new("Atlas deploys to GCP since March 2026", "project")
    now = render_memory([dated], "", "Where does Atlas deploy?", 1000, graph=view)
    assert "deploys to GCP" in now and "since" not in now and dated.id not in now
    asked = render_memory([dated], "", "Since when does Atlas deploy to GCP?", 1000, graph=view)
    assert "deploys to GCP (since 2026-03-01)" in asked and dated.id not in asked  # the graph knows March 2026
    other = Fact.new("Atlas deploys to GCP since June 2026", "project")  # a date the graph does not hold
    assert other.id in render_memory([other], "", "Since when does Atlas deploy to GCP?", 1000, graph=view)


def test_a_fact_the_graph_knows_was_replaced_is_not_presented_as_current() -> None:
    view = graph_of(
        {"subject": "Atlas", "predicate": "deploys_to", "object": "AWS", "valid_from": "2026-01-10"},
        {"subject": "Atlas", "predicate": "deploys_to", "object": "GCP", "valid_from": "2026-03-01"},
    )
    stale = Fact.new("Atlas deploys to AWS", "project")  # the memory model did not forget it
    backups = Fact.new("Atlas keeps its backups on AWS S3", "project")  # AWS, but not where it deploys
    moved = Fact.new("Atlas deploys to GCP since it left AWS", "project")  # names the current value too
    now = render_memory([stale, backups, moved], "", "Where does Atlas deploy?", 1000, graph=view)
    assert stale.id not in now and backups.id in now and moved.id in now
    before = render_memory([stale], "", "Where did Atlas deploy before?", 1000, graph=view)
    assert "was AWS until" in before


def test_a_near_identical_fact_is_injected_once() -> None:
    short = Fact.new("Ann likes tea", "preference", 0.9)
    full = Fact.new("Ann likes green tea in the morning", "preference", 0.5)
    section = render_memory([short, full], "", "what tea does Ann like?", 1000)
    assert full.id in section and short.id not in section


def test_facts_that_differ_in_a_short_word_are_not_restatements() -> None:
    go, c = Fact.new("Atlas is written in Go", "project"), Fact.new("Atlas is written in C", "project")
    section = render_memory([go, c], "", "what is Atlas written in?", 1000)
    assert go.id in section and c.id in section


def test_memory_unrelated_to_the_request_comes_only_when_nothing_is_related() -> None:
    from herdsman.memory.injection import BACKGROUND_SHARE, FOOTER, HEADER

    unrelated = [Fact.new(f"Ann collects stamp series number {i} from Peru", "preference") for i in range(200)]
    related = Fact.new("Ann tunes postgres autovacuum herself", "knowledge")
    section = render_memory([*unrelated, related], "", "how do I tune postgres?", 1000)
    assert related.id in section and "stamp" not in section  # about something: not filled with the rest
    idle = render_memory([*unrelated, related], "", "hello there", 1000)
    stamps = [line for line in idle.replace(HEADER, "").replace(FOOTER, "").splitlines() if "stamp" in line]
    assert stamps and sum(estimate_tokens(line) + 1 for line in stamps) <= 1000 * BACKGROUND_SHARE
    assert estimate_tokens(idle) < 1000 * BACKGROUND_SHARE + 100  # a little of what is most recent
