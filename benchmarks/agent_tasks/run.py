"""Agent task benchmark: Herdsman and deepagents on the same embedded model, same tasks.

Each task of ``tasks.yaml`` (written by ``make_tasks.py``) gets fresh folders with its set-up
files, runs once per agent (and per ablation variant), and is judged by its check
(:mod:`checks`) on the files and the final answer. Both agents use ONE model instance in this
process (the embedded Qwen2.5-Coder-1.5B, or ``local_model.path``) and the same jailed shell:
deepagents gets ``create_deep_agent`` with a backend whose files are the thread's folders under
the same virtual paths (/mnt/user-data/...) and whose ``execute`` runs in Herdsman's sandbox for
that thread, so a command means the same for both. Tasks marked ``upload`` start as the web UI
starts them: the file is already in /mnt/user-data/uploads and the message is the typed text.

Results are appended to ``<results>/results.jsonl`` as each run ends; a rerun skips what is
there (``--fresh`` starts over). Prints one JSON line: herdsman_solved, deepagents_solved, total,
per_category, per_split (solved and total per agent, per category, for ``dev`` and ``test``),
dev_test_gap (Herdsman's dev minus test score, in percentage points), chinese (the tasks whose
prompt is mainly Chinese, per split), median_seconds, median_tool_calls, checks_per_run
(completion-check rounds, the model calls they cost), ablation. Every task belongs to the
development or the held-out test split (README.md says what may be done with each).

    python benchmarks/agent_tasks/run.py [--split dev|test|all] [--only ID,ID|CATEGORY]
        [--agents herdsman,deepagents] [--ablate all|no_verify,...] [--jobs N] [--max-seconds S]
        [--results DIR] [--fresh]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from call_forms import call_forms, totals  # noqa: E402
from checks import check  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "full": {},
    "no_repair": {"local_model": {"repair_tool_calls": False}},
    "no_grammar": {"local_model": {"constrained_decoding": False}},
    "no_read_before_write": {"tools": {"read_before_write": False}},
    "no_verify": {"lead": {"verify_rounds": 0}},
    "verify_rounds_4": {"lead": {"verify_rounds": 4}},  # not an aid switched off: more rounds of the check
    "plan_act": {"lead": {"plan_act": "auto"}},  # off by default: this variant turns it on
    "no_value_answers": {"lead": {"value_answers": "off"}},
    "no_fresh_answers": {"lead": {"fresh_answers": "off"}},
    "no_program_answers": {"lead": {"program_answers": "off"}},
    "no_file_rewrites": {"lead": {"file_rewrites": "off"}},
    "no_task_programs": {"lead": {"task_programs": "off"}},
    "no_clean_pages": {
        "lead": {"program_answers": "off", "file_rewrites": "off", "task_programs": "off", "answer_translations": "off"}
    },
    "no_answer_translations": {"lead": {"answer_translations": "off"}},
    "no_uploads_notice": {"context": {"announce_uploads": False}},
    "no_hide_unavailable": {"context": {"hide_unavailable_tools": False}},
    "standard_profile": {"local_model": {"profile": "standard"}},
    "no_intent_rules": {"lead": {"intent_rules": "off"}},
    "no_run_shown_code": {"lead": {"run_shown_code": "off"}},
}
"""Ablation: each variant switches one of the harness's aids off (config overrides)."""


SPLITS = ("dev", "test")


def load_tasks(only: str | None = None, split: str = "all") -> list[dict[str, Any]]:
    """The tasks of ``split`` (dev, test or all), filtered by ids or categories (comma-separated)."""
    tasks = yaml.safe_load((HERE / "tasks.yaml").read_text())["tasks"]
    if split != "all":
        tasks = [t for t in tasks if t["split"] == split]
    if not only:
        return tasks
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    unknown = sorted(wanted - {t["id"] for t in tasks} - {t["category"] for t in tasks})
    if unknown:
        raise SystemExit(
            f"--only: no task id or category {', '.join(unknown)} in the {split} split; "
            "see the ids and categories in benchmarks/agent_tasks/tasks.yaml"
        )
    return [t for t in tasks if t["id"] in wanted or t["category"] in wanted]


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in, section by section."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = (
            merge(out.get(key, {}), value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def place_files(
    user_data: Path, files: dict[str, str], modes: dict[str, str] | None = None, mtimes: dict[str, int] | None = None
) -> None:
    """Write the task's set-up files under ``user_data`` (keys are workspace/... or uploads/...),
    then give some of them their permission bits (``modes``, octal) and times (``mtimes``)."""
    for rel, text in files.items():
        path = user_data / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel, bits in (modes or {}).items():
        (user_data / rel).chmod(int(bits, 8))
    for rel, seconds in (mtimes or {}).items():
        os.utime(user_data / rel, (seconds, seconds))


def place_task(user_data: Path, task: dict[str, Any]) -> None:
    """Place ``task``'s set-up files, modes and times under ``user_data``."""
    place_files(user_data, task["files"], task.get("modes"), task.get("mtimes"))


def herdsman_config(home: Path, variant: str) -> Any:
    """The config of one Herdsman run: embedded model, local jail, no title or memory calls."""
    from herdsman.config.schema import HerdsmanConfig

    base = {
        "home": str(home),
        "title": {"enabled": False},
        "checkpointer": {"type": "memory"},
        "sandbox": {"provider": "local"},
    }
    return HerdsmanConfig.model_validate(merge(base, VARIANTS[variant]))


class Models:
    """One loaded model, with a chat model object per variant (the weights are shared)."""

    def __init__(self) -> None:
        self._by_variant: dict[str, Any] = {}

    def get(self, config: Any) -> Any:
        from herdsman.models.local import build_local_model

        key = json.dumps(config.local_model.model_dump(mode="json"), sort_keys=True)
        if key not in self._by_variant:
            self._by_variant[key] = build_local_model(config.local_model, progress=True)
        return self._by_variant[key]


async def run_herdsman(
    task: dict[str, Any], variant: str, models: Models, work: Path, max_seconds: float
) -> dict[str, Any]:
    """Run ``task`` with Herdsman; the record of the run (answer, tool calls, seconds, check)."""
    from herdsman.client import HerdsmanClient, ToolCall

    home = work / f"h-{variant}-{task['id']}-{uuid.uuid4().hex[:6]}"
    config = herdsman_config(home, variant)
    thread = "bench"
    user_data = home / "threads" / thread / "user-data"
    place_task(user_data, task)
    tool_calls, error, state = 0, None, {}
    started = time.monotonic()
    async with HerdsmanClient(config, model=models.get(config)) as client:

        async def go() -> None:
            nonlocal tool_calls
            async for event in client.stream(task["prompt"], thread_id=thread):
                tool_calls += isinstance(event, ToolCall)

        try:
            await asyncio.wait_for(go(), max_seconds)
        except TimeoutError:
            error = f"timed out after {max_seconds:g} s"
        except Exception as exc:  # noqa: BLE001 - a crashed run is an unsolved task, recorded
            error = f"{type(exc).__name__}: {exc}"
        snapshot = await client.agent.aget_state({"configurable": {"thread_id": thread}})
        state = snapshot.values or {}
    seconds = time.monotonic() - started
    messages = state.get("messages") or []
    answer = messages[-1].text if messages else ""
    record = finish(
        task,
        "herdsman",
        variant,
        user_data,
        answer,
        seconds,
        tool_calls,
        error,
        checks=int(state.get("completion_checks") or 0),
        messages=messages,
    )
    record["subagents"] = subagent_steps(home / "threads" / thread / "subagents")
    return record


def subagent_steps(folder: Path) -> dict[str, Any]:
    """The sub-agents' transcripts the run kept (task id -> steps, each cut short), for reading
    why a delegated task failed: the lead's transcript holds only their results."""
    out: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            steps = json.loads(path.read_text())
        except ValueError:
            continue
        text = json.dumps(steps, default=str)
        out[path.stem] = steps if len(text) <= 20000 else text[:20000] + " ...[cut]"
    return out


class JailedShell:
    """deepagents' ``execute`` backed by Herdsman's sandbox for one thread (same jail, same paths)."""

    def __init__(self, sandbox: Any, files: Any) -> None:
        self.sandbox = sandbox
        self.files = files

    def __getattr__(self, name: str) -> Any:
        return getattr(self.files, name)

    @property
    def id(self) -> str:  # noqa: D401 - SandboxBackendProtocol wants an id
        """An id for the backend."""
        return "herdsman-jail"

    def execute(self, command: str, *, timeout: int | None = None) -> Any:
        """Run ``command`` in the thread's jail."""
        from deepagents.backends.protocol import ExecuteResponse

        result = self.sandbox.execute(command, timeout=timeout)
        return ExecuteResponse(output=result.output, exit_code=result.exit_code)

    async def aexecute(self, command: str, *, timeout: int | None = None) -> Any:
        """Async twin of :meth:`execute`."""
        return await asyncio.to_thread(self.execute, command, timeout=timeout)


async def run_deepagents(task: dict[str, Any], models: Models, work: Path, max_seconds: float) -> dict[str, Any]:
    """Run ``task`` with ``create_deep_agent`` on the same model and the same folders."""
    from deepagents import create_deep_agent
    from deepagents.backends import CompositeBackend, FilesystemBackend
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.sandbox.provider import build_sandbox_provider

    home = work / f"d-{task['id']}-{uuid.uuid4().hex[:6]}"
    config = herdsman_config(home, "full")
    provider = build_sandbox_provider(config)
    thread = "bench"
    sandbox = provider.acquire(thread)
    user_data = home / "threads" / thread / "user-data"
    place_task(user_data, task)
    files = FilesystemBackend(root_dir=str(user_data), virtual_mode=True)
    shell = JailedShell(sandbox, FilesystemBackend(root_dir=str(user_data / "workspace"), virtual_mode=True))
    backend = CompositeBackend(default=shell, routes={"/mnt/user-data/": files})
    agent = create_deep_agent(model=models.get(config), backend=backend, checkpointer=InMemorySaver())
    run_config = {"configurable": {"thread_id": thread}, "recursion_limit": config.lead.max_steps * 10 + 50}
    error = None
    started = time.monotonic()
    try:
        await asyncio.wait_for(agent.ainvoke({"messages": [("user", task["prompt"])]}, run_config), max_seconds)
    except TimeoutError:
        error = f"timed out after {max_seconds:g} s"
    except Exception as exc:  # noqa: BLE001 - recorded as unsolved
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.monotonic() - started
    messages = (await agent.aget_state(run_config)).values.get("messages") or []
    provider.close()
    answer = messages[-1].text if messages else ""
    tool_calls = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
    return finish(task, "deepagents", "full", user_data, answer, seconds, tool_calls, error, messages=messages)


def harness_marks() -> frozenset[str]:
    """The ``additional_kwargs`` keys that mark what the harness made or changed, kept in transcripts."""
    from herdsman.middleware.answer_translation import TRANSLATION_KEY
    from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE
    from herdsman.middleware.file_rewrite import REWRITE_KEY
    from herdsman.middleware.program_answer import PROGRAM_KEY, VALUE_KEY
    from herdsman.middleware.task_program import TASK_KEY

    return frozenset({RAN_SHOWN_CODE, PROGRAM_KEY, VALUE_KEY, REWRITE_KEY, TASK_KEY, TRANSLATION_KEY})


def transcript(messages: list[Any]) -> list[dict[str, Any]]:
    """The run's messages, short: who, what, which calls (for reading why a task failed)."""
    out = []
    keys = harness_marks()
    for m in messages:
        item: dict[str, Any] = {"type": m.type, "text": m.text[:1500]}
        if getattr(m, "name", None):
            item["name"] = m.name
        if getattr(m, "tool_calls", None):
            item["calls"] = [{"name": c["name"], "args": c["args"]} for c in m.tool_calls]
        marks = {k: v for k, v in (m.additional_kwargs or {}).items() if k in keys}
        if marks:  # which part of the harness made or changed the message (counted without reading it)
            item["marks"] = {k: v if isinstance(v, (str, bool, int)) else True for k, v in marks.items()}
        out.append(item)
    return out


def finish(
    task: dict[str, Any],
    agent: str,
    variant: str,
    user_data: Path,
    answer: str,
    seconds: float,
    tool_calls: int,
    error: str | None,
    checks: int = 0,
    messages: list[Any] | None = None,
) -> dict[str, Any]:
    """The run's record, with the verdict of the task's check and the transcript."""
    why = check(task["check"], user_data, answer)
    return {
        "task": task["id"],
        "category": task["category"],
        "agent": agent,
        "variant": variant,
        "solved": why is None,
        "why": why,
        "error": error,
        "seconds": round(seconds, 1),
        "tool_calls": tool_calls,
        "completion_checks": checks,
        "answer": answer[:500],
        "call_forms": call_forms(messages or []),
        "transcript": transcript(messages or []),
    }


CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_PATHLIKE = re.compile(r"[\w./~-]*[/.][\w./~-]*", re.ASCII)


def is_chinese(prompt: str) -> bool:
    """Whether ``prompt`` is mainly Chinese: once paths and file names are set aside, it has more
    CJK characters than Latin words (a Chinese character carries about a word)."""
    text = _PATHLIKE.sub(" ", prompt)
    return len(CJK.findall(text)) > len(re.findall(r"[A-Za-z]+", text))


def _pct(solved: int, total: int) -> float | None:
    return round(100 * solved / total, 1) if total else None


def score(tasks: list[dict[str, Any]], full: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Tasks solved of ``tasks`` per agent (a task not run counts as unsolved), as a count and a
    percentage, with the total."""
    row: dict[str, Any] = {"total": len(tasks)}
    for agent, rs in full.items():
        solved = {r["task"] for r in rs if r["solved"]}
        row[agent] = sum(t["id"] in solved for t in tasks)
        row[f"{agent}_pct"] = _pct(row[agent], len(tasks))
    return row


def split_figures(tasks: list[dict[str, Any]], full: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One split's figures: solved / total per agent, the percentages, the runs there are, and the
    same per category."""
    row = score(tasks, full)
    ids = {t["id"] for t in tasks}
    for agent in full:
        row[f"{agent}_runs"] = sum(r["task"] in ids for r in full[agent])
    categories = sorted({t["category"] for t in tasks})
    row["per_category"] = {c: score([t for t in tasks if t["category"] == c], full) for c in categories}
    return row


def summarize(records: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """The one-line report: overall, per category, per split (and the dev/test gap), Chinese tasks."""
    ids = {t["id"] for t in tasks}
    recs = [r for r in records if r["task"] in ids]
    full = {a: [r for r in recs if r["agent"] == a and r["variant"] == "full"] for a in ("herdsman", "deepagents")}
    per_category: dict[str, dict[str, int]] = {}
    for t in tasks:
        row = per_category.setdefault(t["category"], {"herdsman": 0, "deepagents": 0, "total": 0})
        row["total"] += 1
        for agent, rs in full.items():
            row[agent] += any(r["task"] == t["id"] and r["solved"] for r in rs)
    by_split = {s: [t for t in tasks if t["split"] == s] for s in SPLITS}
    per_split = {s: split_figures(ts, full) for s, ts in by_split.items() if ts}
    gap = (
        round(per_split["dev"]["herdsman_pct"] - per_split["test"]["herdsman_pct"], 1)
        if "dev" in per_split and "test" in per_split
        else None
    )
    chinese = {
        s: score([t for t in ts if is_chinese(t["prompt"])], full)
        for s, ts in [("all", tasks), *by_split.items()]
        if ts
    }

    runs = full["herdsman"]

    def median(agent: str, key: str) -> float | None:
        values = [r[key] for r in full[agent]]
        return round(statistics.median(values), 1) if values else None

    def ablation_row(variant: list[dict[str, Any]]) -> dict[str, int]:
        same = {x["task"] for x in variant}
        return {
            "solved": sum(r["solved"] for r in variant),
            "runs": len(variant),
            "full_solved_same_tasks": sum(r["solved"] for r in runs if r["task"] in same),
            "call_forms": totals(variant),
            "full_call_forms_same_tasks": totals([r for r in runs if r["task"] in same]),
        }

    split_of = {t["id"]: t["split"] for t in tasks}
    ablation = {  # solved of runs, and the full harness on the same tasks (a variant may be part-way)
        v: {
            **ablation_row(variant),
            "per_split": {s: ablation_row([r for r in variant if split_of[r["task"]] == s]) for s in per_split},
        }
        for v in VARIANTS
        if v != "full"
        for variant in [[r for r in recs if r["agent"] == "herdsman" and r["variant"] == v]]
        if variant
    }
    return {
        "herdsman_solved": sum(r["solved"] for r in full["herdsman"]),
        "deepagents_solved": sum(r["solved"] for r in full["deepagents"]),
        "total": len(tasks),
        "herdsman_runs": len(full["herdsman"]),
        "deepagents_runs": len(full["deepagents"]),
        "per_category": per_category,
        "per_split": per_split,
        "dev_test_gap": gap,
        "chinese": chinese,
        "median_seconds": {a: median(a, "seconds") for a in full},
        "median_tool_calls": {a: median(a, "tool_calls") for a in full},
        "completion_checks_per_run": round(sum(r["completion_checks"] for r in runs) / len(runs), 2) if runs else None,
        "call_forms": {a: totals(rs) for a, rs in full.items()},
        "ablation": ablation,
    }


async def main_async(args: argparse.Namespace) -> None:
    """Run what is not in the results yet, then print the summary line."""
    from rich.console import Console
    from rich.progress import Progress

    tasks = load_tasks(args.only, args.split)
    results = Path(args.results)
    if args.fresh and results.exists():
        shutil.rmtree(results)
    results.mkdir(parents=True, exist_ok=True)
    log = results / "results.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    done = {(r["agent"], r["variant"], r["task"]) for r in records}
    variants = ["full"] + (
        list(VARIANTS)[1:] if args.ablate == "all" else [v for v in (args.ablate or "").split(",") if v]
    )
    todo: list[tuple[str, str, dict[str, Any]]] = []
    for agent in args.agents.split(","):
        for variant in variants if agent == "herdsman" else ["full"]:
            todo += [(agent, variant, t) for t in tasks if (agent, variant, t["id"]) not in done]
    order = {t["id"]: i for i, t in enumerate(tasks)}
    todo.sort(key=lambda item: order[item[2]["id"]])  # task by task: a run cut short still pairs its variants
    if args.report:
        print(json.dumps(summarize(records, tasks)))
        return
    models = Models()
    work = Path(tempfile.mkdtemp(prefix="agent-tasks-"))
    gate = asyncio.Semaphore(max(1, args.jobs))
    with Progress(console=Console(stderr=True)) as progress:
        bar = progress.add_task("agent tasks", total=len(todo))

        async def one(agent: str, variant: str, task: dict[str, Any]) -> None:
            async with gate:
                if agent == "herdsman":
                    record = await run_herdsman(task, variant, models, work, args.max_seconds)
                else:
                    record = await run_deepagents(task, models, work, args.max_seconds)
                records.append(record)
                with log.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                mark = "solved" if record["solved"] else "failed"
                progress.console.print(f"{agent}/{variant} {task['id']}: {mark} in {record['seconds']} s")
                progress.advance(bar)

        await asyncio.gather(*(one(*item) for item in todo))
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(summarize(records, tasks)))


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="all",
        help="the development or the held-out test tasks, or both",
    )
    parser.add_argument("--only", help="task ids or categories, comma-separated")
    parser.add_argument("--agents", default="herdsman,deepagents")
    parser.add_argument("--ablate", default="", help=f"variants to run too: all, or some of {list(VARIANTS)[1:]}")
    parser.add_argument("--jobs", type=int, default=1, help="tasks at once (the model still generates one at a time)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=600.0,
        help="time limit per task run (with --jobs > 1 it includes waiting for the model)",
    )
    parser.add_argument("--results", default=".herdsman/bench/agent_tasks")
    parser.add_argument("--fresh", action="store_true", help="forget earlier results")
    parser.add_argument(
        "--report", action="store_true", help="run nothing: print the summary of the results already there"
    )
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
