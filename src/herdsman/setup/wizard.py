"""The interactive questions of ``herdsman setup``, asked with questionary.

questionary (on prompt_toolkit) gives the lists, check boxes, hidden key input and validation a
wizard needs and works in any real terminal; rich.prompt has no list to pick from. Each question
is skipped when its flag was given, and its default is what the config already says, so running
the wizard again and pressing Enter changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import questionary
from rich.console import Console

from herdsman.setup.channels import channel_models
from herdsman.setup.command import show_key_check, show_sandbox_notes
from herdsman.setup.detect import Found, Machine, SandboxChoice, choose_sandbox
from herdsman.setup.files import SetupError, check_secret
from herdsman.setup.flags import (
    Flags,
    channel_section,
    channels_from_flags,
    current_model,
    current_sandbox,
    entry_name,
    key_variable,
    model_entry,
)
from herdsman.setup.keycheck import KeyCheck, check_key
from herdsman.setup.plan import Answers, ChannelAnswer, ModelAnswer, channel_credentials
from herdsman.setup.providers import CUSTOM, EMBEDDED, NO_KEY, PROVIDERS, env_reference, infer_provider
from herdsman.terminal_text import escape

console = Console()


def _ask(question: questionary.Question) -> Any:
    """The answer; Ctrl-C raises KeyboardInterrupt (the command then writes nothing)."""
    return question.unsafe_ask()


def _secret_ok(name: str) -> Callable[[str], bool | str]:
    def validate(value: str) -> bool | str:
        try:
            check_secret(name, value)
        except SetupError as exc:  # shown under the prompt
            return str(exc)
        return True

    return validate


def ask_model(doc: Mapping[str, Any], env: Mapping[str, str], flags: Flags) -> tuple[ModelAnswer, KeyCheck | None]:
    """Provider, model id, address and key; the key is tried, and asked again when refused."""
    entry = current_model(doc)
    default = infer_provider(entry) if entry else EMBEDDED
    provider_id = flags.provider or _ask(
        questionary.select(
            "Which model should the agent use?",
            choices=[questionary.Choice(p.label, p.id) for p in PROVIDERS.values()],
            default=default,
            use_shortcuts=True,
        )
    )
    provider = PROVIDERS[provider_id]
    answer = ModelAnswer(
        provider_id,
        entry_name(doc, provider_id, flags.model_name),
        flags.model,
        flags.base_url,
        flags.api_key,
        flags.api_key_env,
    )
    if provider_id == EMBEDDED:
        return answer, None
    old = model_entry(doc, answer.name)
    if answer.base_url is None and provider_id == CUSTOM:
        answer.base_url = _ask(
            questionary.text(
                "The server's OpenAI-compatible address:",
                default=str(old.get("base_url") or "http://localhost:8000/v1"),
                validate=lambda v: (
                    v.startswith(("http://", "https://")) or "write an http(s) URL, e.g. http://localhost:8000/v1"
                ),
            )
        )
    if answer.model is None:
        answer.model = _ask(
            questionary.text(
                "Model id:",
                default=str(old.get("model") or provider.model or ""),
                validate=lambda v: bool(v.strip()) or "give the model id the server serves",
            )
        ).strip()
    env_name = key_variable(doc, answer)
    while True:
        if answer.api_key is None:
            answer.api_key = _ask_key(provider_id, env_name, env, old)
        key = answer.api_key or env.get(env_name)
        if not flags.check_key or (key is None and provider.key_required):
            return answer, None
        console.print("[dim]Trying the key with one call to the provider...[/dim]")
        result = check_key(provider, key, answer.base_url or old.get("base_url"), answer.model)
        show_key_check(result)
        if result.status != "rejected" or not _ask(questionary.confirm("Type the key again?", default=True)):
            return answer, result
        answer.api_key = None
        env = {k: v for k, v in env.items() if k != env_name}


def _ask_key(provider_id: str, env_name: str, env: Mapping[str, str], old: Mapping[str, Any]) -> str | None:
    """A new key, or ``None`` to keep the one ``env_name`` holds (or none, for a keyless server)."""
    have = env_name in env or (
        isinstance(old.get("api_key"), str)
        and env_reference(old.get("api_key")) is None
        and old.get("api_key") not in ("", NO_KEY)
    )
    if have and _ask(questionary.confirm(f"Keep the API key already in {env_name}?", default=True)):
        return None
    if not PROVIDERS[provider_id].key_required:
        typed = _ask(
            questionary.password(f"API key (kept in .env as {env_name}; leave empty if the server needs none):")
        )
        return typed or None
    return _ask(
        questionary.password(
            f"API key for {PROVIDERS[provider_id].label} (kept in .env as {env_name}):", validate=_secret_ok(env_name)
        )
    )


def _found_line(name: str, found: Found) -> str:
    mark = "[green]✓[/green]" if found.available else "[dim]✗[/dim]"
    return f"  {mark} {name}: {escape(found.detail)}"


def ask_sandbox(doc: Mapping[str, Any], flags: Flags, machine: Callable[[], Machine]) -> SandboxChoice:
    """Show what this machine has and pick the sandbox (default: the config's, else the detected one)."""
    found = machine()
    console.print("[bold]What this machine has for the sandbox:[/bold]")
    console.print(_found_line("bubblewrap", found.bwrap))
    console.print(_found_line("Docker-API engine", found.docker))
    console.print(_found_line("Kubernetes", found.kubernetes))
    detected = choose_sandbox(found).provider
    labels = {
        "local": "local: folders on this machine, commands in bubblewrap",
        "docker": "docker: a container per conversation (Docker or podman)",
        "kubernetes": "kubernetes: a pod per conversation",
    }
    if flags.sandbox:
        wanted = None if flags.sandbox == "auto" else flags.sandbox
    else:
        wanted = _ask(
            questionary.select(
                "Where should the agent's files and commands live?",
                choices=[
                    questionary.Choice(label + ("  (found here)" if name == detected else ""), name)
                    for name, label in labels.items()
                ],
                default=current_sandbox(doc) or detected,
                use_shortcuts=True,
            )
        )
    sandbox = choose_sandbox(found, wanted)
    show_sandbox_notes(sandbox)
    return sandbox


def ask_channels(doc: MutableMapping[str, Any], env: Mapping[str, str], flags: Flags) -> dict[str, ChannelAnswer]:
    """Which IM channels to turn on, their credentials and who may use them."""
    if flags.channels or flags.disable_channels:
        return channels_from_flags(flags, doc, env)
    names = list(channel_models())
    on = {n for n in names if channel_section(doc, n).get("enabled")}
    chosen = set(
        _ask(
            questionary.checkbox(
                "IM channels to answer in (space to tick, Enter when done; none is fine):",
                choices=[questionary.Choice(n, n, checked=n in on) for n in names],
            )
        )
    )
    out: dict[str, ChannelAnswer] = {n: ChannelAnswer(False) for n in on - chosen}
    for name in names:
        if name not in chosen:
            continue
        secrets: dict[str, str] = {}
        for key, var in channel_credentials(doc, name):
            if var in flags.secrets:
                secrets[var] = flags.secrets[var]
            elif var not in env or not _ask(
                questionary.confirm(f"Keep the {name} {key} already in {var}?", default=True)
            ):
                secrets[var] = _ask(
                    questionary.password(f"{name} {key} (kept in .env as {var}):", validate=_secret_ok(var))
                )
        users = flags.allowed_users.get(name)
        if users is None:
            current = ", ".join(str(u) for u in channel_section(doc, name).get("allowed_users") or [])
            typed = _ask(
                questionary.text(
                    f"Who may use the agent on {name}? (user ids or names, comma-separated; * for anyone)",
                    default=current,
                )
            )
            users = [u.strip() for u in typed.split(",") if u.strip()]
        if not users:
            console.print(f"[yellow]No one may use {name} until channels.{name}.allowed_users lists someone.[/yellow]")
        out[name] = ChannelAnswer(True, users, secrets)
    return out


def ask(
    path: Path, doc: MutableMapping[str, Any], env: Mapping[str, str], flags: Flags, machine: Callable[[], Machine]
) -> tuple[Answers, KeyCheck | None] | None:
    """Ask every question whose flag was not given; the answers and the key check's outcome
    (``None`` when the user chose not to write them)."""
    verb = "Editing" if path.exists() else "Creating"
    console.print(
        f"[bold]Herdsman setup[/bold]: {verb} {escape(str(path))}"
        + (" (your comments and other keys stay; the old file is kept as a backup)" if path.exists() else "")
    )
    model, key_result = ask_model(doc, env, flags)
    sandbox = ask_sandbox(doc, flags, machine)
    channels = ask_channels(doc, env, flags)
    memory = flags.memory
    if memory is None:
        memory_now = (doc.get("memory") or {}).get("enabled") if isinstance(doc.get("memory"), Mapping) else False
        memory = _ask(
            questionary.confirm(
                "Remember facts about you across conversations (long-term memory)?", default=bool(memory_now)
            )
        )
    answers = Answers(model=model, sandbox=sandbox, channels=channels, memory=memory)
    if not _ask(
        questionary.confirm(
            f"Write {path.name}" + (" and .env" if _any_secret(answers, flags) else "") + "?", default=True
        )
    ):
        return None
    return answers, key_result


def _any_secret(answers: Answers, flags: Flags) -> bool:
    return bool(
        flags.secrets or (answers.model and answers.model.api_key) or any(c.secrets for c in answers.channels.values())
    )
