"""The wizard's answers and the pure functions that turn them into edits of ``config.yaml``.

``apply_answers`` changes only the keys the answers are about, in the mapping it is given (a
ruamel.yaml round-trip map keeps the user's comments and every other key), and returns what it
changed and the secrets to keep in ``.env``. A secret never goes into the YAML: a value that is
one is written as ``$VARIABLE``; a literal secret found in a section the wizard edits is moved
out the same way.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, cast

from ruamel.yaml.comments import CommentedSeq

from herdsman.setup.channels import required_credentials
from herdsman.setup.detect import SandboxChoice
from herdsman.setup.providers import EMBEDDED, NO_KEY, PROVIDERS, env_reference


@dataclass
class ModelAnswer:
    """The lead's model: a provider and, for all but the embedded one, its entry under ``models:``."""

    provider: str
    name: str = ""  # the entry's name; default the provider's id
    model: str | None = None  # default the provider's
    base_url: str | None = None  # default the provider's
    api_key: str | None = None  # a new key to keep in .env; None: keep what the variable holds
    key_env: str | None = None  # the variable; default the provider's


@dataclass
class ChannelAnswer:
    """One channel switched on or off, who may use it, and new values of its credentials."""

    enabled: bool
    allowed_users: list[str] | None = None  # None: keep
    secrets: dict[str, str] = field(default_factory=dict)  # variable name -> value


@dataclass
class Answers:
    """Everything the wizard asks; ``None`` (or absent) leaves that part of the config as it is."""

    model: ModelAnswer | None = None
    sandbox: SandboxChoice | None = None
    channels: dict[str, ChannelAnswer] = field(default_factory=dict)
    memory: bool | None = None


@dataclass
class Outcome:
    """What ``apply_answers`` did: one line per change, and the secrets for ``.env``."""

    changes: list[str] = field(default_factory=list)
    secrets: dict[str, str] = field(default_factory=dict)


def _section(doc: MutableMapping[str, Any], *path: str) -> MutableMapping[str, Any]:
    """The mapping at ``path``, made (empty) where it is missing or null."""
    node = doc
    for key in path:
        child = node.get(key)
        if not isinstance(child, MutableMapping):
            child = type(doc)()
            node[key] = child
        node = child
    return node


def _put(node: MutableMapping[str, Any], key: str, value: Any, where: str, outcome: Outcome) -> None:
    """Set ``node[key]`` when it differs (``None``: remove it), recording the change as ``where``.
    Values written here are never secrets (those are ``$VARIABLE`` references by then)."""
    if value is None:
        if key in node:
            del node[key]
            outcome.changes.append(f"{where}: removed")
        return
    if key in node and node[key] == value:
        return
    node[key] = _flow(value) if isinstance(value, list) else value
    outcome.changes.append(f"{where}: {value if isinstance(value, str) else json.dumps(value)}")


def _flow(items: list) -> CommentedSeq:
    """A list written on one line (``[a, b]``), as the user ids of ``allowed_users`` are."""
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _set(doc: MutableMapping[str, Any], dotted: str, value: Any, outcome: Outcome) -> None:
    """Set the key at the dotted path ``dotted``, making the sections on the way."""
    *parents, key = dotted.split(".")
    _put(_section(doc, *parents), key, value, dotted, outcome)


def _secret_ref(node: MutableMapping[str, Any], key: str, env: str, value: str | None, outcome: Outcome) -> str:
    """``$env`` for ``node[key]``; a new ``value``, or a literal secret found there in the YAML,
    goes to ``.env`` under ``env``."""
    current = node.get(key)
    if value is None and isinstance(current, str) and current not in ("", NO_KEY) and env_reference(current) is None:
        value = current
    if value is not None:
        outcome.secrets[env] = value
    return f"${env}"


def apply_model(doc: MutableMapping[str, Any], answer: ModelAnswer, outcome: Outcome) -> None:
    """Point ``lead.model`` at the answer's model, adding or updating its ``models:`` entry."""
    provider = PROVIDERS[answer.provider]
    if provider.id == EMBEDDED:
        _set(doc, "lead.model", EMBEDDED, outcome)
        return
    name = answer.name or provider.id
    models = doc.get("models")
    if not isinstance(models, list) or not models:
        models = doc["models"] = CommentedSeq()  # block style, also in place of a flow []
    index = next((i for i, m in enumerate(models) if isinstance(m, MutableMapping) and m.get("name") == name), None)
    if index is None:  # first: comments after the last entry stay with it
        models.insert(0, cast(Any, type(doc))(name=name))  # the document's own map type, comments and all
        index = 0
        outcome.changes.append(
            f"models.0: new model {name!r}" + (" (the others move down one)" if len(models) > 1 else "")
        )
    entry, where = models[index], f"models.{index}"
    _put(entry, "use", provider.use, f"{where}.use", outcome)
    for key, value in (("model", answer.model or provider.model), ("base_url", answer.base_url or provider.base_url)):
        if value and getattr(answer, key) is None and entry.get(key):
            value = entry[key]  # not asked again: the entry's own (a proxy's address, another model) stays
        if value:
            _put(entry, key, value, f"{where}.{key}", outcome)
    named = env_reference(entry.get("api_key"))
    key_env = answer.key_env or named or provider.key_env or f"{name.upper()}_API_KEY"
    keyless = not provider.key_required and answer.api_key is None and answer.key_env is None and named is None
    ref = (
        NO_KEY
        if keyless and entry.get("api_key") in (None, NO_KEY)
        else _secret_ref(entry, "api_key", key_env, answer.api_key, outcome)
    )
    _put(entry, "api_key", ref, f"{where}.api_key", outcome)
    _set(doc, "lead.model", name, outcome)


def channel_credentials(doc: MutableMapping[str, Any], name: str) -> list[tuple[str, str]]:
    """(key, variable) of each credential ``channels.<name>`` needs, keeping the variable the YAML
    already names for it."""
    section = ((doc.get("channels") or {}).get(name) or {}) if isinstance(doc.get("channels"), MutableMapping) else {}
    section = section if isinstance(section, MutableMapping) else {}
    return [(c.key, env_reference(section.get(c.key)) or c.env) for c in required_credentials(name, section)]


def apply_channel(doc: MutableMapping[str, Any], name: str, answer: ChannelAnswer, outcome: Outcome) -> None:
    """Switch ``channels.<name>`` on (with ``$VARIABLE`` credentials and allowed users) or off."""
    channels = doc.get("channels")
    if not answer.enabled and not (isinstance(channels, MutableMapping) and name in channels):
        return  # off already, by default: nothing to write
    section = _section(doc, "channels", name)
    if answer.enabled:
        for key, env in channel_credentials(doc, name):
            ref = _secret_ref(section, key, env, answer.secrets.get(env), outcome)
            _put(section, key, ref, f"channels.{name}.{key}", outcome)
        if answer.allowed_users is not None:
            _set(doc, f"channels.{name}.allowed_users", list(answer.allowed_users), outcome)
    _set(doc, f"channels.{name}.enabled", answer.enabled, outcome)


def apply_answers(doc: MutableMapping[str, Any], answers: Answers) -> Outcome:
    """Edit ``doc`` (the whole config as a mapping) to say what ``answers`` say; nothing else changes."""
    outcome = Outcome()
    if answers.model is not None:
        apply_model(doc, answers.model, outcome)
    if answers.sandbox is not None:
        _set(doc, "sandbox.provider", answers.sandbox.provider, outcome)
        for key, value in answers.sandbox.settings.items():
            _set(doc, f"sandbox.{key}", value, outcome)
    for name, channel in answers.channels.items():
        apply_channel(doc, name, channel, outcome)
    if answers.memory is not None:
        _set(doc, "memory.enabled", answers.memory, outcome)
    return outcome
