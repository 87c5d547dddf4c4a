"""``herdsman crons``: list, create and delete scheduled runs (the gateway's ``/runs/crons``).

A typer sub-app mounted by :mod:`herdsman.cli`. Like ``herdsman memory``, it opens the
gateway's crons database directly (``crons.sqlite`` in the home, or Postgres; no agent is
built), so it works while a gateway runs; the gateway's scheduler fires what it creates. A cron on a
thread belongs to the thread's owner; one without thread to the local user (auth off).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.runtime.crons.cron_schedule import ScheduleError, check_schedule, check_timezone, iso, parse_time
from herdsman.terminal_text import escape

if TYPE_CHECKING:  # imported when a command runs: every `herdsman` command imports this module
    from herdsman.runtime.crons.cron_store import CronStore
    from herdsman.runtime.storage.threads import ThreadStore

ASSISTANT = "lead_agent"  # the one graph the gateway serves (herdsman.agents.lead.LEAD_AGENT_NAME)

crons_app = typer.Typer(help="Scheduled runs: list, create and delete crons.", no_args_is_help=True)
console = Console()
err = Console(stderr=True)


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]Error:[/red] {escape(message)}")
    return typer.Exit(1)


def _opened(path: Path | None, action: Any) -> Any:
    """Run ``action(crons, threads)`` with the gateway's cron and thread stores open; clear errors exit 1."""
    from herdsman.runtime.crons.cron_store import open_cron_store
    from herdsman.runtime.storage.checkpointer import CheckpointerError
    from herdsman.runtime.storage.record_store import open_record_store
    from herdsman.runtime.storage.threads import ThreadStore

    config = load_or_exit(path).config
    if config.checkpointer.type == "memory":
        raise _fail(
            "checkpointer.type is memory, so crons live only inside a running gateway; "
            "use the API (POST /runs/crons) or set checkpointer.type: sqlite"
        )

    async def main() -> Any:
        async with AsyncExitStack() as stack:
            crons = await stack.enter_async_context(open_cron_store(config))
            threads = ThreadStore(await stack.enter_async_context(open_record_store(config)))
            return await action(crons, threads)

    try:
        return asyncio.run(main())
    except (CheckpointerError, ScheduleError) as exc:
        raise _fail(str(exc)) from None


def _when(value: str | None) -> str:
    return value[:16].replace("T", " ") + " UTC" if value else "-"


@crons_app.command("list")
def crons_list(config: ConfigOpt = None) -> None:
    """List every cron: schedule, where it runs, next run and how its last run ended."""

    async def action(crons: CronStore, threads: ThreadStore) -> list[tuple[dict, dict | None]]:
        from herdsman.runtime.crons.cron_store import SCAN_LIMIT

        found = await crons.search(limit=SCAN_LIMIT, sort_by="created_at", sort_order="asc")
        return [(c, next(iter(await crons.firings(c["cron_id"], limit=1)), None)) for c in found]

    rows = _opened(config, action)
    if not rows:
        console.print('No crons yet. Create one with: herdsman crons create "0 9 * * *" --message "..."')
        return
    table = Table("cron", "schedule", "runs on", "next run", "last run")
    for cron, last in rows:
        schedule = cron["schedule"] + (f" ({cron['timezone']})" if cron.get("timezone") else "")
        where = cron["thread_id"] or f"new thread ({cron.get('on_run_completed') or 'delete'})"
        nxt = _when(cron["next_run_date"]) if cron["enabled"] else "disabled"
        outcome = f"{last['status']} {_when(last['fired_at'])}" if last else "never"
        if last and last.get("error"):
            outcome += f": {last['error'][:60]}"
        table.add_row(*(escape(str(v)) for v in (cron["cron_id"], schedule, where, nxt, outcome)))
    console.print(table)


@crons_app.command("create")
def crons_create(
    schedule: Annotated[str, typer.Argument(help='Cron expression, e.g. "0 9 * * 1-5" (UTC unless --timezone).')],
    message: Annotated[str, typer.Option("--message", "-m", help="What the run asks the agent.")],
    thread: Annotated[
        Optional[str], typer.Option("--thread", "-t", help="Run on this thread; omit for a new thread each time.")
    ] = None,
    tz: Annotated[
        Optional[str], typer.Option("--timezone", help='IANA timezone of the schedule, e.g. "Europe/Paris".')
    ] = None,
    end_time: Annotated[Optional[str], typer.Option("--end-time", help="ISO-8601 time after which it stops.")] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Without --thread: keep each run's new thread.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Schedule a run of the lead agent with MESSAGE; the gateway fires it."""
    now = datetime.now(UTC)
    try:
        fields: dict[str, Any] = {"schedule": check_schedule(schedule), "timezone": check_timezone(tz)}
        end = parse_time(end_time)
    except ScheduleError as exc:
        raise _fail(str(exc)) from None
    if end is not None and end <= now:
        raise _fail(f"--end-time {end_time} is in the past; give a later time or omit it")
    if thread and keep:
        raise _fail("--keep is for crons without --thread (a thread's runs always stay on it)")
    payload = {"assistant_id": ASSISTANT, "input": {"messages": [{"role": "user", "content": message}]}}

    async def action(crons: CronStore, threads: ThreadStore) -> dict:
        owner = None
        if thread is not None:
            record = await threads.get(thread)
            if record is None:
                raise _fail(f"no thread {thread!r}; see 'herdsman threads list'")
            owner = record.metadata.get("owner")
            payload["multitask_strategy"] = "enqueue"
        return await crons.create(
            {
                **fields,
                "end_time": iso(end),
                "assistant_id": ASSISTANT,
                "thread_id": thread,
                "user_id": owner,
                "on_run_completed": None if thread else ("keep" if keep else "delete"),
                "payload": payload,
            },
            now,
        )

    cron = _opened(config, action)
    console.print(
        f"Created cron [bold]{escape(cron['cron_id'])}[/bold]; next run {_when(cron['next_run_date'])}", highlight=False
    )


@crons_app.command("delete")
def crons_delete(cron_id: str, config: ConfigOpt = None) -> None:
    """Delete a cron and its firing records (runs it started stay on their threads)."""

    async def action(crons: CronStore, threads: ThreadStore) -> bool:
        return await crons.delete(cron_id)

    if not _opened(config, action):
        raise _fail(f"no cron {cron_id!r}; see 'herdsman crons list'")
    console.print(f"Deleted cron {escape(cron_id)}", highlight=False)
