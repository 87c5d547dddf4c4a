"""The ``herdsman setup`` command: flags, then the questions left (unless --non-interactive),
then the key check, the files, ``herdsman config check`` and the next command to run."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from herdsman.config.loader import ConfigError, env_file_values, find_config_file, load_config, parse_config
from herdsman.setup.detect import Machine, SandboxChoice, detect_machine
from herdsman.setup.files import (
    SetupError,
    backup,
    check_secret,
    dump_document,
    env_path,
    read_document,
    write_secrets,
    write_text_atomically,
)
from herdsman.setup.flags import Flags, answers_from_flags, check_flags, key_variable, model_entry, parse_pairs
from herdsman.setup.keycheck import KeyCheck, check_key
from herdsman.setup.plan import Answers, apply_answers
from herdsman.setup.providers import EMBEDDED, PROVIDERS
from herdsman.terminal_text import escape

console = Console()
err = Console(stderr=True)


def target_path(explicit: Path | None) -> Path:
    """The file to write: --config, else the config the lookup order finds, else ./config.yaml."""
    if explicit is not None:
        return explicit.expanduser()
    try:
        found = find_config_file()
    except ConfigError:  # $HERDSMAN_CONFIG names a file not written yet: write it
        return Path(os.environ["HERDSMAN_CONFIG"]).expanduser()
    return found or Path.cwd() / "config.yaml"


def try_key(answers: Answers, doc: Mapping, env: Mapping[str, str]) -> KeyCheck | None:
    """Check the chosen model's key with one call (``None`` when there is no key to check)."""
    answer = answers.model
    if answer is None or answer.provider == EMBEDDED:
        return None
    provider = PROVIDERS[answer.provider]
    key = answer.api_key or env.get(key_variable(doc, answer))
    entry = model_entry(doc, answer.name or provider.id)
    if key is None and provider.key_required:
        return None
    return check_key(
        provider, key, answer.base_url or entry.get("base_url"), answer.model or entry.get("model") or provider.model
    )


def show_key_check(result: KeyCheck) -> None:
    """Say what the key check found, in the colour of its outcome."""
    colour = {"ok": "green", "rejected": "red"}.get(result.status, "yellow")
    console.print(f"[{colour}]API key: {escape(result.message)}[/{colour}]")


def show_sandbox_notes(choice: SandboxChoice) -> None:
    """What the chosen sandbox needs or lacks, one dim line each."""
    for note in choice.notes:
        console.print(f"[dim]sandbox {escape(choice.provider)}: {escape(note)}[/dim]")


def config_flag(path: Path) -> str:
    """`` --config PATH`` for the commands to run next, empty when the lookup finds ``path`` anyway."""
    return "" if path.resolve() == (Path.cwd() / "config.yaml").resolve() else f" --config {path}"


def final_check(path: Path, offline: bool) -> bool:
    """``herdsman config check`` on what was written; True when it found nothing to fix."""
    console.print(
        f"\n[bold]herdsman config check{escape(config_flag(path))}[/bold]"
        + (" [dim](no network probe: the provider was unreachable)[/dim]" if offline else "")
    )
    from herdsman.commands.check import check_config  # imports LangChain: only when it runs

    try:
        loaded = load_config(path)
    except ConfigError as exc:
        err.print(f"[red]{escape(str(exc))}[/red]")
        return False
    problems = check_config(loaded.config, probe_network=not offline)
    for problem in problems:
        err.print(f"  [red]-[/red] {escape(str(problem))}")
    if not problems:
        console.print(f"[green]OK[/green] {escape(str(path))}: lead model {loaded.config.lead_model_name()!r}")
    return not problems


def next_steps(path: Path, answers: Answers, doc: Mapping) -> list[str]:
    """The commands to run next, with --config when the file is not found by default."""
    flag = config_flag(path)
    steps = []
    lead = (doc.get("lead") or {}).get("model") if isinstance(doc.get("lead"), Mapping) else None
    if lead == EMBEDDED or not doc.get("models"):
        steps.append(f"herdsman model fetch{flag}      # the embedded model's weights, once (1.1 GB)")
    if answers.sandbox is not None and answers.sandbox.provider == "docker":
        steps.append("python -m herdsman.sandbox.image   # the sandbox image, once")
    steps.append(f"herdsman chat{flag}              # talk to the agent here")
    steps.append(f"herdsman serve{flag}             # the gateway, web UI and LangGraph API on http://127.0.0.1:2026")
    return steps


def run_setup(path: Path, flags: Flags, interactive: bool) -> int:
    """The whole wizard; the exit code (0: written and checked, 1: check found problems or refused)."""
    check_flags(flags)
    doc = read_document(path)
    env = {**(env_file_values(path) if path.exists() else {}), **os.environ}
    old_text = path.read_text(encoding="utf-8") if path.exists() else ""
    machine_cache: list[Machine] = []

    def machine() -> Machine:
        if not machine_cache:
            machine_cache.append(detect_machine())
        return machine_cache[0]

    key_result: KeyCheck | None = None
    if interactive:
        from herdsman.setup.wizard import ask

        asked = ask(path, doc, env, flags, machine)
        if asked is None:
            console.print("Nothing was written.")
            return 1
        answers, key_result = asked
    else:
        answers = answers_from_flags(flags, doc, env, machine)
        if flags.check_key:
            key_result = try_key(answers, doc, env)
            if key_result is not None:
                show_key_check(key_result)
                if key_result.status == "rejected":
                    err.print(
                        "[red]Nothing was written.[/red] Give the right key, or --no-check-key to keep it anyway."
                    )
                    return 1
        if answers.sandbox is not None:
            show_sandbox_notes(answers.sandbox)
    outcome = apply_answers(doc, answers)
    outcome.secrets.update(flags.secrets)
    if not outcome.changes and not outcome.secrets and path.exists():
        console.print(f"{escape(str(path))} already says all that; nothing to change.")
        return 0 if final_check(path, offline=True) else 1
    for name, value in outcome.secrets.items():
        check_secret(name, value)
    new_text = dump_document(doc)
    _refuse_if_broken(path, old_text, new_text, {**env, **outcome.secrets})
    saved = backup(path)
    write_secrets(env_path(path), outcome.secrets)
    write_text_atomically(path, new_text)
    console.print(
        f"[green]Wrote {escape(str(path))}[/green]"
        + (f" [dim](the previous one is {escape(saved.name)})[/dim]" if saved else "")
    )
    for change in outcome.changes:
        console.print(f"  [dim]{escape(change)}[/dim]")
    if outcome.secrets:
        console.print(
            f"[green]Secrets in {escape(str(env_path(path)))}[/green] [dim](readable by you only): "
            f"{escape(', '.join(sorted(outcome.secrets)))}[/dim]"
        )
    ok = final_check(path, offline=key_result is not None and key_result.status == "unreachable")
    console.print("\n[bold]Next:[/bold]")
    for step in next_steps(path, answers, doc):
        console.print(f"  {escape(step)}", highlight=False, soft_wrap=True)
    return 0 if ok else 1


def _refuse_if_broken(path: Path, old_text: str, new_text: str, env: Mapping[str, str]) -> None:
    """Stop before writing when the edit would make a valid config invalid (a bug, never the user's)."""
    try:
        parse_config(new_text, str(path), env)
    except ConfigError as exc:
        try:
            parse_config(old_text, str(path), env)
        except ConfigError:
            return  # it was already broken: write, and the check below lists what to fix
        raise SetupError(f"the edited config would not load, so nothing was written:\n{exc}") from None


ListOpt = Optional[list[str]]


def setup_command(
    config: Annotated[
        Optional[Path],
        typer.Option(
            "--config", "-c", help="The config.yaml to write or edit (default: the one found, else ./config.yaml)."
        ),
    ] = None,
    non_interactive: Annotated[
        bool, typer.Option("--non-interactive", help="Ask nothing: use the flags, keep the rest of the config.")
    ] = False,
    provider: Annotated[Optional[str], typer.Option(help="Model provider: " + " | ".join(PROVIDERS) + ".")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model id, e.g. gpt-4o-mini (default the provider's).")] = None,
    model_name: Annotated[
        Optional[str], typer.Option(help="Name of the entry under models: (default the provider's id).")
    ] = None,
    base_url: Annotated[
        Optional[str], typer.Option(help="The provider's address (required for custom), e.g. http://localhost:8000/v1.")
    ] = None,
    api_key: Annotated[
        Optional[str],
        typer.Option(
            help=(
                "The API key (kept in .env); default the one in its variable (exporting it keeps "
                "it out of ps and shell history)."
            )
        ),
    ] = None,
    api_key_env: Annotated[
        Optional[str], typer.Option(help="The variable that holds the key (default OPENAI_API_KEY, ...).")
    ] = None,
    check_key_: Annotated[
        bool, typer.Option("--check-key/--no-check-key", help="Try the key with one call to the provider.")
    ] = True,
    sandbox: Annotated[
        Optional[str],
        typer.Option(help="Sandbox provider: auto (by what this machine has) | local | docker | kubernetes."),
    ] = None,
    channel: Annotated[
        ListOpt, typer.Option("--channel", help="Turn on an IM channel (repeat for more), e.g. telegram.")
    ] = None,
    disable_channel: Annotated[ListOpt, typer.Option("--disable-channel", help="Turn off an IM channel.")] = None,
    allowed_users: Annotated[
        ListOpt, typer.Option("--allowed-users", help="Who may use a channel: CHANNEL=ID,ID (* for anyone).")
    ] = None,
    secret: Annotated[
        ListOpt,
        typer.Option("--secret", help="A secret for .env: NAME=VALUE, e.g. TELEGRAM_BOT_TOKEN=... (repeatable)."),
    ] = None,
    memory: Annotated[
        Optional[bool], typer.Option("--memory/--no-memory", help="Long-term memory across conversations.")
    ] = None,
) -> None:
    """Write config.yaml (secrets into .env) by asking a few questions; an existing config is
    edited, not replaced. Every question has a flag; --non-interactive asks none."""
    try:
        flags = Flags(
            provider=provider,
            model=model,
            model_name=model_name,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            check_key=check_key_,
            sandbox=sandbox,
            channels=list(channel or []),
            disable_channels=list(disable_channel or []),
            allowed_users=parse_pairs(list(allowed_users or []), "--allowed-users", split_values=True),
            secrets=parse_pairs(list(secret or []), "--secret", split_values=False),
            memory=memory,
        )
        interactive = not non_interactive
        if interactive and not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise SetupError("no terminal to ask questions in; run with --non-interactive and flags (see --help)")
        code = run_setup(target_path(config), flags, interactive)
    except SetupError as exc:
        err.print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        err.print("\n[yellow]Stopped; nothing was written.[/yellow]")
        raise typer.Exit(130) from None
    raise typer.Exit(code)
