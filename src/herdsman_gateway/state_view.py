"""LangGraph ``StateSnapshot`` objects as the JSON of the LangGraph API's ``ThreadState``."""

from __future__ import annotations

from typing import Any

from herdsman.runtime.serde import to_jsonable


def checkpoint_json(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}`` of a run config, or None."""
    if not config:
        return None
    conf = config.get("configurable") or {}
    if not conf.get("checkpoint_id"):
        return None
    return {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
        "checkpoint_map": conf.get("checkpoint_map") or {},
    }


def interrupts_json(interrupts: Any) -> list[dict[str, Any]]:
    """Interrupts as ``[{value, id}]``."""
    return [{"value": to_jsonable(i.value), "id": i.id} for i in interrupts or ()]


def task_json(task: Any) -> dict[str, Any]:
    """A pending task of a snapshot."""
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "error": str(task.error) if task.error else None,
        "interrupts": interrupts_json(task.interrupts),
        "checkpoint": checkpoint_json(state) if isinstance(state, dict) else None,
        "state": snapshot_json(state) if state is not None and not isinstance(state, dict) else None,
        "result": to_jsonable(task.result) if getattr(task, "result", None) is not None else None,
    }


def snapshot_json(snapshot: Any) -> dict[str, Any]:
    """A ``StateSnapshot`` as ``ThreadState`` JSON."""
    checkpoint = checkpoint_json(snapshot.config)
    if checkpoint is None:
        conf = (snapshot.config or {}).get("configurable") or {}
        checkpoint = {"thread_id": conf.get("thread_id"), "checkpoint_ns": "", "checkpoint_id": None, "checkpoint_map": {}}
    return {
        "values": to_jsonable(snapshot.values or {}),
        "next": list(snapshot.next or ()),
        "tasks": [task_json(t) for t in snapshot.tasks or ()],
        "checkpoint": checkpoint,
        "metadata": to_jsonable(snapshot.metadata) if snapshot.metadata is not None else None,
        "created_at": snapshot.created_at,
        "parent_checkpoint": checkpoint_json(snapshot.parent_config),
        "interrupts": interrupts_json(snapshot.interrupts),
    }
