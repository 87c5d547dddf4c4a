"""The IM channels the wizard offers, read from the config schema rather than listed again.

Every channel section of ``channels:`` is offered. Its credentials are the fields whose
description names the variable to keep them in (``use $TELEGRAM_BOT_TOKEN``), and the ones the
wizard asks for are those the schema's own validation requires for the section's mode, found by
validating it with each left out. A channel added to the schema is thus offered with no change
here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from herdsman.config.schema import ChannelsConfig

_VAR_IN_DESCRIPTION = re.compile(r"\$([A-Z][A-Z0-9_]*)")


@dataclass(frozen=True)
class Credential:
    """One secret of a channel: its key in the section and the variable that holds it."""

    key: str
    env: str


def channel_models() -> dict[str, type[BaseModel]]:
    """Each channel's section model, by its name under ``channels:``."""
    out: dict[str, type[BaseModel]] = {}
    for name, info in ChannelsConfig.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and "enabled" in annotation.model_fields:
            out[name] = annotation
    return out


def credentials(channel: str) -> list[Credential]:
    """Every credential field of ``channel`` (those whose description names a ``$VARIABLE``)."""
    found = []
    for key, info in channel_models()[channel].model_fields.items():
        match = _VAR_IN_DESCRIPTION.search(info.description or "")
        if match:
            found.append(Credential(key, match.group(1)))
    return found


def required_credentials(channel: str, section: Mapping[str, Any] | None = None) -> list[Credential]:
    """The credentials ``channel`` needs when enabled with the other keys of ``section`` (its mode)."""
    model = channel_models()[channel]
    known = set(model.model_fields)
    base = {k: v for k, v in (section or {}).items() if k in known and k not in ("enabled",)}
    creds = credentials(channel)
    base.update({c.key: "x" for c in creds})
    needed = []
    for cred in creds:
        trial = {**base, "enabled": True}
        trial.pop(cred.key)
        try:
            model.model_validate(trial)
        except ValidationError:
            needed.append(cred)
    return needed
