"""Answers that are values: a question's final answer is a value a tool result showed.

A small model asked "how many lines does matrix.txt have?" runs ``wc -l`` and answers "Looking
at the output, the file matrix.txt has 3 lines in total, as the command shows": the value wrapped
in prose. When the request is a question (it has a ``?`` or ``？``: punctuation, so any language)
that asks for no file, and the model gives its final answer after using tools, the answer's
*values* are found: the tokens of the answer that look like values (they hold a digit, or are a
file name or a path), that a tool result of the run printed, and that the question itself does
not hold. One such value becomes the answer; several are put to the model in one short forced
call (an ``enum`` of them and "not one value" in the call's schema: the embedded model's grammar,
or an API model's structured tool choice, holds it to that list); none leaves the answer as it
is. The model's own wording is kept in the message's ``additional_kwargs`` (``herdsman_value``)
so nothing is lost.

Only values the answer itself names are offered: measured on the benchmark's development tasks,
offering every token the tool results printed let the 1.5B model answer "12000" to a yes-or-no
question and "no" (from "no matches for") to a count.

Hand-written: no library picks an answer out of an agent's tool results; the constrained choice
is what makes it hold for a 1.5B model.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.logs import get_logger
from herdsman.turns.forced_call import choice_tool, final_reply, forced_arguments, replace_reply
from herdsman.turns.turn import this_run

log = get_logger(__name__)

VALUE_TOOL = "answer_value"
NOT_ONE_VALUE = "(not one value)"
VALUE_KEY = "herdsman_value"
"""``additional_kwargs`` key of an answer the harness made a value: the value and the model's text."""
MAX_CANDIDATES = 200
MAX_RESULTS = 6
_QUESTION = re.compile(r"[?？]")
_OUTPUTS = "/mnt/user-data/outputs"
_TOKEN = re.compile(r"[^\s,;()\[\]{}<>\"'`|=：，。；（）【】「」]+")
_GUTTER = re.compile(r"^ *\d+\t", re.MULTILINE)
PROMPT = (
    "You answered a question using tools. Call answer_value with the value of your answer that answers the question, "
    "exactly as a tool result printed it: a number, a name, a path, a size, a date. If the question asks "
    f"for an explanation or several things rather than one value, use {NOT_ONE_VALUE!r}."
)


def asks_for_answer(request: str) -> bool:
    """A question (by its punctuation) that names no output file to write the answer into."""
    return bool(_QUESTION.search(request)) and _OUTPUTS not in request


def candidates(results: Sequence[ToolMessage]) -> list[str]:
    """The values the run's last tool results printed, most recent first, each once: the tokens
    between spaces and punctuation (a read_file gutter left out), a trailing ``.`` or ``:`` cut."""
    seen: dict[str, None] = {}
    for result in reversed(results[-MAX_RESULTS:]):
        text = _GUTTER.sub("", result.text)
        for token in _TOKEN.findall(text):
            token = token.rstrip(".:")
            if token and len(token) <= 120:
                seen.setdefault(token, None)
            if len(seen) >= MAX_CANDIDATES:
                return list(seen)
    return list(seen)


_VALUE_LIKE = re.compile(r"\d|/|[\w-]\.[A-Za-z]\w*$")  # a digit, a path, a file name


def printed_lines(results: Sequence[ToolMessage]) -> set[str]:
    """The lines the run's last tool results printed, each stripped: a word printed alone on its
    line (a program's ``print(name)``) is a value, whatever it looks like."""
    return {
        line.strip()
        for result in results[-MAX_RESULTS:]
        for line in _GUTTER.sub("", result.text).splitlines()
        if line.strip()
    }


def named_values(reply: str, values: Sequence[str], question: str, lines: Collection[str] = ()) -> list[str]:
    """The values the reply names: its tokens that look like values (a digit, a path, a file
    name) or that a tool result printed alone on a line (``lines``), that are among ``values``
    (what the tool results printed) and not in the question."""
    shown, asked = set(values), {t.rstrip(".:?？!！") for t in _TOKEN.findall(question)}
    found = (t.rstrip(".:") for t in _TOKEN.findall(reply))
    return list(
        dict.fromkeys(t for t in found if t in shown and t not in asked and (_VALUE_LIKE.search(t) or t in lines))
    )


def value_tool(values: Sequence[str]) -> dict[str, Any]:
    """The forced tool: its only argument is one of ``values`` or :data:`NOT_ONE_VALUE`."""
    return choice_tool(
        VALUE_TOOL,
        "Give the single value that answers the question, as a tool printed it.",
        "value",
        [*values, NOT_ONE_VALUE],
    )


def results_text(run: Sequence[AnyMessage]) -> str:
    """The run's last :data:`MAX_RESULTS` tool results as the harness's short calls show them,
    each under ``[name result]`` and cut at 1,500 characters ("" when there are none)."""
    shown = [m for m in run if isinstance(m, ToolMessage)][-MAX_RESULTS:]
    return "\n\n".join(f"[{m.name or 'tool'} result]\n{m.text[:1500]}" for m in shown)


def _brief(run: Sequence[AnyMessage], question: str, reply: str) -> list[AnyMessage]:
    """The short conversation of the value call: the question, the tool results, the answer."""
    results = results_text(run)
    return [
        SystemMessage(PROMPT),
        HumanMessage(f"Question: {question[:2000]}\n\nTool results:\n{results}\n\nYour answer: {reply[:1500]}"),
    ]


class ValueAnswerMiddleware(AgentMiddleware):
    """Make a question's final answer the value a tool result showed (see the module docstring)."""

    def _value(self, request: ModelRequest, reply: AIMessage) -> AIMessage | None:
        """The reply as a value, or None to keep it."""
        question, run = this_run(request.messages)
        results = [m for m in run if isinstance(m, ToolMessage)]
        text = reply.text.strip()
        if question is None or not results or not text or not asks_for_answer(question.text):
            return None
        values = candidates(results)
        lines = printed_lines(results)
        named = named_values(text, values, question.text, lines) if values and text not in values else []
        if len(named) == 1:
            value: Any = named[0]
        elif named:
            args = forced_arguments(request.model, value_tool(named), _brief(run, question.text, text))
            value = (args or {}).get("value")
        else:
            return None
        if not isinstance(value, str) or value not in named:
            return None
        log.info("value_answer", value=value[:80], named=len(named))
        kwargs = {**reply.additional_kwargs, VALUE_KEY: {"value": value, "answer": text}}
        return reply.model_copy(update={"content": value, "additional_kwargs": kwargs})

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Call the model; a final answer to a question becomes the value it rests on."""
        response = handler(request)
        found = final_reply(response)
        made = self._value(request, found[0][found[1]]) if found else None
        return replace_reply(response, *found, made) if found and made is not None else response

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Async twin of :meth:`wrap_model_call` (the value call in a worker thread)."""
        response = await handler(request)
        found = final_reply(response)
        made = await asyncio.to_thread(self._value, request, found[0][found[1]]) if found else None
        return replace_reply(response, *found, made) if found and made is not None else response
