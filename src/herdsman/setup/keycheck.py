"""Try an API key with one real, cheap call: list the provider's models with its own client.

The outcome says which of three things happened, so the wizard can tell the user plainly: the
key works (and whether the chosen model is among those it sees), the provider refused it, or the
provider could not be reached (no network here), in which case the key is kept unchecked.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

from herdsman.setup.providers import Provider

Status = Literal["ok", "rejected", "unreachable", "unchecked"]


@dataclass(frozen=True)
class KeyCheck:
    """What the call showed, and a sentence for the user."""

    status: Status
    message: str
    models: tuple[str, ...] = ()


def check_key(
    provider: Provider, api_key: str | None, base_url: str | None, model: str | None, timeout: float = 8.0
) -> KeyCheck:
    """List the models at ``base_url`` (or the provider's endpoint) with ``api_key``, once, no retries."""
    try:
        sdk = importlib.import_module(provider.sdk)
    except ImportError:
        return KeyCheck(
            "unchecked",
            f"the {provider.sdk} package is not installed, so the key was not tried; "
            f"pip install 'herdsman[{provider.package}]'",
        )
    where = base_url or provider.base_url
    client_class = sdk.Anthropic if provider.sdk == "anthropic" else sdk.OpenAI
    client = client_class(api_key=api_key or "EMPTY", base_url=where, timeout=timeout, max_retries=0)
    host = str(client.base_url).rstrip("/")
    try:
        ids = tuple(sorted(m.id for m in client.models.list()))
    except sdk.APIConnectionError as exc:  # timeouts included
        cause = exc.__cause__ or exc
        return KeyCheck(
            "unreachable",
            f"cannot reach {host} ({type(cause).__name__}: no network here, or the "
            "address is wrong); the key is saved unchecked",
        )
    except sdk.APIStatusError as exc:
        if exc.status_code in (401, 403):
            return KeyCheck("rejected", f"{host} refused the key ({exc.status_code}); check it and type it again")
        return KeyCheck("unchecked", f"{host} answered {exc.status_code} to listing models, so the key was not checked")
    except sdk.APIError as exc:  # an answer that is not a model list
        return KeyCheck(
            "unchecked", f"{host} gave an unexpected answer ({type(exc).__name__}), so the key was not checked"
        )
    finally:
        client.close()
    if model and ids and model not in ids:
        return KeyCheck(
            "ok",
            f"the key works ({len(ids)} models), but {model!r} is not among them; "
            f"check the model name (for example {ids[0]!r})",
            ids,
        )
    return KeyCheck("ok", f"the key works: {host} lists {len(ids)} model(s)", ids)
