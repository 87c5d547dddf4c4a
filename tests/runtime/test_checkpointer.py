"""Checkpointers from config: a thread resumes across client instances on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.client import HerdsmanClient
from herdsman.config import parse_config
from herdsman.models.scripted import ScriptedChatModel
from herdsman.runtime.storage.checkpointer import CheckpointerError, open_checkpointer, sqlite_path
from tests.support import make_config


async def converse_twice(config) -> list[str]:
    """Two turns on one thread, each with a fresh client (as after a restart)."""
    async with HerdsmanClient(config, model=ScriptedChatModel(responses=["first answer"])) as client:
        await client.run("remember the word kiwi", thread_id="persist")
    second_model = ScriptedChatModel(responses=["second answer"])
    async with HerdsmanClient(config, model=second_model) as client:
        await client.run("what was the word?", thread_id="persist")
        threads = await client.threads()
    assert [t.thread_id for t in threads] == ["persist"]
    assert threads[0].title == "remember the word kiwi"
    return [m.text for m in second_model.calls[0].messages]


async def test_sqlite_default_resumes(home: Path) -> None:
    config = make_config(home, checkpointer={"type": "sqlite"})
    seen = await converse_twice(config)
    assert seen[1:] == ["remember the word kiwi", "first answer", "what was the word?"]
    assert sqlite_path(config) == home / "checkpoints.sqlite" and sqlite_path(config).exists()


async def test_postgres_resumes(home: Path, postgres_url: str) -> None:
    config = make_config(home, checkpointer={"type": "postgres", "url": postgres_url})
    seen = await converse_twice(config)
    assert seen[1:] == ["remember the word kiwi", "first answer", "what was the word?"]


async def test_postgres_unreachable_is_clear(home: Path) -> None:
    from tests.services import free_port

    config = make_config(home, checkpointer={"type": "postgres", "url": f"postgresql://x@127.0.0.1:{free_port()}/db"})
    with pytest.raises(CheckpointerError, match="checkpointer.url: cannot connect to PostgreSQL"):
        async with open_checkpointer(config):
            pass


async def test_sqlite_unwritable_folder_is_clear(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    config = parse_config(f"checkpointer: {{type: sqlite, path: {blocker}/sub/cp.sqlite}}\n", env={})
    with pytest.raises(CheckpointerError, match="checkpointer.path: cannot create"):
        async with open_checkpointer(config):
            pass


async def test_sqlite_files_commit_without_waiting_for_the_disk_and_resume_after_reopening(home: Path) -> None:
    """Checkpoints and the gateway's records: WAL, synchronous NORMAL (checkpointer.py's docstring
    says why); a write is there for the next process that opens the file."""
    from langgraph.checkpoint.base import empty_checkpoint

    from herdsman.runtime.storage.record_store import open_record_store

    config = make_config(home, checkpointer={"type": "sqlite"})
    thread = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    async with open_checkpointer(config) as saver, open_record_store(config) as store:
        for owner in (saver, store):  # each connection is used on its own thread (sqlite_threaded.py)

            def pragma(name: str, conn=owner.conn) -> tuple:
                return conn.execute(f"PRAGMA {name}").fetchone()

            assert await owner.thread.call(pragma, "journal_mode") == ("wal",)
            assert await owner.thread.call(pragma, "synchronous") == (1,)  # NORMAL
        saved = await saver.aput(thread, empty_checkpoint(), {"step": 0}, {})
        await store.aput(("records",), "r", {"status": "running"})
    async with open_checkpointer(config) as saver, open_record_store(config) as store:
        assert (await saver.aget_tuple(thread)).config == saved
        assert (await store.aget(("records",), "r")).value == {"status": "running"}
