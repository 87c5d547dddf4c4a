"""The model providers the wizard offers, as data: the class, default model, endpoint and key.

``infer_provider`` reads an existing ``models:`` entry back into one of them, so a second run of
the wizard starts from what the config already says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EMBEDDED = "embedded"
CUSTOM = "custom"
NO_KEY = "EMPTY"  # what an OpenAI-compatible server that needs no key is given (the client needs one)


@dataclass(frozen=True)
class Provider:
    """One choice of model provider."""

    id: str
    label: str
    use: str | None = None  # the LangChain chat model class; None: the embedded model
    model: str | None = None  # default model id
    base_url: str | None = None  # default endpoint; None: the client's own
    key_env: str | None = None  # the variable the API key is kept in
    key_required: bool = True
    sdk: str = "openai"  # the client that checks the key: openai | anthropic
    package: str = "openai"  # the extra that installs the model class


PROVIDERS: dict[str, Provider] = {
    p.id: p
    for p in (
        Provider("openai", "OpenAI", "langchain_openai:ChatOpenAI", "gpt-4o-mini", None, "OPENAI_API_KEY"),
        Provider(
            "anthropic",
            "Anthropic (Claude)",
            "langchain_anthropic:ChatAnthropic",
            "claude-sonnet-4-5",
            None,
            "ANTHROPIC_API_KEY",
            sdk="anthropic",
            package="anthropic",
        ),
        Provider(
            "deepseek",
            "DeepSeek",
            "langchain_openai:ChatOpenAI",
            "deepseek-chat",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
        ),
        Provider(EMBEDDED, "Local embedded model (Qwen2.5-Coder 1.5B, no key, runs on this machine)", package="local"),
        Provider(
            CUSTOM,
            "Another OpenAI-compatible server (a base_url: vLLM, Ollama, LM Studio, a proxy)",
            "langchain_openai:ChatOpenAI",
            None,
            None,
            "CUSTOM_API_KEY",
            key_required=False,
        ),
    )
}

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REF = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")


def is_env_name(name: str) -> bool:
    """Whether ``name`` can be an environment variable referenced as ``$NAME`` in the YAML."""
    return bool(_ENV_NAME.match(name))


def env_reference(value: Any) -> str | None:
    """The variable a YAML value refers to when it is exactly ``$NAME`` or ``${NAME}``."""
    match = _REF.match(value) if isinstance(value, str) else None
    return (match.group(1) or match.group(2)) if match else None


def infer_provider(entry: Mapping[str, Any]) -> str:
    """The provider id a ``models:`` entry matches (``custom`` for any other OpenAI-compatible one)."""
    use = str(entry.get("use", ""))
    base_url = str(entry.get("base_url") or "")
    if use.startswith("langchain_anthropic:"):
        return "anthropic"
    for provider in PROVIDERS.values():
        if provider.base_url and base_url.rstrip("/") == provider.base_url:
            return provider.id
    return CUSTOM if base_url or not use.startswith("langchain_openai:") else "openai"
