"""Whether a finished run did what was asked, from the thread's values: what ``herdsman run``
turns into its exit status (and a caller into a visible status).

A run failed when its last reply is the harness's own (the model could not be called,
:func:`~herdsman.agents.model_failure.failed_reason`, or its replies not used,
:data:`~herdsman.middleware.completion.check.ERROR_REPLIES`), or a limit ended it
(:func:`~herdsman.middleware.step_limit.stop_reason`: ``max_steps``, ``token_budget``); its
deliverable is missing when the completion check's rounds ran out with a finding of
:data:`~herdsman.middleware.completion.findings.DELIVERABLE_MISSING` left (``completion_unresolved``), and
its work failed when one of :data:`WORK_FAILED` is left (the last command failed and was not run
again, a script it wrote does not parse: the README's primes script that imported a package not
installed ended with exit 0). Other findings left (a number no tool showed, a URL) are not
counted. All of it is read from typed fields, never from the words of the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.agents.model_failure import failed_reason
from herdsman.middleware.completion.check import ERROR_REPLIES
from herdsman.middleware.completion.findings import DELIVERABLE_MISSING, RULES
from herdsman.middleware.step_limit import stop_reason

WORK_FAILED = frozenset({"command.failed_not_retried", "script.does_not_parse"})
"""Rules of the completion check whose finding, left when its rounds ran out, means the run's work
failed (:data:`~herdsman.middleware.completion.findings.RULES` says what each detects)."""


@dataclass(frozen=True)
class RunOutcome:
    """``problems``: one sentence each for why the run did not deliver (empty: done)."""

    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the run ended with nothing missing."""
        return not self.problems


def _missing(finding: Mapping[str, Any]) -> str:
    """One line for a deliverable finding: the path (or folder, or skill output) and the check's words."""
    evidence = finding.get("evidence") or {}
    what = (
        evidence.get("path")
        or evidence.get("folder")
        or evidence.get("where")
        or evidence.get("pattern")
        or "the deliverable"
    )
    text = str(finding.get("text") or "").strip()
    return f"the requested {what} is missing ({finding.get('rule')})" + (f": {text}" if text else "")


def _failed(finding: Mapping[str, Any]) -> str:
    """One line for a finding of failed work: what the rule detects, and the check's words."""
    rule = str(finding.get("rule"))
    known = RULES.get(rule)
    text = str(finding.get("text") or "").strip()
    return f"{known.detects if known else rule} ({rule})" + (f": {text}" if text else "")


def run_outcome(values: Mapping[str, Any]) -> RunOutcome:
    """The outcome of the run whose thread values are ``values`` (after the run ended)."""
    problems: list[str] = []
    messages = values.get("messages") or []
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last is not None and not last.tool_calls:
        reason = stop_reason(last)
        if reason is not None:
            problems.append(f"the run was stopped by a limit ({reason}): {last.text}")
        elif failed_reason(last) is not None or last.text.startswith(ERROR_REPLIES):
            problems.append(f"the run failed: {last.text}")
    for finding in values.get("completion_unresolved") or []:
        if isinstance(finding, Mapping) and finding.get("rule") in DELIVERABLE_MISSING:
            problems.append(_missing(finding))
        elif isinstance(finding, Mapping) and finding.get("rule") in WORK_FAILED:
            problems.append(_failed(finding))
    return RunOutcome(problems)
