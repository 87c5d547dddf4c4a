"""Sub-agent transcripts: kept beside the thread as trace steps, read back for the trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from herdsman.runtime.tracing.transcripts import save_transcript, transcript_loader, transcript_path
from tests.support import make_config


def test_a_transcript_round_trips_as_trace_steps(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    messages = [HumanMessage("look around", id="h1"), AIMessage("nothing here", id="a1")]
    save_transcript(config, "thread-1", "call:1/x", messages)
    path = transcript_path(config, "thread-1", "call:1/x")
    assert path.parent == tmp_path / "threads" / "thread-1" / "subagents" and "/" not in path.name
    steps = transcript_loader(config, "thread-1")("call:1/x")
    assert [(s.kind, s.text) for s in steps] == [("input", "look around"), ("model", "nothing here")]
    save_transcript(config, "thread-1", "call:1/x", messages[:1])  # a retry replaces the earlier attempt
    assert len(transcript_loader(config, "thread-1")("call:1/x")) == 1


def test_the_home_is_resolved_like_the_sandboxes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    config = make_config(tmp_path).model_copy(update={"home": Path("~/.herdsman")})
    save_transcript(config, "thread-1", "t1", [HumanMessage("hi", id="h1")])
    assert (tmp_path / "user" / ".herdsman" / "threads" / "thread-1" / "subagents" / "t1.json").is_file()
    assert not (tmp_path / "~").exists()


def test_missing_broken_or_unsafe_transcripts_are_skipped(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    load = transcript_loader(config, "thread-1")
    assert load("never-ran") is None
    path = transcript_path(config, "thread-1", "broken")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load("broken") is None  # logged, and the trace goes on without it
    save_transcript(config, "../escape", "t1", [HumanMessage("x")])  # refused thread id: nothing written, no error
    assert not (tmp_path.parent / "escape").exists() and not list(tmp_path.glob("threads/*/subagents/t1.json"))
