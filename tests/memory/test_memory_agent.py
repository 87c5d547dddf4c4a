"""Memory in the lead agent: learned after a turn, injected in the next thread, tool mode, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from herdsman.agents.lead import create_lead_agent, run_config
from herdsman.memory.audit import records
from herdsman.memory.facts import Fact
from herdsman.memory.service import MemoryService
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

LEARNED = json.dumps(
    {
        "summary": "Ann maintains a Rust CLI.",
        "facts": [
            {
                "content": "Ann writes her CLI tools in Rust",
                "category": "preference",
                "confidence": 0.9,
                "quote": "I write … CLI tools in Rust",
            }
        ],
    }
)


def memory_config(home: Path, **memory: Any):
    return make_config(home, memory={"enabled": True, "debounce_seconds": 0, **memory})


async def ask(agent: Any, config: Any, text: str, thread: str, **configurable: Any) -> str:
    state = await agent.ainvoke({"messages": [HumanMessage(text)]}, run_config(config, thread, **configurable))
    return state["messages"][-1].text


async def test_a_turn_is_learned_and_injected_in_a_new_thread(home: Path) -> None:
    config = memory_config(home)
    memo = ScriptedChatModel(responses=[LEARNED])
    service = MemoryService.open(config, memo)
    lead = ScriptedChatModel(responses=["Noted, Rust it is.", "Here is a Rust skeleton."])
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)

    await ask(agent, config, "I'm Ann. I write all my CLI tools in Rust.", "t-1", user_id="ann")
    await service.worker.drain()
    facts = service.store.facts("ann")
    assert [f.content for f in facts] == ["Ann writes her CLI tools in Rust"]
    assert facts[0].source_thread == "t-1"
    assert "I write all my CLI tools in Rust." in memo.calls[0].messages[0].text  # the memory model read the turn

    await ask(agent, config, "Start a new CLI tool for me", "t-2", user_id="ann")
    system = lead.calls[1].messages[0].text
    assert "<memory>" in system and "Ann writes her CLI tools in Rust" in system
    assert "Context: Ann maintains a Rust CLI." in system
    service.close()


async def test_only_what_the_user_said_is_kept_and_the_guesses_refused_are_audited(home: Path) -> None:
    """The small memory model calls every fact certain; a fact is kept only with the user's words
    that say it (at a stated fact's confidence); one quoting the assistant (an inference) or
    nothing (made up) is refused, and the audit says why."""
    config = memory_config(home)
    claims = [
        {
            "content": "Ann writes her CLI tools in Rust",
            "category": "preference",
            "confidence": 1.0,
            "quote": "I write all my CLI tools in Rust",
        },
        {
            "content": "Ann's tools rely on the clap crate",
            "category": "project",
            "confidence": 1.0,
            "quote": "I would use the clap crate",
        },
        {"content": "Ann lives in Berlin near the river", "category": "profile", "confidence": 1.0},
    ]
    again = {**claims[0], "quote": "My CLI tools are all Rust"}
    memo = ScriptedChatModel(
        responses=[json.dumps({"summary": "", "facts": claims}), json.dumps({"summary": "", "facts": [again]})]
    )
    service = MemoryService.open(config, memo)
    lead = ScriptedChatModel(responses=["Noted. I would use the clap crate for the argument parsing.", "Sure."])
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)

    await ask(agent, config, "I'm Ann. I write all my CLI tools in Rust.", "t-1", user_id="ann")
    await service.worker.drain()
    sure = {f.content: f.confidence for f in service.store.facts("ann")}
    assert sure == {"Ann writes her CLI tools in Rust": 0.9}
    trail = records(service.store.store, "ann")
    assert [(r["content"], r["reason"]) for r in trail if r["action"] == "refuse"] == [
        ("Ann's tools rely on the clap crate", "the quote is not in the user's messages"),
        ("Ann lives in Berlin near the river", "no quote of the user's words supports it"),
    ]
    assert [r.get("quote") for r in trail if r["action"] == "put" and r["kind"] == "fact"] == [
        "I write all my CLI tools in Rust"
    ]

    await ask(agent, config, "My CLI tools are all Rust, as I said.", "t-2", user_id="ann")
    await service.worker.drain()
    sure = {f.content: f.confidence for f in service.store.facts("ann")}
    assert sure["Ann writes her CLI tools in Rust"] == 0.95  # learned again in another thread
    service.close()


async def test_memory_is_per_user(home: Path) -> None:
    config = memory_config(home, mode="tool")
    service = MemoryService.open(config, store=InMemoryStore())
    service.store.put("ann", Fact.new("Ann likes Rust a lot", "preference"))
    lead = ScriptedChatModel(responses=["hi bob"])
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)
    await ask(agent, config, "hello", "t-bob", user_id="bob")
    assert "Rust" not in lead.calls[0].messages[0].text


async def test_invalid_json_from_the_memory_model_never_fails_the_turn(home: Path) -> None:
    config = memory_config(home)
    service = MemoryService.open(config, ScriptedChatModel(responses=["Sorry, I can't do JSON."]))
    agent = create_lead_agent(
        config, model=ScriptedChatModel(responses=["fine"]), checkpointer=InMemorySaver(), memory=service
    )
    assert await ask(agent, config, "I like green tea every morning", "t-json") == "fine"
    await service.worker.drain()
    assert service.store.facts("default") == []
    pending = service.queue.pending()
    assert pending[0]["attempts"] == 1 and "JSON" in pending[0]["last_error"]


class DownStore(InMemoryStore):
    """A store whose server is gone."""

    def batch(self, ops: Any) -> Any:
        raise ConnectionError("server closed the connection")

    async def abatch(self, ops: Any) -> Any:
        raise ConnectionError("server closed the connection")


async def test_store_down_or_empty_skips_memory_gracefully(home: Path) -> None:
    config = memory_config(home)
    service = MemoryService.open(config, ScriptedChatModel(responses=[LEARNED]), store=DownStore())
    lead = ScriptedChatModel(responses=["still here"])
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)
    assert await ask(agent, config, "I write CLI tools in Rust", "t-down") == "still here"
    assert "<memory>" not in lead.calls[0].messages[0].text
    await service.worker.drain()
    assert service.queue.pending()[0]["attempts"] == 1  # kept for a retry when the store is back


def test_unreachable_postgres_leaves_the_agent_without_memory(home: Path) -> None:
    config = make_config(home, memory={"enabled": True, "store": "postgres", "url": "postgresql://x@127.0.0.1:1/none"})
    agent = create_lead_agent(config, model=ScriptedChatModel(responses=["ok"]), checkpointer=InMemorySaver())
    assert agent is not None


async def test_memory_tool_mode(home: Path) -> None:
    config = memory_config(home, mode="tool")
    service = MemoryService.open(config, store=InMemoryStore())
    fact_id = Fact.new("Ann deploys on Fridays", "behavior").id
    lead = ScriptedChatModel(
        responses=[
            {
                "tool_calls": [
                    {
                        "name": "memory",
                        "args": {"action": "add", "content": "Ann deploys on Fridays", "category": "behavior"},
                    }
                ]
            },
            {"tool_calls": [{"name": "memory", "args": {"action": "search", "query": "deploy"}}]},
            {
                "tool_calls": [
                    {
                        "name": "memory",
                        "args": {"action": "update", "fact_id": fact_id, "content": "Ann deploys on Thursdays"},
                    }
                ]
            },
            {"tool_calls": [{"name": "memory", "args": {"action": "delete", "fact_id": "nope"}}]},
            "done",
        ]
    )
    agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), memory=service)
    await ask(agent, config, "remember my deploy day", "t-tool", user_id="ann")
    results = [m.text for m in lead.calls[-1].messages if m.type == "tool"]
    assert results[0].startswith(f"Remembered {fact_id}")
    assert f"{fact_id}: [behavior] Ann deploys on Fridays" in results[1]
    assert "Ann deploys on Thursdays" in results[2]
    assert "no fact 'nope'" in results[3]
    assert [f.content for f in service.store.facts("ann")] == ["Ann deploys on Thursdays"]
    assert "memory" in lead.calls[0].tools
    assert service.queue.pending() == []  # tool mode: no automatic updates


@pytest.mark.parametrize("mode", ["auto", "tool"])
def test_memory_off_adds_nothing(home: Path, mode: str) -> None:
    from herdsman.agents.stack import build_middleware

    config = make_config(home, memory={"enabled": False, "mode": mode})
    names = [type(m).__name__ for m in build_middleware(config, "p")]
    assert not any("Memory" in n for n in names)


async def test_updates_left_by_a_previous_process_are_written_on_the_next_run(home: Path) -> None:
    config = memory_config(home)
    earlier = MemoryService.open(config)  # a process that queued a turn and died before the model ran
    earlier.queue.enqueue(
        "t-old",
        "default",
        [{"role": "user", "content": "I'm Ann; I write CLI tools in Rust"}, {"role": "assistant", "content": "ok"}],
    )
    earlier.queue.close()

    service = MemoryService.open(config, ScriptedChatModel(responses=[LEARNED]))
    agent = create_lead_agent(
        config, model=ScriptedChatModel(responses=["hello"]), checkpointer=InMemorySaver(), memory=service
    )
    await ask(agent, config, "hi", "t-new")
    await service.worker.drain()
    assert [f.source_thread for f in service.store.facts("default")] == ["t-old"]
    service.close()


async def test_the_client_builds_the_lead_model_once_for_the_agent_and_its_memory(home: Path, monkeypatch) -> None:
    """Memory without its own model uses the lead's: the embedded client builds it once (a local
    model loads its weights when built)."""
    from herdsman.client import HerdsmanClient
    from herdsman.models import resolver as resolver_module

    built: list[str] = []
    real = resolver_module.create_chat_model

    def counting(config, name):
        built.append(name)
        return real(config, name)

    monkeypatch.setattr(resolver_module, "create_chat_model", counting)
    config = make_config(
        home,
        memory={"enabled": True},
        title={"enabled": False},
        subagents={"enabled": False},
        models=[{"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel", "responses": ["hi"]}],
    )
    async with HerdsmanClient(config) as client:
        assert client.agent is not None
    assert built.count("lead") == 1


async def test_memory_taken_back_mid_turn_leaves_the_next_model_call_and_learned_waits(home: Path) -> None:
    """Within one turn: a fact learned after the first model call is not added to the prompt (it
    stays the same for the model server's prompt cache), but a purge takes effect at the very next
    model call of the same turn."""
    from herdsman.memory.governance import purge_user

    config = memory_config(home)
    nothing_learned = json.dumps({"summary": "", "facts": []})
    service = MemoryService.open(config, ScriptedChatModel(responses=[nothing_learned], on_exhausted="repeat_last"))
    service.store.put("ann", Fact.new("Ann writes her CLI tools in Rust", "preference", 0.9, None))
    systems: list[str] = []

    def respond(messages: list) -> Any:
        systems.append(messages[0].text)
        if len(systems) == 1:
            service.store.put("ann", Fact.new("Ann likes green tea", "preference", 0.9, None))
        elif len(systems) == 2:
            purge_user(service.store, service.queue, "ann")
        if len(systems) < 3:
            return {"tool_calls": [{"name": "ls", "args": {"path": "/mnt/user-data/workspace"}}]}
        return "done"

    agent = create_lead_agent(
        config, model=ScriptedChatModel(respond=respond), checkpointer=InMemorySaver(), memory=service
    )
    await ask(agent, config, "Start a new CLI tool for me", "t-1", user_id="ann")
    assert "Ann writes her CLI tools in Rust" in systems[0] and systems[1] == systems[0]
    assert "green tea" not in systems[1]
    assert "<memory>" not in systems[2] and "Rust" not in systems[2]
    service.close()
