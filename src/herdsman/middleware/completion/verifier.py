"""The completion check's optional judge (``lead.verifier_model``): one short model call that
answers with a typed :class:`Verdict` through structured output (a forced tool call), never
prose to parse. What it finds becomes ``verifier.<id>`` findings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from herdsman.logs import get_logger
from herdsman.middleware.completion.findings import Finding
from herdsman.turns.turn import this_run

log = get_logger(__name__)


class VerdictFinding(BaseModel):
    """One thing the judge found missing."""

    rule: str = Field(
        description="A short id of what is missing, such as verifier.file_missing or verifier.not_answered."
    )
    detail: str = Field(description="One sentence saying what is still to do.")


class Verdict(BaseModel):
    """The judge's answer: whether the request was fully carried out, and what is missing."""

    done: bool = Field(description="True when the request was fully carried out.")
    findings: list[VerdictFinding] = Field(default_factory=list, description="What is still to do (empty when done).")


_ID = re.compile(r"[^a-z0-9_.]+")
PROMPT = (
    "You check an agent's work. Given the user's request, the agent's steps and its final answer, say whether "
    "the request was fully carried out (done), and if not, what is still to do, one finding per missing piece."
)


def _rule(raw: str) -> str:
    """``verifier.<id>``: the judge's id, lower-case, with the prefix once."""
    short = _ID.sub("_", raw.strip().lower()).strip("._").removeprefix("verifier.") or "incomplete"
    return f"verifier.{short}"


def verdict_findings(verdict: Verdict | None) -> list[Finding]:
    """The findings a verdict holds (none when done, or when there is no verdict)."""
    if verdict is None or verdict.done:
        return []
    found = [Finding(_rule(f.rule), {"detail": f.detail.strip()}) for f in verdict.findings if f.detail.strip()]
    return found or [Finding("verifier.incomplete", {"detail": "The request is not fully carried out."})]


def verify(model: BaseChatModel, messages: Sequence[Any]) -> list[Finding]:
    """The judge's findings on the run that ends ``messages`` (a failing judge finds nothing)."""
    request, run = this_run(messages)
    steps = []
    for m in run[:-1]:
        if isinstance(m, AIMessage):
            steps += [f"called {c['name']}({str(c['args'])[:200]})" for c in m.tool_calls]
        elif isinstance(m, ToolMessage):
            steps.append(f"result: {m.text[:300]}")
    prompt = [
        SystemMessage(content=PROMPT),
        HumanMessage(
            content=(
                f"Request:\n{request.text if request else ''}\n\nSteps:\n"
                + "\n".join(steps[-20:])
                + f"\n\nFinal answer:\n{run[-1].text if run else ''}"
            )
        ),
    ]
    try:
        verdict = model.with_structured_output(Verdict).invoke(prompt)
    except Exception as exc:  # noqa: BLE001 - a failing verifier must not fail the run
        log.warning("verifier_failed", error=str(exc))
        return []
    return verdict_findings(verdict if isinstance(verdict, Verdict) else None)
