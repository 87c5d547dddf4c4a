"""LangGraph ``StateSnapshot`` objects as the JSON of the LangGraph API's ``ThreadState``, and
reading them so that one bad thread never fails a listing.

A thread's checkpoint can hold what LangGraph cannot read back: input written before run input
was checked (``{"messages": 5}`` fails ``add_messages`` each time the snapshot is built), or
text that does not encode (lone surrogates). :func:`read_state` and :func:`read_history` then
show the checkpoint as it was saved (its channel values, without the writes that fail) with an
``error`` that says what failed and what to do, and :func:`safe_json` replaces what cannot be
shown instead of failing. Written here by hand because LangGraph has no lenient reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from herdsman.logs import get_logger
from herdsman.runtime.runs.run_events import checkpoint_of
from herdsman.runtime.streaming.serde import to_jsonable

log = get_logger(__name__)

MAX_DEPTH = 200  # deeper values are cut (orjson refuses more than 255 levels)
CUT = "[not shown: nested too deeply]"


def _scrub(value: Any, depth: int = 0) -> Any:
    """``value`` with text that cannot be encoded replaced ("?"), models as dicts, integers beyond
    64 bits as text, depth cut."""
    if depth > MAX_DEPTH:
        return CUT
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if not value.isascii() else value
    if isinstance(value, Mapping):
        return {str(_scrub(k, depth + 1)): _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_scrub(v, depth + 1) for v in value]
    if hasattr(value, "model_dump"):
        try:
            return _scrub(value.model_dump(), depth + 1)
        except Exception:  # noqa: BLE001 - shown as text instead
            return _scrub(str(value), depth + 1)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        return str(value)
    return value


def safe_json(value: Any) -> Any:
    """``value`` as plain JSON types; never raises (what cannot be shown is replaced)."""
    try:
        return to_jsonable(value)
    except Exception:  # noqa: BLE001 - lone surrogates, huge integers, deep nesting: scrubbed below
        try:
            return to_jsonable(_scrub(value))
        except Exception as exc:  # noqa: BLE001 - nothing showable is left
            return f"[not shown: {type(exc).__name__}]"


checkpoint_json = checkpoint_of  # ``{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}`` of a config


def interrupts_json(interrupts: Any) -> list[dict[str, Any]]:
    """Interrupts as ``[{value, id}]``."""
    return [{"value": safe_json(i.value), "id": i.id} for i in interrupts or ()]


def task_json(task: Any) -> dict[str, Any]:
    """A pending task of a snapshot."""
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "error": safe_json(str(task.error)) if task.error else None,
        "interrupts": interrupts_json(task.interrupts),
        "checkpoint": checkpoint_json(state) if isinstance(state, dict) else None,
        "state": snapshot_json(state) if state is not None and not isinstance(state, dict) else None,
        "result": safe_json(task.result) if getattr(task, "result", None) is not None else None,
    }


def _checkpoint_or_head(config: dict[str, Any] | None) -> dict[str, Any]:
    checkpoint = checkpoint_json(config)
    if checkpoint is None:
        conf = (config or {}).get("configurable") or {}
        checkpoint = {
            "thread_id": conf.get("thread_id"),
            "checkpoint_ns": "",
            "checkpoint_id": None,
            "checkpoint_map": {},
        }
    return checkpoint


def snapshot_json(snapshot: Any) -> dict[str, Any]:
    """A ``StateSnapshot`` as ``ThreadState`` JSON."""
    return {
        "values": safe_json(snapshot.values or {}),
        "next": list(snapshot.next or ()),
        "tasks": [task_json(t) for t in snapshot.tasks or ()],
        "checkpoint": _checkpoint_or_head(snapshot.config),
        "metadata": safe_json(snapshot.metadata) if snapshot.metadata is not None else None,
        "created_at": snapshot.created_at,
        "parent_checkpoint": checkpoint_json(snapshot.parent_config),
        "interrupts": interrupts_json(snapshot.interrupts),
    }


def unreadable(thread_id: str, exc: BaseException) -> str:
    """The ``error`` of a thread whose state LangGraph cannot build, and what to do."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return safe_json(
        f"The state of thread {thread_id} cannot be read ({type(exc).__name__}: {first}); shown as last saved. "
        "The next run with input starts past what cannot be read; or start it from the checkpoint "
        "before (its parent_checkpoint's checkpoint_id), or delete the thread."
    )


def raw_snapshot_json(saved: Any, error: str) -> dict[str, Any]:
    """A saved ``CheckpointTuple`` as ``ThreadState`` JSON (channel values as saved), with ``error``."""
    checkpoint = saved.checkpoint if saved is not None else {}
    values = {
        k: v for k, v in (checkpoint.get("channel_values") or {}).items() if not str(k).startswith(("__", "branch:"))
    }
    return {
        "values": safe_json(values),
        "next": [],
        "tasks": [],
        "checkpoint": _checkpoint_or_head(saved.config if saved is not None else None),
        "metadata": safe_json(saved.metadata) if saved is not None and saved.metadata is not None else None,
        "created_at": checkpoint.get("ts"),
        "parent_checkpoint": checkpoint_json(saved.parent_config) if saved is not None else None,
        "interrupts": [],
        "error": error,
    }


async def read_state(graph: Any, config: dict[str, Any], *, subgraphs: bool = False) -> tuple[Any, dict[str, Any]]:
    """The snapshot at ``config`` (None when LangGraph cannot build it) and its ``ThreadState``
    JSON (the saved checkpoint with an ``error`` then); never raises for a bad checkpoint."""
    try:
        snapshot = await graph.aget_state(config, subgraphs=subgraphs)
        return snapshot, snapshot_json(snapshot)
    except Exception as exc:  # noqa: BLE001 - see the module docstring
        thread_id = str((config.get("configurable") or {}).get("thread_id"))
        log.warning("thread_state_unreadable", thread_id=thread_id, error=type(exc).__name__)
        try:
            saved = await graph.checkpointer.aget_tuple(config)
        except Exception:  # noqa: BLE001 - not even the saved checkpoint loads: the error alone
            saved = None
        return None, raw_snapshot_json(saved, unreadable(thread_id, exc))


async def read_history(
    graph: Any, config: dict[str, Any], *, filter: dict[str, Any] | None, before: dict[str, Any] | None, limit: int
) -> list[dict[str, Any]]:
    """Past states, newest first; a checkpoint LangGraph cannot build is shown as saved, with
    its ``error``, and the others as usual."""
    try:
        return [
            snapshot_json(s) async for s in graph.aget_state_history(config, filter=filter, before=before, limit=limit)
        ]
    except Exception:  # noqa: BLE001 - one bad checkpoint: read them one by one below
        pass
    states = []
    async for saved in graph.checkpointer.alist(config, filter=filter, before=before, limit=limit):
        states.append((await read_state(graph, saved.config))[1])
    return states
