"""``herdsman skills proposals``: list, show, accept (optionally edited) or decline the skills
proposed from runs that worked (``skills.learning``; :mod:`herdsman.skills.learning`).

Without ``--user`` these are the local user's proposals (runs of ``herdsman run`` / ``chat`` and of
a gateway without API keys), installed for everyone on accept; with ``--user`` one gateway user's,
installed as their own skill.
"""

from __future__ import annotations

from typing import Annotated, Optional

import click
import typer
from rich.console import Console
from rich.table import Table

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.skills.archive import PackageError
from herdsman.skills.learning.store import Proposal, ProposalError, ProposalStore
from herdsman.skills.model import SKILL_FILE, SkillError
from herdsman.terminal_text import escape

proposals_app = typer.Typer(
    help="Skills proposed from runs that worked: list (the default), show, accept or decline them.",
    invoke_without_command=True,
)
console = Console()
err = Console(stderr=True)

UserOpt = Annotated[
    Optional[str], typer.Option("--user", "-u", help="One gateway user's proposals; default the local user's.")
]


def _store(config: ConfigOpt) -> ProposalStore:
    return ProposalStore.of(load_or_exit(config).config)


def _get(store: ProposalStore, user: str | None, name: str) -> Proposal:
    try:
        return store.get(user, name)
    except ProposalError as exc:
        err.print(f"[red]Error:[/red] {escape(str(exc))} (herdsman skills proposals)")
        raise typer.Exit(1) from None


@proposals_app.callback()
def proposals_default(ctx: typer.Context, user: UserOpt = None, config: ConfigOpt = None) -> None:
    """List the proposals, newest first (``herdsman skills proposals`` alone)."""
    if ctx.invoked_subcommand is None:
        proposals_list(user, config)


@proposals_app.command("list")
def proposals_list(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """List the proposals, newest first."""
    loaded = load_or_exit(config).config
    found = ProposalStore.of(loaded).list(user)
    if not loaded.skills.learning.enabled:
        console.print(
            "[yellow]Skill learning is off (skills.learning.enabled: false); no new proposals are made.[/yellow]"
        )
    if not found:
        console.print("No skill proposals. After a run that worked, one shows here when skills.learning is on.")
        return
    table = Table("name", "parameters", "proposed", "learned from")
    for p in found:
        table.add_row(p.name, ", ".join(x["name"] for x in p.parameters), p.created_at, escape(p.request[:80]))
    console.print(table)
    console.print("Review one with: herdsman skills proposals show NAME; then accept NAME [--edit] or decline NAME")


@proposals_app.command("show")
def proposals_show(name: str, user: UserOpt = None, config: ConfigOpt = None) -> None:
    """Print a proposal: what it was learned from, what to review, its SKILL.md and scripts."""
    proposal = _get(_store(config), user, name)
    console.print(f"[bold]{escape(proposal.name)}[/bold] proposed {proposal.created_at}")
    console.print(f"  learned from: {escape(proposal.request)}")
    for note in proposal.review:
        console.print(f"  [yellow]review:[/yellow] {escape(note)}")
    if proposal.env:
        console.print(f"  reads secrets: {escape(', '.join(proposal.env))}")
    for rel, text in proposal.files().items():
        console.print(f"\n[bold]--- {escape(rel)}[/bold]")
        console.print(escape(text), highlight=False, markup=False)


@proposals_app.command("accept")
def proposals_accept(
    name: str,
    edit: Annotated[bool, typer.Option("--edit", help="Edit the SKILL.md in $EDITOR first.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a skill of the same name.")] = False,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Install the proposal as a skill (checked as any install is); later threads can use it."""
    store = _store(config)
    proposal = _get(store, user, name)
    content = None
    if edit:
        content = click.edit(proposal.files()[SKILL_FILE], extension=".md", require_save=True)
        if content is None:
            console.print("No change made in the editor; accepting the proposal as it is.")
    try:
        done = store.accept(user, name, content, replace=replace)
    except (ProposalError, PackageError, SkillError) as exc:
        err.print(f"[red]Refused:[/red] {escape(str(exc))}; nothing was installed, the proposal is kept")
        raise typer.Exit(1) from None
    who = f"for user {user}" if user else "for everyone"
    console.print(f"[green]installed[/green] {escape(done.skill.name)} {who}; use it with /{done.skill.name}")


@proposals_app.command("decline")
def proposals_decline(name: str, user: UserOpt = None, config: ConfigOpt = None) -> None:
    """Forget the proposal."""
    store = _store(config)
    try:
        store.decline(user, name)
    except ProposalError as exc:
        err.print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    console.print(f"[green]declined[/green] {escape(name)}")
