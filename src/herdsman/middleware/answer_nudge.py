"""Nudge a small model to answer once a tool result holds the answer (the ``small`` profile).

Asked a question ("how many rows have status failed?"), a small model runs the right command,
gets the answer, and then runs it again, or a different one, until loop detection stops it. With
the ``small`` profile, when the user's request is a question and the last tool call succeeded,
the model's view of the conversation ends with a short note: if that result answers the
question, answer now in plain text. The note is not stored in the thread; requests that are
tasks ("fix", "create", "rename") get no note, so multi-step work is not cut short.
"""

from __future__ import annotations

import re

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import HumanMessage, ToolMessage

from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.turns.turn import HARNESS_NAME, request_text

NUDGE = (
    "[harness] Now either give the user the answer, with the exact value the tool printed, "
    "or, if you still need something, call the next tool."
)
_QUESTION = re.compile(
    r"^\s*(what|which|how|who|when|where|why|is|are|does|do|did|can|count|list|find|show|tell)\b", re.IGNORECASE
)
_TASK = re.compile(
    r"\b(save|write|create|fix|rename|move|copy|delete|remove|edit|change|update|convert|generate|make|build|add|"
    r"replace|draw|plot|export|sort|merge|split)\b",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    """Whether the request asks for an answer rather than for work on files: it ends with a
    question mark (Latin or full-width, as Chinese and Japanese write it) or opens with an English
    question word, and names no English task verb."""
    text = text.strip()
    return bool(text) and (text.endswith(("?", "\uff1f")) or bool(_QUESTION.match(text))) and not _TASK.search(text)


class AnswerNudgeMiddleware(RequestRewriteMiddleware):
    """Add :data:`NUDGE` to the model's view after a successful tool result for a question."""

    def rewrite(self, request: ModelRequest) -> ModelRequest:
        """The request with :data:`NUDGE` after the last tool result, when it answers a question."""
        messages = request.messages
        if not messages or not isinstance(messages[-1], ToolMessage) or messages[-1].status == "error":
            return request
        if not is_question(request_text(messages)):
            return request
        return request.override(messages=[*messages, HumanMessage(content=NUDGE, name=HARNESS_NAME)])
