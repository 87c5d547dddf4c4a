"""``herdsman memory``: list, edit, delete, export and purge what the agent remembers; the graph
(end, correct or delete a relation, show or delete an entity), the audit trail, the user's off
switch, retention; see the queue.

A typer sub-app mounted by :mod:`herdsman.cli`. It opens the configured memory store directly
(no agent is built), so it also works while a gateway is running on the same SQLite file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.config.schema import HerdsmanConfig
from herdsman.memory.audit import Origin, records
from herdsman.memory.backend import MemoryStoreError, close_store, memory_db_path, open_store
from herdsman.memory.facts import CATEGORIES
from herdsman.memory.governance import EditRefused, correct_relation, end_relation, export_user, graph_json, purge_user
from herdsman.memory.graph import GraphStore
from herdsman.memory.queue import UpdateQueue
from herdsman.memory.recall import GraphView, describe, relation_line
from herdsman.memory.retention import scheduled, sweep
from herdsman.memory.store import MemoryStore, user_label
from herdsman.terminal_text import escape

CLI = Origin("cli")

memory_app = typer.Typer(help="View, edit, delete and export long-term memory.", no_args_is_help=True)
console = Console()
err = Console(stderr=True)

UserOpt = Annotated[Optional[str], typer.Option("--user", "-u", help="Whose memory; default memory.user_id.")]


def _config(path: Path | None) -> HerdsmanConfig:
    return load_or_exit(path).config


class _Opened:
    """The memory store of a config, closed on exit; errors become a clear message and exit 1."""

    def __init__(self, config: HerdsmanConfig) -> None:
        self.config = config

    def __enter__(self) -> MemoryStore:
        try:
            self._raw = open_store(self.config)
        except MemoryStoreError as exc:
            err.print(f"[red]Error:[/red] {escape(str(exc))}")
            raise typer.Exit(1) from None
        return MemoryStore(self._raw)

    def __exit__(self, *exc: object) -> None:
        close_store(self._raw)


def _cells(*values: object) -> list[str]:
    """Table cells from values read from the store (keys, ids and text a model or a client wrote):
    controls stripped and rich markup escaped, None shown as empty."""
    return [escape("" if v is None else str(v)) for v in values]


def _shown(value: str) -> str:
    """A user id or key quoted for a message, safe to print (see :func:`_cells`)."""
    return escape(repr(value))


def _user(config: HerdsmanConfig, user: str | None) -> str:
    return user or config.memory.user_id


@memory_app.command("list")
def memory_list(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """List the facts remembered about a user, strongest first, and the context summary."""
    cfg = _config(config)
    uid = _user(cfg, user)
    with _Opened(cfg) as store:
        facts, summary, users, on = store.facts(uid), store.summary(uid), store.users(), store.enabled_for(uid)
    if not cfg.memory.enabled:
        console.print("[yellow]Memory is off (memory.enabled: false); the agent neither reads nor updates it.[/yellow]")
    elif not on:
        console.print(f"[yellow]Memory is off for {_shown(uid)} ('herdsman memory on' turns it back on).[/yellow]")
    if not facts and not summary:
        others = f" Users with memory: {escape(', '.join(users))}." if users else ""
        console.print(f"No memory for user {_shown(uid)} yet.{others}")
        return
    if summary:
        console.print(f"[bold]context:[/bold] {escape(summary)}")
    table = Table("id", "category", "confidence", "fact", "source thread", "updated")
    for f in facts:
        table.add_row(*_cells(f.id, f.category, f"{f.confidence:.2f}", f.content, f.source_thread, f.updated_at[:19]))
    console.print(table)


@memory_app.command("edit")
def memory_edit(
    fact_id: str,
    content: Annotated[Optional[str], typer.Option(help="New text of the fact.")] = None,
    category: Annotated[Optional[str], typer.Option(help=f"One of: {', '.join(CATEGORIES)}.")] = None,
    confidence: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="0 to 1.")] = None,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Change a fact (its id changes when its text does)."""
    if content is None and category is None and confidence is None:
        err.print("[red]Error:[/red] nothing to change; give --content, --category or --confidence")
        raise typer.Exit(2)
    if category is not None and category not in CATEGORIES:
        err.print(f"[red]Error:[/red] --category {_shown(category)} is unknown; use one of {', '.join(CATEGORIES)}")
        raise typer.Exit(2)
    cfg = _config(config)
    with _Opened(cfg) as store:
        fact = store.update(
            _user(cfg, user), fact_id, content=content, category=category, confidence=confidence, origin=CLI
        )
    if fact is None:
        err.print(f"[red]Error:[/red] no fact {_shown(fact_id)}; see 'herdsman memory list'")
        raise typer.Exit(1)
    console.print(f"[green]updated[/green] {escape(fact.id)}: {escape(fact.content)}")


@memory_app.command("delete")
def memory_delete(
    fact_ids: Annotated[Optional[list[str]], typer.Argument(help="Ids of the facts to forget.")] = None,
    all_facts: Annotated[bool, typer.Option("--all", help="Forget every fact and the summary of the user.")] = False,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Forget facts by id, or everything about a user with --all."""
    cfg = _config(config)
    uid = _user(cfg, user)
    if not fact_ids and not all_facts:
        err.print("[red]Error:[/red] give fact ids (see 'herdsman memory list') or --all")
        raise typer.Exit(2)
    with _Opened(cfg) as store:
        ids = [f.id for f in store.facts(uid)] if all_facts else list(fact_ids or [])
        missing = [fid for fid in ids if not store.delete(uid, fid, CLI)]
        if all_facts:
            store.set_summary(uid, "", CLI)
    for fid in missing:
        err.print(f"[yellow]no fact {_shown(fid)}[/yellow]")
    console.print(f"forgot {len(ids) - len(missing)} fact(s) of {_shown(uid)}")
    if missing:
        raise typer.Exit(1)


@memory_app.command("export")
def memory_export(
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
    user: UserOpt = None,
    all_users: Annotated[bool, typer.Option("--all-users", help="Export every user.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Export memory as JSON: {user: {enabled, summary, facts, entities, relations, audit}}."""
    cfg = _config(config)
    with _Opened(cfg) as store:
        users = store.users() if all_users else [_user(cfg, user)]
        data = {uid: export_user(store, uid, cfg.memory) for uid in users}
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if output is None:
        sys.stdout.write(text + "\n")
    else:
        output.write_text(text + "\n", encoding="utf-8")
        err.print(f"wrote {sum(len(v['facts']) for v in data.values())} fact(s) to {escape(str(output))}")


@memory_app.command("graph")
def memory_graph(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """List a user's relations (open and ended, newest first) between their entities."""
    cfg = _config(config)
    uid = _user(cfg, user)
    with _Opened(cfg) as store:
        graph = graph_json(store, uid)
    if not graph["relations"] and not graph["entities"]:
        console.print(f"No entities or relations for user {_shown(uid)} yet.")
        return
    table = Table("id", "subject", "predicate", "object", "from", "until", "source thread")
    for r in graph["relations"]:
        table.add_row(
            *_cells(
                r["id"],
                r["subject_name"],
                r["predicate"],
                r["object_name"],
                r["valid_from"][:10],
                (r["valid_to"] or "now")[:10],
                r["source_thread"],
            )
        )
    console.print(table)


@memory_app.command("relation")
def memory_relation(
    relation_id: Annotated[str, typer.Argument(help="The relation's id (see 'herdsman memory graph').")],
    end: Annotated[
        Optional[str], typer.Option("--end", help="It stopped being true on this date (2026-03-01).")
    ] = None,
    obj: Annotated[
        Optional[str], typer.Option("--object", help="It was wrong: the right object (an entity's name).")
    ] = None,
    predicate: Annotated[Optional[str], typer.Option("--predicate", help="It was wrong: the right predicate.")] = None,
    delete: Annotated[bool, typer.Option("--delete", help="Forget the relation.")] = False,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """End a relation (it stays as history), correct its object or predicate (a new id), or delete it."""
    if sum((end is not None, obj is not None or predicate is not None, delete)) != 1:
        err.print(
            "[red]Error:[/red] give one of --end DATE (it stopped being true), --object/--predicate (it was "
            "wrong) or --delete"
        )
        raise typer.Exit(2)
    cfg = _config(config)
    uid = _user(cfg, user)
    with _Opened(cfg) as store:
        graph = GraphStore(store.store)
        relation = graph.get_relation(uid, relation_id)
        if relation is None:
            err.print(
                f"[red]Error:[/red] no relation {_shown(relation_id)} for {_shown(uid)}; see 'herdsman memory graph'"
            )
            raise typer.Exit(1)
        if delete:
            graph.delete_relation(uid, relation_id, CLI)
            console.print(f"forgot relation {escape(relation_id)}")
            return
        try:
            changed = (
                end_relation(store, uid, relation, end, CLI)
                if end is not None
                else correct_relation(store, uid, relation, CLI, predicate=predicate, obj=obj)
            )
        except EditRefused as exc:
            option = {"valid_to": "--end", "predicate": "--predicate", "object": "--object"}[exc.field]
            err.print(f"[red]Error:[/red] {escape(exc.message if exc.conflict else f'{option} {exc.message}')}")
            raise typer.Exit(1 if exc.conflict else 2) from None
        view = GraphView(graph.entities(uid), graph.relations(uid))
    console.print(
        f"[green]{'ended' if end is not None else 'corrected'}[/green] {escape(relation_line(view, changed))}"
    )


@memory_app.command("entity")
def memory_entity(
    entity: Annotated[str, typer.Argument(help="The entity's name (or its id).")],
    delete: Annotated[bool, typer.Option("--delete", help="Forget it and every relation that names it.")] = False,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Show what is known about an entity, now and before; or delete it with --delete."""
    cfg = _config(config)
    uid = _user(cfg, user)
    with _Opened(cfg) as store:
        graph = GraphStore(store.store)
        entities = graph.entities(uid)
        found = next((e for e in entities if e.id == entity), None) or graph.find(uid, entity, entities)
        if found is None:
            known = ", ".join(f"{e.name} ({e.id})" for e in entities[:20]) or "none yet"
            err.print(f"[red]Error:[/red] no entity {_shown(entity)} for {_shown(uid)}; known: {escape(known)}")
            raise typer.Exit(1)
        if delete:
            graph.delete_entity(uid, found.id, CLI)
            console.print(f"forgot {escape(found.name)} ({escape(found.id)}) and the relations that named it")
            return
        console.print(escape(describe(GraphView(entities, graph.relations(uid)), found)))


def audit_words(entry: dict[str, Any]) -> str:
    """What a fact's audit record says of the user's words: the quote of a kept fact; for a
    refused one, what was proposed, what it quoted and why it was refused."""
    quote = f'"{entry["quote"]}"' if entry.get("quote") else ""
    if entry.get("action") == "refuse":
        return "; ".join(
            p
            for p in (
                f'proposed "{entry.get("content", "")}"',
                f"quoting {quote}" if quote else "",
                f"refused: {entry.get('reason', '')}",
            )
            if p
        )
    return quote


@memory_app.command("audit")
def memory_audit(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """Every write to a user's memory, oldest first: what, how, from which thread and run, and the
    user's words behind each fact learned (facts refused for lack of them too)."""
    cfg = _config(config)
    uid = _user(cfg, user)
    with _Opened(cfg) as store:
        trail = records(store.store, user_label(uid))
    if not trail:
        console.print(f"No audit records for user {_shown(uid)}.")
        return
    table = Table("at", "action", "kind", "id", "origin", "thread", "run", "the user's words")
    for a in trail:
        table.add_row(
            *_cells(
                a.get("at", "")[:19],
                a.get("action"),
                a.get("kind"),
                a.get("id"),
                a.get("origin"),
                a.get("thread_id"),
                a.get("run_id"),
                audit_words(a),
            )
        )
    console.print(table)


@memory_app.command("purge")
def memory_purge(
    user: Annotated[str, typer.Option("--user", "-u", help="Whose memory to delete, entirely.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Delete everything memory keeps about a user: summary, facts, graph, audit trail, queued turns."""
    cfg = _config(config)
    if not yes and not typer.confirm(f"Delete all memory of {user!r}?"):
        raise typer.Exit(1)
    with _Opened(cfg) as store:
        queue = UpdateQueue(memory_db_path(cfg))
        try:
            removed = purge_user(store, queue, user)
        finally:
            queue.close()
    console.print(f"purged {removed} item(s) of {_shown(user)}")


@memory_app.command("off")
def memory_off(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """Turn memory off for a user: nothing is learned, injected or looked up (what is kept stays)."""
    _switch(config, user, False)


@memory_app.command("on")
def memory_on(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """Turn memory back on for a user."""
    _switch(config, user, True)


def _switch(config: Path | None, user: str | None, enabled: bool) -> None:
    cfg = _config(config)
    uid = _user(cfg, user)
    with _Opened(cfg) as store:
        store.set_enabled(uid, enabled)
    console.print(f"memory is {'on' if enabled else 'off'} for {_shown(uid)}")


@memory_app.command("sweep")
def memory_sweep(config: ConfigOpt = None) -> None:
    """Apply memory.retention_days and memory.consolidate_after_days now, to every user (the gateway
    does it every hour)."""
    cfg = _config(config)
    if not scheduled(cfg.memory):
        console.print(
            "memory.retention_days and memory.consolidate_after_days are not set: memory is kept until deleted"
        )
        return
    with _Opened(cfg) as store:
        queue = UpdateQueue(memory_db_path(cfg))
        try:
            removed = sweep(store, cfg.memory, queue=queue)
        finally:
            queue.close()
    console.print(f"removed {removed} item(s) past retention or folded into summaries")


@memory_app.command("pending")
def memory_pending(config: ConfigOpt = None) -> None:
    """Show the turns waiting for the memory model (the durable update queue)."""
    cfg = _config(config)
    queue = UpdateQueue(memory_db_path(cfg))
    try:
        rows = queue.pending()
    finally:
        queue.close()
    if not rows:
        console.print("No pending memory updates.")
        return
    table = Table("thread", "user", "messages", "attempts", "last error")
    for r in rows:
        table.add_row(*_cells(r["thread_id"], r["user_id"], r["messages"], r["attempts"], r["last_error"]))
    console.print(table)


@memory_app.command("flush")
def memory_flush(config: ConfigOpt = None) -> None:
    """Run the memory model now on every pending update that is due."""
    from herdsman.memory.service import MemoryService
    from herdsman.models.factory import create_chat_model

    cfg = _config(config)
    model = create_chat_model(cfg, cfg.memory.model or cfg.lead_model_name())
    try:
        service = MemoryService.open(cfg, model)
    except MemoryStoreError as exc:
        err.print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    try:
        assert service.updater is not None
        done = service.updater.run_pending()
        left = len(service.queue.pending())
    finally:
        service.close()
    console.print(f"wrote {done} update(s); {left} still pending")
