"""Whether a finished run did what was asked, from the thread's values: what ``herdsman run``
turns into its exit status (and a caller into a visible status).

A run failed when its last reply is the harness's own (the model could not be called,
:func:`~herdsman.agents.model_failure.failed_reason`, or its replies not used,
:data:`~herdsman.middleware.completion.check.ERROR_REPLIES`), or a limit ended it
(:func:`~herdsman.turns.turn.stop_reason`: ``max_steps``, ``token_budget``); its
deliverable is missing when the completion check's rounds ran out with a finding of
:data:`~herdsman.middleware.completion.findings.DELIVERABLE_MISSING` left (``completion_unresolved``), and
its work failed when one of :data:`WORK_FAILED` is left (the last command failed and was not run
again, a script it wrote does not parse: the README's primes script that imported a package not
installed ended with exit 0). A note the model ignored counts as findings left
(:func:`~herdsman.middleware.completion.findings.ignored_note`: it said the same again and ran
nothing, so a rule that speaks once let the claim stand). Other findings left (a number no tool
showed, a URL) are not counted. All of it is read from typed fields (for an ignored note, also
whether the reply is the same again), never from what the answer says.

The sentences are in the language of the user's request (:mod:`~herdsman.language.user_words`):
a person who wrote in Chinese reads "未完成：" and what each rule detects in Chinese. The check's
own note (English, written for the model) is added only in English; in another language the line
carries the finding's evidence instead (the path, the failed command's error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.agents.model_failure import failed_reason
from herdsman.language.user_words import has, say
from herdsman.middleware.completion.check import ERROR_REPLIES
from herdsman.middleware.completion.findings import DELIVERABLE_MISSING, RULES, ignored_note
from herdsman.turns.turn import stop_reason, this_run, turn_language

WORK_FAILED = frozenset({"command.failed_not_retried", "script.does_not_parse"})
"""Rules of the completion check whose finding, left when its rounds ran out, means the run's work
failed (:data:`~herdsman.middleware.completion.findings.RULES` says what each detects)."""


@dataclass(frozen=True)
class RunOutcome:
    """``problems``: one sentence each for why the run did not deliver (empty: done), in
    ``language`` (the request's, as :func:`~herdsman.language.user_words.turn_language` tells it)."""

    problems: list[str] = field(default_factory=list)
    language: str = "en"

    @property
    def ok(self) -> bool:
        """Whether the run ended with nothing missing."""
        return not self.problems

    @property
    def heading(self) -> str:
        """The line above the problems ("Not done:"), in the request's language."""
        return say("outcome.not_done", self.language)


def _detail(finding: Mapping[str, Any], language: str, evidence: str = "") -> str:
    """What follows a problem's line: the check's note in English, the finding's ``evidence`` in another language."""
    text = str(finding.get("text") or "").strip() if language == "en" else evidence.strip()
    return (": " if language == "en" else "：") + text if text else ""


def _missing(finding: Mapping[str, Any], language: str) -> str:
    """One line for a deliverable finding: the path (or folder, or skill output) and the check's words."""
    evidence = finding.get("evidence") or {}
    what = (
        evidence.get("path")
        or evidence.get("folder")
        or evidence.get("where")
        or evidence.get("pattern")
        or say("outcome.deliverable", language)
    )
    return say("outcome.missing", language, what=what, rule=finding.get("rule")) + _detail(finding, language)


def _failed(finding: Mapping[str, Any], language: str) -> str:
    """One line for a finding of failed work: what the rule detects, and the check's words (or the error)."""
    rule = str(finding.get("rule"))
    known = RULES.get(rule)
    detects = known.detects if known else rule
    if language != "en" and has(f"rule.{rule}", language):
        detects = say(f"rule.{rule}", language)
    detail = str((finding.get("evidence") or {}).get("detail") or "")
    return say("outcome.work_failed", language, detects=detects, rule=rule) + _detail(finding, language, detail)


def run_outcome(values: Mapping[str, Any]) -> RunOutcome:
    """The outcome of the run whose thread values are ``values`` (after the run ended)."""
    problems: list[str] = []
    messages = values.get("messages") or []
    language = turn_language(messages)
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last is not None and not last.tool_calls:
        reason = stop_reason(last)
        if reason is not None:
            problems.append(say("outcome.limit", language, reason=reason, text=last.text))
        elif failed_reason(last) is not None or last.text.startswith(ERROR_REPLIES):
            problems.append(say("outcome.failed", language, text=last.text))
    left = values.get("completion_unresolved") or ignored_note(this_run(messages)[1])
    for finding in left:
        if isinstance(finding, Mapping) and finding.get("rule") in DELIVERABLE_MISSING:
            problems.append(_missing(finding, language))
        elif isinstance(finding, Mapping) and finding.get("rule") in WORK_FAILED:
            problems.append(_failed(finding, language))
    return RunOutcome(problems, language)
