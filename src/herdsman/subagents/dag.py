"""Plans of tasks with dependencies (a DAG): validation and the order they may start in.

Pure functions; :mod:`herdsman.subagents.tools` runs the plan. A task starts when every task it
depends on has finished, and receives their results in its prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field


class PlanTask(BaseModel):
    """One task of a plan."""

    id: str = Field(..., min_length=1, description="A short id, unique in the plan, e.g. 'research'.")
    description: str = Field(..., description="A few words for the user, e.g. 'Collect sources'.")
    prompt: str = Field(..., description="Everything the sub-agent needs to do this task.")
    subagent_type: str = Field("general-purpose", description="Which kind of sub-agent does it.")
    depends_on: list[str] = Field(default_factory=list, description="Ids of tasks that must finish first.")


class PlanError(ValueError):
    """A plan that cannot run: duplicate or unknown ids, or a cycle."""


def validate_plan(tasks: Sequence[PlanTask]) -> list[list[str]]:
    """The plan's levels (tasks in one level can run together), or :class:`PlanError`."""
    if not tasks:
        raise PlanError("the plan has no tasks")
    ids = [t.id for t in tasks]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise PlanError(f"task ids must be unique; repeated: {dupes}")
    known = set(ids)
    for t in tasks:
        unknown = [d for d in t.depends_on if d not in known]
        if unknown:
            raise PlanError(f"task {t.id!r} depends on unknown task(s) {unknown}; known ids: {ids}")
        if t.id in t.depends_on:
            raise PlanError(f"task {t.id!r} depends on itself")
    remaining = {t.id: set(t.depends_on) for t in tasks}
    levels: list[list[str]] = []
    while remaining:
        ready = sorted(i for i, deps in remaining.items() if not deps)
        if not ready:
            raise PlanError(f"the plan has a cycle among tasks {sorted(remaining)}; remove a depends_on to break it")
        levels.append(ready)
        for i in ready:
            del remaining[i]
        for deps in remaining.values():
            deps.difference_update(ready)
    return levels


def prompt_with_dependencies(task: PlanTask, results: dict[str, str]) -> str:
    """``task``'s prompt followed by the results of the tasks it depends on."""
    if not task.depends_on:
        return task.prompt
    parts = [task.prompt, "", "Results of the tasks this one depends on:"]
    for dep in task.depends_on:
        parts += [f"<result task={dep!r}>", results.get(dep, "(no result)"), "</result>"]
    return "\n".join(parts)
