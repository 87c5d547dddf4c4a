"""``ask_clarification``: the lead asks the user a question and waits for the answer.

The question pauses the run with LangGraph's ``interrupt()`` (so it needs a checkpointer); the
client shows it (with choices, when given) and resumes the run with ``Command(resume=answer)``.
The interrupt value is ``{"type": "clarification", "question": ..., "choices": [...]}``.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.tools import BaseTool, ToolException
from langgraph.types import interrupt

from herdsman.tool_schemas import structured_tool

DESCRIPTION = (
    "Ask the user a question when the request is ambiguous or a decision is theirs to make, and "
    "wait for the answer. Give choices when the answer is one of a few options. Do not ask what "
    "you can find out with your tools."
)


def answer_text(answer: Any) -> str:
    """The user's answer as text (a resume value may be a string or ``{"answer": ...}``)."""
    if isinstance(answer, dict):
        answer = answer.get("answer", answer.get("response", answer))
    return str(answer).strip()


def make_clarification_tool() -> BaseTool:
    """The ``ask_clarification`` tool."""

    def ask_clarification(
        question: Annotated[str, "The question, one or two sentences."],
        choices: Annotated[list[str] | None, "Options the user can pick from, if any."] = None,
    ) -> str:
        if not question.strip():
            raise ToolException("the question is empty; write the question for the user")
        answer = answer_text(interrupt({"type": "clarification", "question": question, "choices": choices or []}))
        if not answer:
            return "The user gave no answer. Make a reasonable assumption, say which, and go on."
        return f"The user answered: {answer}"

    return structured_tool(
        name="ask_clarification", description=DESCRIPTION, func=ask_clarification, handle_tool_error=True
    )
