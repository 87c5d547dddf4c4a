"""The honest end of a run whose last reply cannot stand as an answer.

When the completion check's rounds run out and the last reply is still no answer (a tool call
written as text, a call of a tool that does not exist, a copy of the harness's own note), that
reply must not become the final answer. :func:`could_not_message` is put after it instead: "I could
not finish this request", and why, from the findings the check still had (what each rule detects,
with its path or failed command). The sentence is written in English, the language of the rule
descriptions it is built from (:data:`~herdsman.middleware.findings.RULES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage

from herdsman.middleware.findings import RULES, Finding

COULD_NOT_KEY = "herdsman_could_not"
"""In the honest message's ``additional_kwargs``: the rule ids it was built from."""

NO_ANSWER = frozenset({"call.as_text", "tool.unknown", "reply.echoes_note"})
"""Findings that make a reply no answer at all (rather than an answer with a flaw)."""


def _detail(finding: Finding) -> str:
    evidence = finding.evidence
    for key in ("detail", "path", "paths", "urls", "tools"):
        value = evidence.get(key)
        if value:
            return ": " + (", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value))
    return ""


def could_not_text(findings: Sequence[Finding]) -> str:
    """What to tell the user: the run could not finish, and what was still wrong."""
    lines = []
    for f in findings:
        rule = RULES.get(f.rule)
        lines.append(f"- {(rule.detects if rule else f.rule)}{_detail(f)}")
    why = "\n".join(dict.fromkeys(lines))
    return "I could not finish this request: my last reply was not a usable answer." + (f" What was still wrong:\n{why}" if why else "")


def could_not_message(findings: Sequence[Finding]) -> AIMessage:
    """The message that ends the run in place of a reply that is no answer."""
    return AIMessage(content=could_not_text(findings), additional_kwargs={COULD_NOT_KEY: [f.rule for f in findings]})
