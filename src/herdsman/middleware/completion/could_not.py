"""The honest end of a run whose last reply cannot stand as an answer.

When the completion check's rounds run out and the last reply is still no answer (a tool call
written as text, a call of a tool that does not exist, a copy of the harness's own note), that
reply must not become the final answer. :func:`could_not_message` is put after it instead: "I could
not finish this request", and why, from the findings the check still had (what each rule detects,
with its path or failed command). It is written in the request's language
(:mod:`~herdsman.language.user_words`; a rule with no words there is told by its English
description in :data:`~herdsman.middleware.completion.findings.RULES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage

from herdsman.language.user_words import has, say
from herdsman.middleware.completion.findings import RULES, Finding

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


def _detects(rule: str, language: str) -> str:
    """What ``rule`` detects, in ``language`` when it has the words, else in English."""
    if has(f"rule.{rule}", language):
        return say(f"rule.{rule}", language)
    known = RULES.get(rule)
    return known.detects if known else rule


def could_not_text(findings: Sequence[Finding], language: str = "en") -> str:
    """What to tell the user, in ``language``: the run could not finish, and what was still wrong."""
    lines = [f"- {_detects(f.rule, language)}{_detail(f)}" for f in findings]
    why = "\n".join(dict.fromkeys(lines))
    return say("could_not", language) + (f"{say('could_not.why', language)}\n{why}" if why else "")


def could_not_message(findings: Sequence[Finding], language: str = "en") -> AIMessage:
    """The message that ends the run in place of a reply that is no answer (in ``language``, the request's)."""
    return AIMessage(
        content=could_not_text(findings, language), additional_kwargs={COULD_NOT_KEY: [f.rule for f in findings]}
    )
