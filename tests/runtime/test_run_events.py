"""What the run manager reads from a run's stream: how sub-agents ended, counted once each."""

from __future__ import annotations

from herdsman.runtime.runs.run_events import subagent_outcome


def test_a_sub_agent_retried_after_a_failure_is_counted_once_as_completed() -> None:
    events = [
        {"type": "task_started", "task_id": "a", "attempt": 1},
        {"type": "task_failed", "task_id": "a", "attempt": 1, "error": "boom", "will_retry": True},
        {"type": "task_started", "task_id": "a", "attempt": 2},
        {"type": "task_completed", "task_id": "a", "status": "completed"},
        {"type": "task_started", "task_id": "b", "attempt": 1},
        {"type": "task_failed", "task_id": "b", "status": "failed", "error": "boom"},
        "not a task event",
    ]
    assert [o for e in events if (o := subagent_outcome(e))] == ["completed", "failed"]
