"""The command line's answers (one flag per question) and turning them into :class:`Answers`.

``answers_from_flags`` is what ``--non-interactive`` runs: a question without its flag keeps what
the config says (or the default for a new config), and anything a flag cannot supply (a key the
provider needs, a channel's token) is an error naming the flag or variable to give, before
anything is written. The interactive wizard starts from the same flags and asks the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from herdsman.setup.channels import channel_models
from herdsman.setup.detect import Machine, choose_sandbox
from herdsman.setup.files import SetupError
from herdsman.setup.plan import Answers, ChannelAnswer, ModelAnswer, channel_credentials
from herdsman.setup.providers import CUSTOM, EMBEDDED, PROVIDERS, env_reference, infer_provider, is_env_name

SANDBOXES = ("auto", "local", "docker", "kubernetes")


@dataclass
class Flags:
    """Every question's flag; ``None`` (or empty) where the command line did not say."""

    provider: str | None = None
    model: str | None = None
    model_name: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    check_key: bool = True
    sandbox: str | None = None
    channels: list[str] = field(default_factory=list)
    disable_channels: list[str] = field(default_factory=list)
    allowed_users: dict[str, list[str]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    memory: bool | None = None


def parse_pairs(items: list[str], flag: str, split_values: bool) -> dict[str, Any]:
    """``NAME=VALUE`` items of a repeated flag; values split at commas when ``split_values``."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SetupError(
                f"{flag} {item!r} is not NAME=VALUE; write for example {flag} "
                + ("telegram=123456789,alice" if split_values else "TELEGRAM_BOT_TOKEN=...")
            )
        out[name.strip()] = [v.strip() for v in value.split(",") if v.strip()] if split_values else value
    return out


def check_flags(flags: Flags) -> None:
    """Refuse flags that name no such provider, sandbox, channel or variable, saying what exists."""
    if flags.provider is not None and flags.provider not in PROVIDERS:
        raise SetupError(f"--provider {flags.provider!r} is not one of {', '.join(PROVIDERS)}")
    if flags.sandbox is not None and flags.sandbox not in SANDBOXES:
        raise SetupError(f"--sandbox {flags.sandbox!r} is not one of {', '.join(SANDBOXES)}")
    known = channel_models()
    for name in [*flags.channels, *flags.disable_channels, *flags.allowed_users]:
        if name not in known:
            raise SetupError(f"there is no channel {name!r}; the channels are {', '.join(known)}")
    for name in [*flags.secrets, *([flags.api_key_env] if flags.api_key_env else [])]:
        if not is_env_name(name):
            raise SetupError(f"{name!r} cannot be an environment variable name; use letters, digits and _")
    if flags.base_url is not None and not flags.base_url.startswith(("http://", "https://")):
        raise SetupError(
            f"--base-url {flags.base_url!r} is not an http(s) URL; write for example http://localhost:8000/v1"
        )


def current_model(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``models:`` entry the lead uses now (``None``: the embedded model)."""
    models = [m for m in doc.get("models") or [] if isinstance(m, Mapping)]
    lead = doc.get("lead") if isinstance(doc.get("lead"), Mapping) else {}
    name = (lead or {}).get("model") or (models[0].get("name") if models else EMBEDDED)
    return next((m for m in models if m.get("name") == name), None)


def model_entry(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The ``models:`` entry called ``name``, or an empty one."""
    return next((m for m in doc.get("models") or [] if isinstance(m, Mapping) and m.get("name") == name), {})


def entry_name(doc: Mapping[str, Any], provider_id: str, wanted: str | None) -> str:
    """The ``models:`` entry to write: ``wanted``, else the lead's current one when it is of this
    provider (a second run edits it rather than adding another), else the provider's id."""
    if wanted:
        return wanted
    entry = current_model(doc)
    if entry and entry.get("name") and infer_provider(entry) == provider_id:
        return str(entry["name"])
    return provider_id


def key_variable(doc: Mapping[str, Any], answer: ModelAnswer) -> str:
    """The variable the answer's API key is kept in (the one the YAML names, else the provider's)."""
    provider = PROVIDERS[answer.provider]
    name = answer.name or provider.id
    return (
        answer.key_env
        or env_reference(model_entry(doc, name).get("api_key"))
        or provider.key_env
        or f"{name.upper()}_API_KEY"
    )


def model_from_flags(flags: Flags, doc: Mapping[str, Any], env: Mapping[str, str]) -> ModelAnswer | None:
    """The model answer the flags give (``None``: no --provider, keep the models as they are)."""
    if flags.provider is None:
        return None
    provider = PROVIDERS[flags.provider]
    name = entry_name(doc, provider.id, flags.model_name)
    answer = ModelAnswer(flags.provider, name, flags.model, flags.base_url, flags.api_key, flags.api_key_env)
    if provider.id == CUSTOM and not (flags.base_url or model_entry(doc, name).get("base_url")):
        raise SetupError(
            "--provider custom needs --base-url (the server's OpenAI-compatible address, e.g. http://localhost:8000/v1)"
        )
    if provider.id == CUSTOM and not (flags.model or model_entry(doc, name).get("model")):
        raise SetupError("--provider custom needs --model (the model id the server serves)")
    if provider.key_required and answer.api_key is None:
        env_name = key_variable(doc, answer)
        literal = model_entry(doc, name).get("api_key")
        if env_name not in env and not (isinstance(literal, str) and literal and env_reference(literal) is None):
            raise SetupError(
                f"--provider {provider.id} needs an API key: pass --api-key, or export {env_name} "
                "(or put it in .env beside config.yaml)"
            )
    return answer


def channels_from_flags(
    flags: Flags, doc: MutableMapping[str, Any], env: Mapping[str, str]
) -> dict[str, ChannelAnswer]:
    """The channels the flags switch on (with credentials found) or off."""
    out: dict[str, ChannelAnswer] = {}
    for name in flags.channels:
        missing = [
            f"{key} (pass --secret {var}=... or export {var})"
            for key, var in channel_credentials(doc, name)
            if var not in flags.secrets and var not in env and not _literal(doc, name, key)
        ]
        if missing:
            raise SetupError(f"channels.{name} needs " + "; ".join(missing))
        out[name] = ChannelAnswer(True, flags.allowed_users.get(name), dict(flags.secrets))
    for name in flags.disable_channels:
        out[name] = ChannelAnswer(False)
    for name, users in flags.allowed_users.items():
        if name not in out:
            out[name] = ChannelAnswer(bool(channel_section(doc, name).get("enabled")), users, dict(flags.secrets))
    return out


def channel_section(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """``channels.<name>`` as the config has it (empty when absent)."""
    channels = doc.get("channels")
    section = channels.get(name) if isinstance(channels, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def _literal(doc: Mapping[str, Any], name: str, key: str) -> bool:
    value = channel_section(doc, name).get(key)
    return isinstance(value, str) and bool(value) and env_reference(value) is None


def current_sandbox(doc: Mapping[str, Any]) -> str | None:
    """``sandbox.provider`` as the config says it (``None`` when unset)."""
    sandbox = doc.get("sandbox")
    return sandbox.get("provider") if isinstance(sandbox, Mapping) else None


def answers_from_flags(
    flags: Flags, doc: MutableMapping[str, Any], env: Mapping[str, str], machine: Callable[[], Machine]
) -> Answers:
    """The answers of ``--non-interactive``: the flags, what the config says, then defaults.

    ``machine`` is called only when the sandbox is to be picked (no --sandbox, none in the config,
    or --sandbox auto)."""
    check_flags(flags)
    sandbox = None
    if flags.sandbox is not None or current_sandbox(doc) is None:
        wanted = None if flags.sandbox in (None, "auto") else flags.sandbox
        sandbox = choose_sandbox(machine(), wanted)
    return Answers(
        model=model_from_flags(flags, doc, env),
        sandbox=sandbox,
        channels=channels_from_flags(flags, doc, env),
        memory=flags.memory,
    )
