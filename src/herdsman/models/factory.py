"""Build LangChain chat models from ``models:`` entries (``use: "module:Class"``).

The name ``embedded`` (or an empty ``models:`` list) gives the embedded local model.
"""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.language_models import BaseChatModel

from herdsman.config.schema import EMBEDDED_MODEL_NAME, HerdsmanConfig, ModelConfig

STRICT_TOOLS_KEY = "herdsman_strict_tools"
"""Where a model carries its entry's ``strict_tools`` (``metadata``; see herdsman.middleware.strict_tools)."""


class ModelConfigError(Exception):
    """A model that cannot be built: the message names the model, the YAML path and the fix."""


_PACKAGE_HINTS = {
    "langchain_openai": "pip install langchain-openai (or the openai extra: pip install 'herdsman[openai]')",
    "langchain_anthropic": "pip install langchain-anthropic",
    "langchain_google_genai": "pip install langchain-google-genai",
    "llama_cpp": "pip install 'herdsman[local]'",
}


def import_class(use: str, where: str) -> type:
    """Import ``module:Class``; a missing module or attribute is a :class:`ModelConfigError`."""
    module_name, _, attr = use.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        top = module_name.split(".")[0]
        hint = _PACKAGE_HINTS.get(top, f"install the package that provides {module_name!r}")
        raise ModelConfigError(f"{where}.use: cannot import {module_name!r} ({exc}); {hint}") from None
    try:
        cls = getattr(module, attr)
    except AttributeError:
        raise ModelConfigError(f"{where}.use: module {module_name!r} has no {attr!r}; check the class name") from None
    if not (isinstance(cls, type) and issubclass(cls, BaseChatModel)):
        raise ModelConfigError(f"{where}.use: {use} is not a LangChain chat model class (BaseChatModel)")
    return cls


def constructor_kwargs(entry: ModelConfig) -> dict[str, Any]:
    """The keyword arguments for the model class: model, api_key, base_url and pass-through keys."""
    kwargs: dict[str, Any] = {}
    if entry.model is not None:
        kwargs["model"] = entry.model
    if entry.api_key:
        kwargs["api_key"] = entry.api_key
    if entry.base_url:
        kwargs["base_url"] = entry.base_url
    kwargs.update(entry.extra_kwargs())
    if entry.strict_tools is not None:  # read by the strict tools middleware
        kwargs["metadata"] = {**(kwargs.get("metadata") or {}), STRICT_TOOLS_KEY: entry.strict_tools}
    return kwargs


def build_model(entry: ModelConfig, where: str = "models") -> BaseChatModel:
    """Instantiate one configured model; any failure is a :class:`ModelConfigError` naming it."""
    cls = import_class(entry.use, where)
    try:
        model: BaseChatModel = cls(**constructor_kwargs(entry))
        return model
    except Exception as exc:  # noqa: BLE001 - every constructor error becomes a config error
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = "check its keys"
        if "api_key" in text.lower() or "api key" in text.lower():
            hint = f"set api_key for model {entry.name!r} (for example api_key: $OPENAI_API_KEY)"
        raise ModelConfigError(f"{where} ({entry.name}): cannot create {entry.use}: {text}; {hint}") from None


def create_chat_model(config: HerdsmanConfig, name: str | None = None, progress: bool = True) -> BaseChatModel:
    """The chat model called ``name`` (default: the lead's model) from ``config``."""
    name = name or config.lead_model_name()
    if name == EMBEDDED_MODEL_NAME and not any(m.name == name for m in config.models):
        from herdsman.models.local import build_local_model

        return build_local_model(config.local_model, progress=progress)
    for index, entry in enumerate(config.models):
        if entry.name == name:
            return build_model(entry, f"models.{index}")
    choices = [m.name for m in config.models] + [EMBEDDED_MODEL_NAME]
    raise ModelConfigError(f"no model named {name!r}; choose one of {choices} or add it under models:")
