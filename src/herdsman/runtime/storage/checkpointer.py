"""Checkpointer from config: ``memory``, ``sqlite`` (the default, under home) or ``postgres``.

An async context manager, because the SQLite saver holds a connection and the Postgres one a pool of
them (``postgres_pool.py``), which must be closed. Unreachable or unwritable stores are errors that
name the YAML path and the fix.

SQLite runs in WAL mode (LangGraph's saver sets it) with ``synchronous = NORMAL``, as the run
queue and the file history do: every step of a run commits its checkpoint and its writes, and
with FULL each commit waited for an fsync of the log (about 2 ms of wall time and 0.2 ms of CPU
here, one after another on the saver's one connection, so 100 concurrent runs queued behind
each other's fsyncs). With NORMAL the file is never corrupted and nothing is lost when a process
dies; an OS crash or a power cut may undo the last steps' checkpoints, and the thread then
resumes from the one before (the file history's database is kept the same way).

The SQLite saver is LangGraph's, reached in one thread hand-off per call (``sqlite_threaded.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.storage.sqlite_threaded import open_sqlite_saver

POOL_SIZE = 4  # connections to PostgreSQL a process's checkpointer may hold (see postgres_pool.py)


class CheckpointerError(Exception):
    """The configured checkpointer cannot be opened."""


def postgres_missing() -> CheckpointerError:
    """The error for ``checkpointer.type: postgres`` without the postgres extra installed."""
    return CheckpointerError(
        "checkpointer.type is postgres but its packages are missing; pip install 'herdsman[postgres]'"
    )


def sqlite_path(config: HerdsmanConfig) -> Path:
    """The SQLite file: ``checkpointer.path``, else ``<home>/checkpoints.sqlite``."""
    home = config.resolve_home()
    path = config.checkpointer.path or Path("checkpoints.sqlite")
    path = path.expanduser()
    return path if path.is_absolute() else home / path


@asynccontextmanager
async def open_checkpointer(config: HerdsmanConfig) -> AsyncIterator[BaseCheckpointSaver]:
    """Open the configured checkpointer for the duration of the ``async with`` block."""
    kind = config.checkpointer.type
    if kind == "memory":
        yield InMemorySaver()
        return
    if kind == "sqlite":
        path = sqlite_path(config)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointerError(
                f"checkpointer.path: cannot create {path.parent} ({exc.strerror}); choose a writable folder"
            ) from None
        # WAL is what the saver's setup sets too; NORMAL: see the module docstring
        async with open_sqlite_saver(
            str(path), ("PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL")
        ) as sqlite_saver:
            yield sqlite_saver
        return
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        raise postgres_missing() from None
    from herdsman.postgres_pool import langgraph_kwargs, open_async_pool
    from herdsman.postgres_setup import setup_lock

    try:
        pool = await open_async_pool(
            config.checkpointer.url or "", max_size=POOL_SIZE, kwargs=langgraph_kwargs(), name="checkpoints"
        )
    except Exception as exc:  # noqa: BLE001 - any connection failure gets the same advice
        raise CheckpointerError(
            f"checkpointer.url: cannot connect to PostgreSQL ({type(exc).__name__}: {exc}); "
            "check the URL and that the server is running"
        ) from None
    try:
        saver = AsyncPostgresSaver(pool)
        try:
            async with pool.connection() as conn, setup_lock(conn):
                await saver.setup()
        except Exception as exc:  # noqa: BLE001 - e.g. a user without the right to create tables
            raise CheckpointerError(
                f"checkpointer.url: cannot create the checkpoint tables ({type(exc).__name__}: {exc}); "
                "check that the database user may create tables"
            ) from None
        yield saver
    finally:
        await pool.close()
