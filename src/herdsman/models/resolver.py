"""Resolve model names to chat model instances, once each, with overrides for tests and embedding.

The lead, each sub-agent type, summarization and titles can each name a model; a resolver builds
each named model once per agent factory call and hands out the same instance afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from herdsman.config.schema import HerdsmanConfig
from herdsman.models.factory import create_chat_model


@dataclass
class ModelResolver:
    """Named models from config; ``overrides`` (name -> instance) win over config."""

    config: HerdsmanConfig
    overrides: Mapping[str, BaseChatModel] = field(default_factory=dict)
    _built: dict[str, BaseChatModel] = field(default_factory=dict)

    def get(self, name: str) -> BaseChatModel:
        """The model called ``name``."""
        if name in self.overrides:
            return self.overrides[name]
        if name not in self._built:
            self._built[name] = create_chat_model(self.config, name)
        return self._built[name]

    def cached(self, name: str) -> BaseChatModel | None:
        """The model called ``name`` if it is an override or was built already (never builds)."""
        return self.overrides.get(name) or self._built.get(name)

    def pricing(self, name: str) -> tuple[float, float] | None:
        """(input, output) US dollars per million tokens for ``name``, when its config has pricing."""
        for entry in self.config.models:
            if entry.name == name and entry.pricing is not None:
                return entry.pricing.input_per_million, entry.pricing.output_per_million
        return None
