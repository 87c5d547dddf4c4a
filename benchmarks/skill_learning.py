"""Skill learning: does a skill learned from the first task of a family help with the next three?

Five families of four similar tasks (:data:`FAMILIES`): sum a column of a CSV into JSON, keep the
log lines of one level, convert JSON records to CSV with chosen columns, count a word in a text,
keep the CSV rows whose column has a value. The tasks of a family differ in their files, columns,
levels and words; each is checked by a program that reads the output the request names.

Each family runs twice, each task in a new thread of one user (``bench``):

- ``off``: skill learning off, no skills installed: every task from scratch;
- ``on``: after task 1, the run is drafted into a proposal (``skills.learning``, the same code the
  gateway runs after a run that worked) and accepted, as the user would; tasks 2-4 then run with
  that skill installed as the user's own. ``--invoke slash`` (default) starts tasks 2-4 with
  ``/name``, as the user who accepted the skill would; ``--invoke auto`` leaves the pick to the
  harness (``skills.auto_select: activate``, and the prompt's list of the user's skills), which
  also applies to task 1 of the later families: the dry mode shows it activating the CSV-sum skill
  for the JSON-to-CSV task (they share "column", "csv", "json"), so ``auto`` measures that pick too.

Printed as one JSON line: for each mode, the solved rate and median seconds of tasks 2-4 over all
families (and per family), plus what was learned (name, parameters) and each task's result:
``{"benchmark", "model", "invoke", "off": {"solved_rate", "median_seconds", "families"},
"on": {...}, "learned": {family: {name, parameters} | null}, "tasks": [...]}``.

    python benchmarks/skill_learning.py [--model embedded|scripted] [--invoke slash|auto] [--only FAMILY,...]
        [--max-steps 12]

``--model embedded`` (the default) runs the embedded model with the default configuration (the
``small`` profile, the completion check): slow, and it takes the machine's generation lock, so it
is run by hand. ``--model scripted`` is the dry mode that tests the pipeline: a scripted model that
solves a task by writing and running a script, or, when a learned skill is active, by running the
skill's bash block with the new values; it measures the plumbing, not a model.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchkit.model_cli import model_run_parser, print_figures
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

REPO = Path(__file__).resolve().parents[1]
USER = "bench"
UP, OUT = "/mnt/user-data/uploads", "/mnt/user-data/outputs"


@dataclass(frozen=True)
class Task:
    """One task: its request, the files to upload (virtual path -> text), its values (name ->
    value, as the request gives them) and the check of its output."""

    request: str
    uploads: dict[str, str]
    values: dict[str, str]
    check: Callable[[Callable[[str], str]], bool]


@dataclass(frozen=True)
class Family:
    """Four similar tasks and the script that solves one (the dry mode's model writes it)."""

    name: str
    tasks: tuple[Task, ...]
    solve: Callable[[Task], str]


def _read_json(read: Callable[[str], str], path: str) -> Any:
    return json.loads(read(path))


def _csv_sum(i: int, rows: list[tuple[str, float]], column: str) -> Task:
    name, out = f"{UP}/ledger{i}.csv", f"{OUT}/total{i}.json"
    text = f"item,{column},note\n" + "".join(f"{a},{b},x\n" for a, b in rows)
    total = round(sum(b for _, b in rows), 2)
    return Task(
        f"Sum the column '{column}' of {name} and write {{\"total\": <the sum>}} as JSON to {out}",
        {name: text},
        {"input": name, "column": column, "output": out},
        lambda read: abs(float(_read_json(read, out)["total"]) - total) < 1e-6,
    )


def _solve_csv_sum(t: Task) -> str:
    v = t.values
    return (
        "import csv, json\n"
        f"rows = list(csv.DictReader(open('{v['input']}', encoding='utf-8')))\n"
        f"total = round(sum(float(r['{v['column']}']) for r in rows), 2)\n"
        f"json.dump({{'total': total}}, open('{v['output']}', 'w'))\n"
    )


LEVELS = ("INFO", "WARN", "ERROR", "DEBUG")


def _log_task(i: int, level: str) -> Task:
    name, out = f"{UP}/service{i}.log", f"{OUT}/{level.lower()}{i}.txt"
    lines = [f"2025-01-0{n % 9 + 1} 10:0{n % 10}:00 {LEVELS[(n * (i + 1)) % 4]} event {n}" for n in range(40)]
    wanted = [line for line in lines if line.split()[2] == level]
    return Task(
        f"Write the lines of {name} whose level is {level} to {out}, in their order",
        {name: "\n".join(lines) + "\n"},
        {"input": name, "level": level, "output": out},
        lambda read: read(out).splitlines() == wanted,
    )


def _solve_log(t: Task) -> str:
    v = t.values
    return (
        f"lines = open('{v['input']}', encoding='utf-8').read().splitlines()\n"
        f"keep = [line for line in lines if line.split()[2] == '{v['level']}']\n"
        f"open('{v['output']}', 'w').write(''.join(line + '\\n' for line in keep))\n"
    )


def _records_task(i: int, columns: tuple[str, str]) -> Task:
    name, out = f"{UP}/people{i}.json", f"{OUT}/people{i}.csv"
    records = [{"name": f"p{n}", "age": 20 + n + i, "city": f"c{n % 3}", "team": f"t{n % 2}"} for n in range(6)]
    a, b = columns

    def check(read: Callable[[str], str]) -> bool:
        rows = list(csv.reader(io.StringIO(read(out))))
        return rows == [[a, b]] + [[str(r[a]), str(r[b])] for r in records]

    return Task(
        f"Convert the JSON records in {name} to CSV with the columns '{a}' and '{b}' (a header row first) in {out}",
        {name: json.dumps(records)},
        {"input": name, "first": a, "second": b, "output": out},
        check,
    )


def _solve_records(t: Task) -> str:
    v = t.values
    return (
        "import csv, json\n"
        f"records = json.load(open('{v['input']}', encoding='utf-8'))\n"
        f"with open('{v['output']}', 'w', newline='') as out:\n"
        "    w = csv.writer(out)\n"
        f"    w.writerow(['{v['first']}', '{v['second']}'])\n"
        f"    w.writerows([r['{v['first']}'], r['{v['second']}']] for r in records)\n"
    )


def _count_task(i: int, word: str) -> Task:
    name, out = f"{UP}/story{i}.txt", f"{OUT}/count{i}.txt"
    words = ["river", "stone", "lamp", "field", "river", "Stone", "lamp", "lamp"] * (i + 2)
    text = " ".join(words) + ".\n"
    expected = sum(1 for w in re.findall(r"[A-Za-z]+", text) if w.lower() == word)
    return Task(
        f"Count how many times the word '{word}' appears in {name}, ignoring case, and write the number to {out}",
        {name: text},
        {"input": name, "word": word, "output": out},
        lambda read: read(out).strip() == str(expected),
    )


def _solve_count(t: Task) -> str:
    v = t.values
    return (
        "import re\n"
        f"text = open('{v['input']}', encoding='utf-8').read()\n"
        f"n = sum(1 for w in re.findall(r'[A-Za-z]+', text) if w.lower() == '{v['word']}')\n"
        f"open('{v['output']}', 'w').write(str(n))\n"
    )


def _filter_task(i: int, column: str, value: str) -> Task:
    name, out = f"{UP}/orders{i}.csv", f"{OUT}/orders_{value}{i}.csv"
    rows = [
        {"id": str(n), "region": ("north", "south", "east")[n % 3], "status": ("open", "paid")[n % 2]}
        for n in range(12)
    ]
    text = "id,region,status\n" + "".join(f"{r['id']},{r['region']},{r['status']}\n" for r in rows)
    wanted = [["id", "region", "status"]] + [[r["id"], r["region"], r["status"]] for r in rows if r[column] == value]
    return Task(
        f"Keep the rows of {name} whose '{column}' is {value} (with the header row) and write them as CSV to {out}",
        {name: text},
        {"input": name, "column": column, "value": value, "output": out},
        lambda read: list(csv.reader(io.StringIO(read(out)))) == wanted,
    )


def _solve_filter(t: Task) -> str:
    v = t.values
    return (
        "import csv\n"
        f"rows = list(csv.reader(open('{v['input']}', encoding='utf-8')))\n"
        f"at = rows[0].index('{v['column']}')\n"
        f"keep = [rows[0]] + [r for r in rows[1:] if r[at] == '{v['value']}']\n"
        f"csv.writer(open('{v['output']}', 'w', newline='')).writerows(keep)\n"
    )


FAMILIES: tuple[Family, ...] = (
    Family(
        "csv-sum",
        (
            _csv_sum(1, [("a", 2.5), ("b", 4.0), ("c", 1.25)], "amount"),
            _csv_sum(2, [("a", 10.0), ("b", 5.5)], "price"),
            _csv_sum(3, [("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)], "weight"),
            _csv_sum(4, [("a", 7.75), ("b", 0.25)], "cost"),
        ),
        _solve_csv_sum,
    ),
    Family(
        "log-level", tuple(_log_task(i, lv) for i, lv in enumerate(("ERROR", "WARN", "INFO", "ERROR"), 1)), _solve_log
    ),
    Family(
        "json-to-csv",
        tuple(
            _records_task(i, c)
            for i, c in enumerate((("name", "age"), ("city", "name"), ("team", "age"), ("name", "city")), 1)
        ),
        _solve_records,
    ),
    Family(
        "word-count",
        tuple(_count_task(i, w) for i, w in enumerate(("lamp", "river", "stone", "field"), 1)),
        _solve_count,
    ),
    Family(
        "csv-filter",
        tuple(
            _filter_task(i, c, v)
            for i, (c, v) in enumerate(
                (("region", "north"), ("status", "paid"), ("region", "east"), ("status", "open")), 1
            )
        ),
        _solve_filter,
    ),
)


def scripted_model(families: Sequence[Family]) -> Any:
    """The dry mode's model (see the module docstring): knows each task by its request."""
    from herdsman.models.scripted import ScriptedChatModel

    by_request = {t.request: (f, t) for f in families for t in f.tasks}

    def call(name: str, args: dict[str, Any]) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{uuid.uuid4().hex[:8]}"}])

    def respond(messages: list[BaseMessage]) -> Any:
        start = max(i for i, m in enumerate(messages) if m.type == "human")
        said = re.sub(r"^/\S+\s+", "", messages[start].text)  # the harness may add notes after the request
        family, task = next(ft for request, ft in by_request.items() if said.startswith(request))
        done = [m for m in messages[start:] if m.type == "tool"]
        system = messages[0].text if messages and messages[0].type == "system" else ""
        block = re.search(r"<active_skill .*?```bash\n(.*?)```", system, re.DOTALL)
        if block is not None:
            if done:
                return "Done."
            first = {v: k for k, v in family.tasks[0].values.items()}
            lines = []
            for line in block.group(1).splitlines():
                assign = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line)
                if assign and (old := assign.group(2).strip("'")) in first:
                    line = f"{assign.group(1)}={task.values[first[old]]}"
                lines.append(line)
            return call("bash", {"command": "\n".join(lines)})
        if not done:
            return call("write_file", {"path": "/mnt/user-data/workspace/solve.py", "content": family.solve(task)})
        if len(done) == 1:
            return call("bash", {"command": "python3 /mnt/user-data/workspace/solve.py"})
        return "Done."

    return ScriptedChatModel(respond=respond)


def bench_config(home: Path, skills_root: Path, model: str, learning: bool, max_steps: int, invoke: str) -> Any:
    """The default configuration in ``home`` with ``skills_root``; ``skills.auto_select`` activates
    the best-fitting skill for ``--invoke auto`` and is off for ``slash`` (task 1 from scratch); the
    dry mode's scripted answers are final as written (no completion check)."""
    from herdsman.config.schema import HerdsmanConfig

    lead: dict[str, Any] = {"max_steps": max_steps, "model_retries": 0}
    if model == "scripted":
        lead["verify_rounds"] = 0
    return HerdsmanConfig.model_validate(
        {
            "home": str(home),
            "checkpointer": {"type": "memory"},
            "lead": lead,
            "title": {"enabled": False},
            "sandbox": {"allow_unisolated_bash": True},
            "skills": {
                "path": str(skills_root),
                "auto_select": "activate" if invoke == "auto" else "off",
                "learning": {"enabled": learning},
            },
        }
    )


@dataclass
class ModeRun:
    """What one mode did: each task's result, and what it learned per family."""

    tasks: list[dict[str, Any]] = field(default_factory=list)
    learned: dict[str, Any] = field(default_factory=dict)


async def run_mode(mode: str, families: Sequence[Family], model: str, invoke: str, max_steps: int) -> ModeRun:
    """Every family's four tasks in ``mode`` (``on``/``off``), each in a new thread of :data:`USER`."""
    from langgraph.checkpoint.memory import InMemorySaver

    from herdsman.agents.lead import create_lead_agent, run_config
    from herdsman.runtime.runs.skill_learning import SkillLearner
    from herdsman.sandbox.owners import record_owner
    from herdsman.sandbox.provider import build_sandbox_provider

    out = ModeRun()
    with tempfile.TemporaryDirectory(prefix=f"skill-learning-{mode}-") as tmp:
        root = Path(tmp) / "skills"
        (root / "public").mkdir(parents=True)
        config = bench_config(Path(tmp) / "home", root, model, mode == "on", max_steps, invoke)
        provider = build_sandbox_provider(config)
        try:
            lead = scripted_model(families) if model == "scripted" else None
            agent = create_lead_agent(config, model=lead, checkpointer=InMemorySaver(), sandbox_provider=provider)
            learner = SkillLearner(config)
            for family in families:
                skill: str | None = None
                for index, task in enumerate(family.tasks, 1):
                    thread = f"{family.name}-{index}-{mode}-{uuid.uuid4().hex[:6]}"
                    record_owner(config.resolve_home(), thread, USER)
                    sandbox = provider.acquire(thread)
                    for path, text in task.uploads.items():
                        sandbox.write_text(path, text)
                    cfg = run_config(config, thread)
                    cfg["configurable"]["user_id"] = USER
                    text = f"/{skill} {task.request}" if skill and invoke == "slash" and index > 1 else task.request
                    started = time.monotonic()
                    error = None
                    try:
                        await agent.ainvoke({"messages": [HumanMessage(content=text)]}, cfg)
                    except Exception as exc:  # noqa: BLE001 - a task that fails counts as unsolved
                        error = str(exc)[:200]
                    seconds = time.monotonic() - started
                    values = (await agent.aget_state(cfg)).values
                    try:
                        solved = bool(task.check(sandbox.read_text))
                    except Exception:  # noqa: BLE001 - a missing or malformed output is unsolved
                        solved = False
                    active = (values.get("active_skill") or {}).get("name")
                    out.tasks.append(
                        {
                            "family": family.name,
                            "task": index,
                            "mode": mode,
                            "solved": solved,
                            "seconds": round(seconds, 2),
                            "skill": active,
                            "error": error,
                        }
                    )
                    print(
                        f"{mode} {family.name} {index}: solved={solved} {seconds:.1f}s skill={active}", file=sys.stderr
                    )
                    if mode == "on" and index == 1:
                        proposal = learner.propose(values, USER, thread)
                        if proposal is not None:
                            skill = learner.store.accept(USER, proposal.name).skill.name
                            out.learned[family.name] = {
                                "name": skill,
                                "parameters": [p["name"] for p in proposal.parameters],
                            }
                        else:
                            out.learned[family.name] = None
        finally:
            provider.close()
    return out


def summary(tasks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Solved rate and median seconds of tasks 2-4, overall and per family."""
    later = [t for t in tasks if t["task"] > 1]

    def figures(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if not items:
            return {"solved_rate": None, "median_seconds": None, "tasks": 0}
        return {
            "solved_rate": round(sum(t["solved"] for t in items) / len(items), 3),
            "median_seconds": round(statistics.median(t["seconds"] for t in items), 2),
            "tasks": len(items),
        }

    names = list(dict.fromkeys(t["family"] for t in later))
    return {**figures(later), "families": {n: figures([t for t in later if t["family"] == n]) for n in names}}


async def run(model: str, invoke: str, only: str | None, max_steps: int) -> dict[str, Any]:
    """Both modes over the selected families; the figures as one dict."""
    wanted = set(only.split(",")) if only else None
    families = [f for f in FAMILIES if wanted is None or f.name in wanted]
    off = await run_mode("off", families, model, invoke, max_steps)
    on = await run_mode("on", families, model, invoke, max_steps)
    return {
        "benchmark": "skill_learning",
        "model": model,
        "invoke": invoke,
        "families": [f.name for f in families],
        "off": summary(off.tasks),
        "on": summary(on.tasks),
        "learned": on.learned,
        "tasks": off.tasks + on.tasks,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments, run, print the JSON line."""
    args = model_run_parser(
        __doc__,
        "--invoke",
        choices=("auto", "slash"),
        default="slash",
        help="how tasks 2-4 reach the learned skill: /name (default) or the harness picks it",
        items="families",
        each="a task",
        max_steps=12,
    ).parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    print_figures(asyncio.run(run(args.model, args.invoke, args.only, args.max_steps)))


if __name__ == "__main__":
    main()
