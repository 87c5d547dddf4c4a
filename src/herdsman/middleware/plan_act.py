"""Plan, act, check: the harness keeps the plan of a multi-step request, one step at a time.

A small model holds a plan poorly in its head: asked to read a CSV, compute totals, write them to
a file and report, it does the first step and answers. LangChain's todo list is a tool the model
must call, which a 1.5B model rarely does well. Here the harness keeps the plan in graph state
(``plan``, see :mod:`herdsman.turns.plan_state`), so the model only has to do the step in
front of it:

1. Plan: on the first model call of a run whose request may have several steps (by its shape:
   sentences, list items, files named), one short model call with a forced, typed tool call
   (``make_plan``) splits it into 1 to 6 steps, each naming the file it must produce, if any. One
   step means no plan: the run goes on as without this middleware.
2. Act: before each model call, the model's view ends with the plan: the current step, and the
   steps done ("Step 2 of 4: ...; Done: 1. ..."). The view is not stored in the thread, and
   there is none once the plan is over.
3. Check: before each call the current step is settled by structure: its file exists and is not
   empty (or changed, when it was there before), or its last tool call succeeded; a file made
   for a later step settles the steps without a file before it. When the model stops (a reply
   without tool calls) with a step still open, that is settled the same way; the last step, when
   it has no file, is the answer, which the reply gives; and when structure cannot tell (a step
   without a file, and no tool call since it began), one short model call with a forced, typed
   verdict says which step is open. A step still open gets one note (a harness
   message carrying the finding ``plan.step_not_done``) and the model runs again; the call after a
   note on a missing file or a failed call must call a tool. Each step is named at most once, so
   a plan that is never finished ends after at most six notes (and the run's step limit still
   holds); its unfinished steps are then marked ``open``.

The planning and verdict calls go to the model the run uses (``request.model``) and are not
streamed as messages (tag ``nostream``); the plan reaches clients as the state key ``plan`` in
the run's updates and in the thread's state. The middleware sits inside the request rewriters
(tool selection, answer nudge), so they see the thread without its view, and its ``after_model``
runs before the completion check's, so an open step is named before the final reply is checked.

Written here because no library keeps a plan in state and checks it against a sandbox's files;
the file checks and the forced calls are what make it work for a small model.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Any, NotRequired, cast

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse, hook_config
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command
from pydantic import ValidationError

from herdsman.logs import get_logger
from herdsman.sandbox.base import USER_DATA_ROOT, HostBackedSandbox, SandboxProvider
from herdsman.sandbox.paths import normalize_virtual
from herdsman.turns.forced_call import final_reply, forced_arguments
from herdsman.turns.plan_state import (
    MAX_STEPS,
    PLAN_TOOL,
    STEP_NOT_DONE,
    VERDICT_TOOL,
    Evidence,
    Plan,
    PlannedSteps,
    StepVerdict,
    by_reply,
    close_open,
    current_index,
    finding,
    implied_done,
    is_active,
    mark_done,
    may_have_steps,
    new_plan,
    no_plan,
    note_text,
    step_evidence,
    tool_spec,
    view,
)
from herdsman.turns.turn import HARNESS_NAME, is_harness, run_sandbox, stop_reason, this_run

log = get_logger(__name__)

FINDINGS_KEY = "herdsman_findings"
"""Where a harness note carries its typed findings (``additional_kwargs``)."""
"""The planning and verdict calls are the harness's, not the answer: not streamed as messages."""
PLAN_PROMPT = (
    "You split a user's request into the steps that carry it out, in order: at most 6 short steps, each ONE "
    "action (run a command, read a file, write a file, answer). A question, or a request that is a single "
    "action, is ONE step. For a step that creates or changes a file, give that file's path as the request "
    "writes it."
)
VERDICT_PROMPT = (
    "You check an agent's progress on a plan. Given the steps still open, the agent's last tool calls and "
    "its reply, give the number of the first listed step that is NOT done yet, or 0 if all listed steps are done."
)
_FAILED = re.compile(r"^\[(?:exit code -?[1-9]\d*|timed out after [^\]]*)\]$", re.MULTILINE)
_FORCING = ("missing", "empty", "failed")
"""Evidence whose way out is a tool call: the call after such a note must call one."""


class PlanActState(AgentState):
    """``plan``: the plan of the current request (see :class:`herdsman.turns.plan_state.Plan`)."""

    plan: NotRequired[Plan | None]


def succeeded(result: ToolMessage) -> bool:
    """Whether a tool result is a success: no error status, and none of the lines the sandbox's
    bash ends a failed command's output with (``[exit code N]``, ``[timed out after ...]``)."""
    return result.status != "error" and not _FAILED.search(result.text[-300:])


def results_since(run: list[AnyMessage], since: str | None) -> list[bool]:
    """Whether each tool result after the message ``since`` succeeded (the whole run's results
    when that message is gone, e.g. summarized away)."""
    at = next((i for i, m in enumerate(run) if since is not None and m.id == since), -1)
    return [succeeded(m) for m in run[at + 1 :] if isinstance(m, ToolMessage)]


def thread(request: ModelRequest) -> list[AnyMessage]:
    """The thread's messages (the state's: with their ids, as no rewriter's view changed them)."""
    return list(request.state.get("messages") or request.messages)


class FileState:
    """Fingerprints of the files a plan names, read from the thread's sandbox: (size, mtime) or None."""

    def __init__(self, sandbox: HostBackedSandbox | None) -> None:
        self.sandbox = sandbox
        self._entries: dict[str, tuple[int, int]] | None = None

    def fingerprint(self, path: str) -> list[int] | None:
        """``[size, mtime]`` of the file ``path`` names (a virtual path, or a name or relative path
        matched against the thread's files, largest match first); None when there is none."""
        if self.sandbox is None:
            return None
        if path.startswith("/"):
            try:
                st = self.sandbox.files.stat(normalize_virtual(path))
            except Exception:  # noqa: BLE001 - a path outside the jail is no file of the plan
                return None
            return [st.st_size, st.st_mtime_ns] if st is not None else None
        if self._entries is None:
            self._entries = dict(self.sandbox.snapshot().entries)
        tail = "/" + path.lstrip("./")
        found = sorted(
            (v for p, v in self._entries.items() if p.startswith(USER_DATA_ROOT) and p.endswith(tail)), reverse=True
        )
        return list(found[0]) if found else None


class PlanActMiddleware(AgentMiddleware):
    """Keep a multi-step request's plan in state, show the current step, check each step."""

    state_schema = PlanActState

    def __init__(self, provider: SandboxProvider | None) -> None:
        """``provider``: the thread's files, where a step's file is looked for (without it, steps
        are settled by their tool results and the model's verdict only)."""
        super().__init__()
        self.provider = provider

    # -- I/O edges ------------------------------------------------------------------------------

    def _files(self) -> FileState:
        try:
            return FileState(run_sandbox(self.provider))
        except Exception:  # noqa: BLE001 - no sandbox: settled without files
            return FileState(None)

    @staticmethod
    def _forced(model: Any, spec: dict[str, Any], messages: list[AnyMessage]) -> dict[str, Any] | None:
        """The arguments of the forced call of tool ``spec`` (None when the model did not make it)."""
        return forced_arguments(model, spec, messages)

    def _propose(self, model: Any, request: str) -> list[dict[str, Any]]:
        """The steps the model proposes for ``request`` (empty when the call gave none)."""
        args = self._forced(
            model, tool_spec(PlannedSteps, PLAN_TOOL), [SystemMessage(PLAN_PROMPT), HumanMessage(request[:4000])]
        )
        if args is None:
            return []
        steps = args.get("steps")
        if isinstance(steps, list):  # a small model may write too many steps, or bare strings
            args["steps"] = [{"step": s} if isinstance(s, str) else s for s in steps[:MAX_STEPS]]
        try:
            return [s.model_dump() for s in PlannedSteps.model_validate(args).steps]
        except ValidationError as exc:
            log.info("plan_unusable", error=str(exc)[:300])
            return []

    def _verdict(
        self, model: Any, plan: Plan, open_steps: list[int], run: list[AnyMessage], request: str
    ) -> tuple[int, str]:
        """The model's verdict on the ``open_steps``: the first not done (a step index, -1: all
        done) and what it misses. A failed or malformed call counts as all done."""
        listed = "\n".join(f"{i + 1}. {plan['steps'][i]['step']}" for i in open_steps)
        done = [
            f"called {c['name']}({str(c['args'])[:160]})" for m in run if isinstance(m, AIMessage) for c in m.tool_calls
        ]
        shown = [f"result: {m.text[:200]}" for m in run if isinstance(m, ToolMessage)]
        reply = run[-1].text[:600] if run else ""
        content = (
            f"Request:\n{request[:1500]}\n\nSteps still open:\n{listed}\n\nLast tool calls:\n"
            + "\n".join((done[-4:] + shown[-2:]) or ["(none)"])
            + f"\n\nReply:\n{reply}"
        )
        args = self._forced(
            model, tool_spec(StepVerdict, VERDICT_TOOL), [SystemMessage(VERDICT_PROMPT), HumanMessage(content)]
        )
        try:
            verdict = StepVerdict.model_validate(args or {"first_open_step": 0})
        except ValidationError:
            return -1, ""
        index = verdict.first_open_step - 1
        return (index, verdict.missing) if index in open_steps else (-1, "")

    # -- the plan -----------------------------------------------------------------------------

    def _evidence(self, plan: Plan, run: list[AnyMessage], files: FileState) -> dict[int, Evidence]:
        """What structure says of each step not done (only the current one has tool results)."""
        at = current_index(plan)
        found: dict[int, Evidence] = {}
        for i, step in enumerate(plan["steps"]):
            if step["status"] in ("done", "open"):
                continue
            path = step.get("path")
            now = files.fingerprint(path) if path else None
            before = plan["before"].get(path) if path else None
            found[i] = step_evidence(step, before, now, results_since(run, plan.get("since")) if i == at else [])
        return found

    def _start(self, request: ModelRequest, request_id: str, text: str) -> Plan:
        """The plan of a new request: none for a one-step shape, else the model's, with its files'
        fingerprints taken now (before any tool of this run ran)."""
        if not may_have_steps(text):
            return no_plan(request_id)
        messages = thread(request)
        plan = new_plan(request_id, self._propose(request.model, text), text, messages[-1].id if messages else None)
        if plan["steps"]:
            files = self._files()
            plan["before"] = {s["path"]: files.fingerprint(s["path"]) for s in plan["steps"] if s["path"]}
            log.info("plan_made", steps=[s["step"] for s in plan["steps"]])
        return plan

    def before_call(self, request: ModelRequest) -> tuple[Plan | None, bool]:
        """The plan for this call (made on the run's first call, or advanced by evidence), and
        whether it changed."""
        req, run = this_run(thread(request))
        if req is None:
            return None, False
        request_id = str(req.id or hashlib.sha256(req.text.encode("utf-8", "surrogatepass")).hexdigest()[:16])
        plan = cast("Plan | None", request.state.get("plan"))
        if not plan or plan.get("request_id") != request_id:
            if any(isinstance(m, AIMessage) for m in run):  # joined mid-run (switched on, resumed): no plan
                return no_plan(request_id), True
            return self._start(request, request_id, req.text), True
        if not is_active(plan):
            return plan, False
        done = implied_done(plan, self._evidence(plan, run, self._files()))
        if done:
            return mark_done(plan, done, run[-1].id if run else None), True
        return plan, False

    def after_reply(self, request: ModelRequest, plan: Plan, reply: AIMessage) -> Plan:
        """Settle the plan when the model stopped, and name in ``check`` the first step left open
        and its evidence, for the note (``check`` None: the reply may go out)."""
        req, run = this_run(thread(request))
        if reply.id is None:  # the next step's tool results are those after this reply
            reply.id = f"plan-{uuid.uuid4().hex[:12]}"
        run = [*run, reply]
        evidence = self._evidence(plan, run, self._files())
        plan = by_reply(mark_done(plan, implied_done(plan, evidence), reply.id), evidence, reply.id)
        at = current_index(plan)
        missing = ""
        if at is not None and evidence[at] == "unknown":  # structure cannot tell: the model judges
            rest = [i for i in range(at, len(plan["steps"])) if plan["steps"][i]["status"] != "done"]
            first, missing = self._verdict(request.model, plan, rest, run, req.text if req else "")
            judged = [i for i in rest if (first < 0 or i < first) and evidence[i] == "unknown"]
            plan = by_reply(mark_done(plan, judged, reply.id), evidence, reply.id)
            at = current_index(plan)
        if at is None:
            return Plan(**{**plan, "check": None})  # type: ignore[typeddict-item]  # a Plan copied with keys replaced is a Plan; mypy does not check ** of a TypedDict
        if at in plan["noted"]:  # named once already: the reply goes out, the rest stays open
            return Plan(**{**close_open(plan), "check": None})  # type: ignore[typeddict-item]  # a Plan copied with keys replaced is a Plan; mypy does not check ** of a TypedDict
        ev = evidence[at] if evidence[at] != "unknown" else "judged"
        return Plan(**{**plan, "check": {"step": at, "evidence": ev, "missing": missing}})  # type: ignore[typeddict-item]  # a Plan copied with keys replaced is a Plan; mypy does not check ** of a TypedDict

    def settle(self, request: ModelRequest, plan: Plan, response: Any) -> Plan | None:
        """The plan after the model's reply (None: unchanged): settled when the model stopped
        (:meth:`after_reply`); once the plan is over, a step left open whose file has since been
        produced (the completion check sent the model back for it) counts as done."""
        found = final_reply(response)
        reply = found[0][found[1]] if found is not None else None
        if reply is not None and is_active(plan):
            return self.after_reply(request, plan, reply)
        if reply is not None and any(s["status"] == "open" and s["path"] for s in plan["steps"]):
            files = self._files()
            produced = [
                i
                for i, s in enumerate(plan["steps"])
                if s["status"] == "open"
                and s["path"]
                and step_evidence(s, plan["before"].get(s["path"]), files.fingerprint(s["path"]), []) == "done"
            ]
            if produced:
                return Plan(**{**mark_done(plan, produced, plan.get("since")), "check": None})  # type: ignore[typeddict-item]  # a Plan copied with keys replaced is a Plan; mypy does not check ** of a TypedDict
        return Plan(**{**plan, "check": None}) if plan.get("check") else None  # type: ignore[typeddict-item]  # a Plan copied with keys replaced is a Plan; mypy does not check ** of a TypedDict

    @staticmethod
    def _show(request: ModelRequest, plan: Plan | None) -> ModelRequest:
        """The request the model gets: its view ends with the plan, and the call after a note on
        a missing file or a failed call must call a tool."""
        text = view(plan)
        if text is None:
            return request
        changes: dict[str, Any] = {"messages": [*request.messages, HumanMessage(content=text, name=HARNESS_NAME)]}
        messages = thread(request)
        at = next((i for i in range(len(messages) - 1, -1, -1) if is_harness(messages[i])), None)
        findings = (messages[at].additional_kwargs.get(FINDINGS_KEY) or []) if at is not None else []
        after = messages[at + 1 :] if at is not None else []
        if (
            any(f.get("rule") == STEP_NOT_DONE and f.get("evidence") in _FORCING for f in findings)
            and not any(isinstance(m, AIMessage) for m in after)
            and request.tools
            and request.tool_choice in (None, "auto")
        ):
            changes["tool_choice"] = "any"
        return request.override(**changes)

    @staticmethod
    def _with_plan(response: Any, plan: Plan) -> ExtendedModelResponse:
        """``response`` with the plan as a state update."""
        if isinstance(response, ExtendedModelResponse):
            update = (
                dict(response.command.update or {})
                if response.command is not None and isinstance(response.command.update, dict)
                else {}
            )
            inner = response.model_response
        else:
            update, inner = {}, ModelResponse(result=[response]) if isinstance(response, AIMessage) else response
        update["plan"] = plan
        return ExtendedModelResponse(model_response=inner, command=Command(update=update))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Plan or advance, show the plan, call the model; when it stops, settle the plan."""
        plan, changed = self.before_call(request)
        response = handler(self._show(request, plan))
        after = self.settle(request, plan, response) if plan and plan["steps"] else None
        if after is not None:
            plan, changed = after, True
        return self._with_plan(response, plan) if changed and plan is not None else response

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Async twin of :meth:`wrap_model_call` (files and the harness's calls in a worker thread)."""
        plan, changed = await asyncio.to_thread(self.before_call, request)
        response = await handler(self._show(request, plan))
        after = await asyncio.to_thread(self.settle, request, plan, response) if plan and plan["steps"] else None
        if after is not None:
            plan, changed = after, True
        return self._with_plan(response, plan) if changed and plan is not None else response

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """When the model stopped with a step open: one note naming it, and the model runs again;
        a reply a limit wrote ends the plan with its steps left open."""
        plan = state.get("plan")
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        if not plan or not isinstance(last, AIMessage) or last.tool_calls:
            return None
        if stop_reason(last) is not None:
            return {"plan": close_open(plan)} if is_active(plan) else None
        check = plan.get("check")
        if not check:
            return None
        at, evidence, missing = int(check["step"]), check["evidence"], check.get("missing") or ""
        log.info("plan_step_not_done", step=at + 1, of=len(plan["steps"]), evidence=evidence)
        note = HumanMessage(
            content=note_text(plan, at, evidence, missing),
            name=HARNESS_NAME,
            additional_kwargs={FINDINGS_KEY: [finding(plan, at, evidence, missing)]},
        )
        return {
            "messages": [note],
            "plan": Plan(**{**plan, "noted": [*plan["noted"], at], "check": None, "since": last.id}),  # type: ignore[typeddict-item]  # a Plan copied with keys replaced is a Plan; mypy does not check ** of a TypedDict
            "jump_to": "model",
        }
