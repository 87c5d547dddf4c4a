"""The plan of a multi-step request as data: its schema, the plan the model proposes, the step
the run is on, the short view the model reads, and when a step counts as done.

Pure functions of plain values (no model, no sandbox), so the plan/act middleware
(:mod:`herdsman.middleware.plan_act`) stays a thin layer of I/O around them, and the plan is
plain JSON in the thread state (checkpointed, streamed, read by clients as ``plan``).

Language: nothing here reads the meaning of the user's words. Whether a request may have several
steps is decided by its shape (sentences split by the full stops and question marks of Latin and
CJK scripts, line breaks, list items, how many files it names); what the steps are is the model's
answer to a forced, typed call; a file a step must produce counts only when the request itself
names it (so a path the model made up never drives the run). The words the model reads (the plan
view, the notes) are English, the language of the harness's prompts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

MAX_STEPS = 6
PLAN_TOOL = "make_plan"
VERDICT_TOOL = "report_progress"
STEP_NOT_DONE = "plan.step_not_done"
"""The rule id of the finding a note carries when the model stops with a step open."""

Status = Literal["pending", "current", "done", "open"]
"""pending: not reached; current: being worked on; done: evidence says so; open: the run ended
without it (the plan's budget of notes was spent, or the step limit stopped the run)."""


class PlannedStep(BaseModel):
    """One step as the model proposes it."""

    step: str = Field(description="What to do in this step, in a few words (one action).")
    path: str | None = Field(None, description="The file this step must create or change, if any.")


class PlannedSteps(BaseModel):
    """The steps that carry out the user's request, in order (one step when it is a single action)."""

    steps: list[PlannedStep] = Field(min_length=1, max_length=MAX_STEPS)


class StepVerdict(BaseModel):
    """Which listed step is the first one not done yet; 0 when every listed step is done."""

    first_open_step: int = Field(ge=0, description="The number of the first step not done yet, or 0 if all are done.")
    missing: str = Field("", description="What is still to do for that step, in one short sentence.")


def tool_spec(model: type[BaseModel], name: str) -> dict[str, Any]:
    """``model`` as an OpenAI-style tool named ``name`` (what ``bind_tools`` takes for a forced call)."""
    return {
        "type": "function",
        "function": {"name": name, "description": model.__doc__ or name, "parameters": model.model_json_schema()},
    }


class Step(TypedDict):
    """A step of the plan in thread state."""

    step: str
    path: str | None
    status: Status


class Plan(TypedDict):
    """The plan of the current request, as thread state keeps it (``plan``).

    ``request_id``: the user message it plans (a new message gets a new plan); ``steps``: empty
    when the request is one step (no plan); ``since``: the id of the last message when the current
    step became current (tool results after it are the step's); ``noted``: the steps a note has
    named (each at most once); ``before``: each step path's fingerprint when the plan was made
    (None: missing), so that a file that was already there does not count as produced;
    ``check``: what the last final reply left open (the step, the evidence), for the note."""

    request_id: str
    steps: list[Step]
    since: str | None
    noted: list[int]
    before: dict[str, Any]
    check: NotRequired[dict[str, Any] | None]


# -- is there more than one step? -------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|[。！？；;]+|\n+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)、])\s+", re.MULTILINE)
_FILE_NAME = re.compile(r"(?<![\w/.-])((?:/[\w.-]+)*/?[\w-][\w./-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])", re.ASCII)


def file_names(text: str) -> list[str]:
    """The file names and paths ``text`` writes (ASCII names with an extension, in any script
    around them); a bare name also written as a full path counts once."""
    text = re.sub(r"https?://\S+", " ", text)
    found = list(dict.fromkeys(m.group(1).rstrip(".") for m in _FILE_NAME.finditer(text)))
    found = [n for n in found if not re.fullmatch(r"[\d.]+", n)]  # 3.5 is a number, not a file
    return [n for n in found if "/" in n or not any(o.endswith("/" + n) for o in found)]


def clauses(text: str) -> list[str]:
    """The sentences and lines of ``text`` that hold a word (split at . ! ? ; and their CJK forms)."""
    return [part for part in _SENTENCE_END.split(text) if re.search(r"\w", part)]


def may_have_steps(text: str) -> bool:
    """Whether a request's shape allows several steps: two sentences or more, a list, or two
    files named. A single sentence about at most one file is one step, and gets no planning call."""
    return len(clauses(text)) >= 2 or len(_LIST_ITEM.findall(text)) >= 2 or len(file_names(text)) >= 2


# -- making a plan ----------------------------------------------------------------------------


def requested_path(path: str | None, request: str) -> str | None:
    """The request's own spelling of the file ``path`` names (same file name), or None when the
    request names no such file: a step's path counts only when the user asked for that file."""
    if not path or not path.strip():
        return None
    base = path.strip().rstrip("/").rsplit("/", 1)[-1]
    if not base:
        return None
    named = [n for n in file_names(request) if n.rsplit("/", 1)[-1] == base]
    if not named:
        return None
    return next((n for n in named if n.endswith(path.strip()) or path.strip().endswith(n)), named[0])


def new_plan(request_id: str, proposed: Sequence[Mapping[str, Any]], request: str, since: str | None) -> Plan:
    """The plan of ``request`` from the steps the model proposed (cut to :data:`MAX_STEPS`, blank
    steps dropped, paths kept only when the request names them); no steps when fewer than two."""
    steps: list[Step] = []
    for item in list(proposed)[:MAX_STEPS]:
        text = " ".join(str(item.get("step") or "").split())[:200]
        if text:
            steps.append(Step(step=text, path=requested_path(item.get("path"), request), status="pending"))
    if len(steps) < 2:
        steps = []
    if steps:
        steps[0]["status"] = "current"
    return Plan(request_id=request_id, steps=steps, since=since, noted=[], before={})


def no_plan(request_id: str) -> Plan:
    """The plan of a one-step request: none (recorded, so the request is not planned again)."""
    return Plan(request_id=request_id, steps=[], since=None, noted=[], before={})


def current_index(plan: Mapping[str, Any] | None) -> int | None:
    """The index of the current step, or None when there is none (no plan, or all done)."""
    for i, step in enumerate((plan or {}).get("steps") or []):
        if step.get("status") == "current":
            return i
    return None


def is_active(plan: Mapping[str, Any] | None) -> bool:
    """Whether the plan has a step still being worked on."""
    return current_index(plan) is not None


def mark_done(plan: Plan, indices: set[int] | list[int], since: str | None) -> Plan:
    """A copy of ``plan`` with the steps ``indices`` done; the first step neither done nor open
    becomes current (when that is a new one, tool results after ``since`` are its own)."""
    steps = [Step(**s) for s in plan["steps"]]  # type: ignore[typeddict-item]  # a Plan (Step) copied with keys replaced is one; mypy does not check ** of a TypedDict
    before = current_index(plan)
    for i in indices:
        steps[i]["status"] = "done"
    at = next((i for i, s in enumerate(steps) if s["status"] not in ("done", "open")), None)
    for i, s in enumerate(steps):
        if s["status"] not in ("done", "open"):
            s["status"] = "current" if i == at else "pending"
    moved = at != before
    return Plan(**{**plan, "steps": steps, "since": since if moved else plan.get("since")})  # type: ignore[typeddict-item]  # a Plan (Step) copied with keys replaced is one; mypy does not check ** of a TypedDict


def implied_done(plan: Mapping[str, Any], evidence: Mapping[int, str]) -> set[int]:
    """The steps structure shows done: those whose evidence is ``done``, and every step without a
    path before a step whose file was produced (the work went past them)."""
    steps = plan["steps"]
    done = {i for i, e in evidence.items() if e == "done"}
    produced = [i for i in done if steps[i].get("path")]
    if produced:
        done |= {i for i in range(max(produced)) if not steps[i].get("path")}
    return {i for i in done if steps[i]["status"] != "done"}


def by_reply(plan: Plan, evidence: Mapping[int, str], since: str | None) -> Plan:
    """``plan`` with its last step done when it is the only one left and nothing but the final
    reply can do it (no file to produce, no tool call since it began): giving the answer is that
    step."""
    at = current_index(plan)
    last = len(plan["steps"]) - 1
    if at == last and evidence.get(last) == "unknown":
        return mark_done(plan, [last], since)
    return plan


def close_open(plan: Plan) -> Plan:
    """``plan`` with every step not done marked ``open`` (the run ended without them)."""
    steps = [Step(**{**s, "status": "open" if s["status"] != "done" else "done"}) for s in plan["steps"]]  # type: ignore[typeddict-item]  # a Plan (Step) copied with keys replaced is one; mypy does not check ** of a TypedDict
    return Plan(**{**plan, "steps": steps})  # type: ignore[typeddict-item]  # a Plan (Step) copied with keys replaced is one; mypy does not check ** of a TypedDict


# -- evidence ---------------------------------------------------------------------------------

Evidence = Literal["done", "missing", "empty", "failed", "unknown"]


def step_evidence(step: Mapping[str, Any], before: Any, now: Any, results: Sequence[bool]) -> Evidence:
    """What structure says of a step: ``before`` and ``now`` are the fingerprint of its path when
    the plan was made and now (None: no such file; ``(size, ...)``), ``results`` whether each tool
    result since the step became current succeeded, oldest first.

    A step with a path that did not exist before is done once the file exists and is not empty
    (missing, or empty, otherwise: no tool result can stand in for the file). A file that was
    there before is done once it changed; unchanged, and for a step without a path, the step is
    done when its last tool result succeeded, not done when it failed, and unknown without one."""
    path = step.get("path")
    if path and before is None:
        if now is None:
            return "missing"
        return "done" if now[0] > 0 else "empty"
    if path and now is not None and now != before:
        return "done"
    if results:
        return "done" if results[-1] else "failed"
    return "unknown"


# -- what the model reads ---------------------------------------------------------------------


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def describe(step: Mapping[str, Any]) -> str:
    """A step as a line: its words, and the file it must produce."""
    path = step.get("path")
    return f"{step['step']}" + (f" (it must produce {path})" if path and path not in step["step"] else "")


def view(plan: Mapping[str, Any] | None) -> str | None:
    """The plan as the model reads it before a call: the current step, and the steps done, kept
    short (a small model's context is small); None without a step to work on (no plan, or the
    plan is over: then the completion check's notes, if any, are what the model must follow)."""
    steps = (plan or {}).get("steps") or []
    at = current_index(plan)
    if at is None:
        return None
    done = [f"{i + 1}. {_short(s['step'])}" for i, s in enumerate(steps) if s["status"] == "done"]
    lines = [f"[plan] Step {at + 1} of {len(steps)}: {describe(steps[at])}"]
    if done:
        lines.append("Done: " + "; ".join(done))
    lines.append("Do this step now." if at + 1 < len(steps) else "This is the last step; then answer the user.")
    return "\n".join(lines)


def note_text(plan: Mapping[str, Any], index: int, evidence: Evidence, missing: str = "") -> str:
    """The harness's note when the model stopped with step ``index`` not done."""
    steps = plan["steps"]
    step = steps[index]
    why = {
        "missing": f"{step.get('path')} does not exist yet",
        "empty": f"{step.get('path')} is empty",
        "failed": "your last tool call in it failed",
    }.get(evidence, missing.strip() or "it is not done yet")
    return (
        f"[harness plan] Step {index + 1} of {len(steps)} is not done: {describe(step)}. Why: {why}. "
        "Do it now with your tools, then go on with the next step."
    )


def finding(plan: Mapping[str, Any], index: int, evidence: Evidence, missing: str = "") -> dict[str, Any]:
    """The typed finding a note carries (``additional_kwargs["herdsman_findings"]``)."""
    step = plan["steps"][index]
    return {
        "rule": STEP_NOT_DONE,
        "step": index + 1,
        "of": len(plan["steps"]),
        "text": step["step"],
        "path": step.get("path"),
        "evidence": evidence,
        **({"missing": missing} if missing else {}),
    }
