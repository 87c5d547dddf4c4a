"""``herdsman agents``: list, create, edit and delete custom agents on the local home.

A typer sub-app mounted by :mod:`herdsman.cli`. Custom agents are the gateway's assistants
(:mod:`herdsman.runtime.storage.assistants`), read and written in the same record store
(``<home>/gateway.sqlite`` by default, or Postgres), so an agent made here is one the gateway, the
web UI and the SDK see, and the reverse. Agents made here have no owner: with
``gateway.api_keys`` set, only agents created through the API belong to a key's user.
``herdsman run --agent NAME`` and ``herdsman chat --agent NAME`` use one.

The agent, middleware and record-store modules (LangChain, LangGraph) are imported inside the
commands that use them: every ``herdsman`` command loads this sub-app, and most never touch agents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.terminal_text import escape

if TYPE_CHECKING:
    from herdsman.agents.profile import KnownNames
    from herdsman.config.schema import HerdsmanConfig
    from herdsman.runtime.storage.assistants import AssistantRecord, AssistantStore

agents_app = typer.Typer(help="List, create, edit and delete custom agents (assistants).", no_args_is_help=True)
console = Console()
err = Console(stderr=True)
T = TypeVar("T")

DescriptionOpt = Annotated[Optional[str], typer.Option("--description", "-d", help="What the agent is for.")]
InstructionsOpt = Annotated[
    Optional[str], typer.Option("--instructions", "-i", help="Its own instructions (its role).")
]
InstructionsFileOpt = Annotated[
    Optional[Path], typer.Option("--instructions-file", help="Read the instructions from a file.")
]
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="A model name from config.yaml.")]
SkillOpt = Annotated[Optional[list[str]], typer.Option("--skill", help="A skill it may use (repeat; none: all).")]
ToolOpt = Annotated[Optional[list[str]], typer.Option("--tool", help="A tool it may use (repeat; none: all).")]
SubagentOpt = Annotated[Optional[list[str]], typer.Option("--subagent", help="A sub-agent type it may use (repeat).")]
NoDelegationOpt = Annotated[bool, typer.Option("--no-delegation", help="It never delegates to sub-agents.")]
MaxStepsOpt = Annotated[Optional[int], typer.Option("--max-steps", help="Model calls per run before it stops.")]


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]Error:[/red] {escape(message)}")
    return typer.Exit(1)


def with_agents(config: HerdsmanConfig, work: Callable[[AssistantStore], Awaitable[T]]) -> T:
    """Run ``work`` on the agents of the local home's record store."""
    from herdsman.runtime.storage.assistants import AssistantStore
    from herdsman.runtime.storage.record_store import open_record_store

    if config.checkpointer.type == "memory":
        raise _fail("custom agents are kept in the gateway's database; set checkpointer.type to sqlite or postgres")

    async def main() -> T:
        async with open_record_store(config) as store:
            return await work(AssistantStore(store))

    return asyncio.run(main())


async def find_agent(agents: AssistantStore, name: str) -> AssistantRecord:
    """The agent whose id or name is ``name`` (exits with a clear message when none or several are)."""
    from herdsman.agents.lead import LEAD_AGENT_NAME

    if name == LEAD_AGENT_NAME:
        raise _fail(
            f"{LEAD_AGENT_NAME} is the built-in agent and cannot be changed; create your own with "
            "'herdsman agents create'"
        )
    found = await agents.get(name)
    if found is not None:
        return found
    named = [a for a in await agents.all() if a.name == name]
    if len(named) == 1:
        return named[0]
    if named:
        raise _fail(
            f"{len(named)} agents are named {name!r}; give its id instead: {', '.join(a.assistant_id for a in named)}"
        )
    raise _fail(f"no agent {name!r}; see 'herdsman agents list'")


def load_agent(config: HerdsmanConfig, name: str) -> AssistantRecord:
    """The agent ``name`` (id or name) of the local home (for ``run``/``chat --agent``)."""
    return with_agents(config, lambda agents: find_agent(agents, name))


def settings_from(
    base: dict[str, Any],
    instructions: str | None,
    instructions_file: Path | None,
    model: str | None,
    skills: list[str] | None,
    tools: list[str] | None,
    subagents: list[str] | None,
    no_delegation: bool,
    max_steps: int | None,
) -> dict[str, Any]:
    """``base`` with the settings given on the command line (the others kept)."""
    from herdsman.middleware.agent_profile import INSTRUCTIONS, MAX_STEPS, SKILLS, SUBAGENT_TYPES, TOOLS
    from herdsman.middleware.model_selection import CONFIG_KEY as MODEL

    settings = dict(base)
    if instructions_file is not None:
        try:
            instructions = instructions_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise _fail(f"cannot read --instructions-file {instructions_file}: {exc.strerror}") from None
    given = {
        INSTRUCTIONS: instructions,
        MODEL: model,
        SKILLS: skills or None,
        TOOLS: tools or None,
        SUBAGENT_TYPES: [] if no_delegation else (subagents or None),
        MAX_STEPS: max_steps,
    }
    settings.update({k: v for k, v in given.items() if v is not None})
    return settings


def checked(known: KnownNames, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` when the agent can use them, else exit naming the bad setting and the valid values."""
    from herdsman.agents.profile import ProfileError, check_profile

    try:
        check_profile(settings, known, where="agent")
    except ProfileError as exc:
        raise _fail(str(exc)) from None
    return settings


@agents_app.command("list")
def agents_list(config: ConfigOpt = None) -> None:
    """List the custom agents, newest first (the built-in lead_agent is always there too)."""
    from herdsman.agents.lead import LEAD_AGENT_NAME
    from herdsman.middleware.model_selection import CONFIG_KEY as MODEL
    from herdsman.runtime.storage.assistants import search_assistants

    loaded = load_or_exit(config).config
    agents = with_agents(loaded, lambda store: store.all())
    table = Table("id", "name", "version", "model", "description")
    table.add_row(LEAD_AGENT_NAME, LEAD_AGENT_NAME, "-", loaded.lead_model_name(), "built in")
    for a in search_assistants(agents):
        table.add_row(
            a.assistant_id,
            escape(a.name),
            str(a.version),
            escape(str(a.context.get(MODEL) or "(default)")),
            escape(a.description or ""),
        )
    console.print(table)


@agents_app.command("create")
def agents_create(
    name: Annotated[str, typer.Argument(help="The agent's name.")],
    description: DescriptionOpt = None,
    instructions: InstructionsOpt = None,
    instructions_file: InstructionsFileOpt = None,
    model: ModelOpt = None,
    skill: SkillOpt = None,
    tool: ToolOpt = None,
    subagent: SubagentOpt = None,
    no_delegation: NoDelegationOpt = False,
    max_steps: MaxStepsOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create a custom agent; prints its id."""
    from herdsman.agents.lead import LEAD_AGENT_NAME
    from herdsman.agents.profile import local_known_names

    loaded = load_or_exit(config).config
    settings = checked(
        local_known_names(loaded),
        settings_from({}, instructions, instructions_file, model, skill, tool, subagent, no_delegation, max_steps),
    )
    made = with_agents(
        loaded,
        lambda store: store.create(graph_id=LEAD_AGENT_NAME, name=name, context=settings, description=description),
    )
    console.print(
        f"Created agent [bold]{escape(made.name)}[/bold] {made.assistant_id}; "
        f"use it with: herdsman chat --agent {made.assistant_id}",
        soft_wrap=True,
        highlight=False,
    )


@agents_app.command("edit")
def agents_edit(
    agent: Annotated[str, typer.Argument(help="The agent's id or name.")],
    name: Annotated[Optional[str], typer.Option("--name", help="A new name.")] = None,
    description: DescriptionOpt = None,
    instructions: InstructionsOpt = None,
    instructions_file: InstructionsFileOpt = None,
    model: ModelOpt = None,
    skill: SkillOpt = None,
    tool: ToolOpt = None,
    subagent: SubagentOpt = None,
    no_delegation: NoDelegationOpt = False,
    max_steps: MaxStepsOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Change an agent (a new version); options not given keep their values."""
    from herdsman.agents.profile import local_known_names

    loaded = load_or_exit(config).config
    known = local_known_names(loaded)

    async def edit(store: AssistantStore) -> AssistantRecord | None:
        current = await find_agent(store, agent)
        settings = checked(
            known,
            settings_from(
                current.context, instructions, instructions_file, model, skill, tool, subagent, no_delegation, max_steps
            ),
        )
        return await store.update(current.assistant_id, context=settings, name=name, description=description)

    record = with_agents(loaded, edit)
    if record is None:
        raise _fail(f"agent {agent!r} was deleted meanwhile")
    console.print(f"Agent [bold]{escape(record.name)}[/bold] is now at version {record.version}", highlight=False)


@agents_app.command("delete")
def agents_delete(
    agent: Annotated[str, typer.Argument(help="The agent's id or name.")], config: ConfigOpt = None
) -> None:
    """Delete an agent and all its versions (its threads stay)."""
    loaded = load_or_exit(config).config

    async def delete(store: AssistantStore) -> AssistantRecord:
        found = await find_agent(store, agent)
        await store.delete(found.assistant_id)
        return found

    gone = with_agents(loaded, delete)
    console.print(f"Deleted agent [bold]{escape(gone.name)}[/bold] {gone.assistant_id}", highlight=False)
