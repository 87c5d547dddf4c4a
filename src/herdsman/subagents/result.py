"""The structured result of one sub-agent: what the lead reads and what events carry."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["completed", "failed", "timed_out", "cancelled", "max_turns", "budget_exceeded", "skipped", "refused"]


@dataclass
class TaskResult:
    """The outcome of one sub-agent task."""

    task_id: str
    subagent_type: str
    description: str
    status: Status
    answer: str = ""
    error: str | None = None
    files_written: list[str] = field(default_factory=list)
    files_seen: list[str] = field(default_factory=list)
    """Of those, the files it replaced whole or edited, whose content it therefore knew (its read
    before write held): not those it only appended to (see :func:`~herdsman.subagents.executor.files_seen`)."""
    usage: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    queued_s: float = 0.0
    attempts: int = 1
    model: str | None = None
    unresolved: list[str] = field(default_factory=list)
    """What the sub-agent's completion check still found missing in its last answer (shown in
    the events and the UI; the lead reads only the answer, as before)."""
    unresolved_rules: list[str] = field(default_factory=list)
    """The rule ids of those findings (``file.missing``, ``command.failed_not_retried``...)."""

    @property
    def ok(self) -> bool:
        """Whether the sub-agent finished its work."""
        return self.status == "completed"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    def to_text(self) -> str:
        """What the lead reads as the tool result: status, files, answer. The time and the tokens
        it took are in the artifact (the UI and the trace show them), not here: a small lead asked
        for a word count answered with the sub-agent's "16,945 tokens" (from the benchmark)."""
        head = f"[{self.subagent_type}] {self.description}: {self.status}"
        if self.attempts > 1:
            head += f" after {self.attempts} attempts"
        if self.queued_s >= 0.05:
            head += " (it waited for a free slot)"
        lines = [head]
        if self.error:
            lines.append(f"Error: {self.error}")
        if self.files_written:
            lines.append("Files written: " + ", ".join(self.files_written))
        if self.answer:
            lines += ["Result:", self.answer]
        return "\n".join(lines)
