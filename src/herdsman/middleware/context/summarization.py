"""Summarization of old history: LangChain's ``SummarizationMiddleware`` with the triggers of
``summarization:`` in config.yaml."""

from __future__ import annotations

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel

from herdsman.config.schema import HerdsmanConfig


def summarization_middleware(config: HerdsmanConfig, model: BaseChatModel) -> SummarizationMiddleware:
    """LangChain's SummarizationMiddleware with the triggers from ``summarization:``.

    The old messages are summarized whole (no trimming): LangChain's trimming keeps only what
    follows the last human message, which in a long tool loop is nothing, and the summary would
    then say "too long to summarize". Their size is bounded by the trigger anyway.
    """
    s = config.summarization
    triggers: list = []
    if s.trigger_tokens:
        triggers.append(("tokens", s.trigger_tokens))
    if s.trigger_messages:
        triggers.append(("messages", s.trigger_messages))
    if s.trigger_fraction:
        triggers.append(("fraction", s.trigger_fraction))
    return SummarizationMiddleware(
        model,
        trigger=triggers or [("tokens", 60_000)],
        keep=("messages", s.keep_messages),
        trim_tokens_to_summarize=None,
    )
