"""Catch a model reply that cannot be used, and ask again with the reason.

Small and local models sometimes answer with tool calls whose arguments are not valid JSON
(``invalid_tool_calls``) or with nothing at all. Left alone, the agent would stop on such a
reply. This middleware re-asks the model, telling it what was wrong, up to ``max_retries``
times; after that it returns a plain message saying the model's output was unusable, so the
run ends cleanly and the thread stays usable.

A reply that copies its own instructions back (three or more long lines of the system message,
verbatim: from the benchmark, a 1.5B model given the web-page-builder skill answered with the
skill's text) is re-asked the same way, but after the last try it stands: it is prose, and the
completion check can still send the agent back to work.

A reply that repeats a note of the harness (:mod:`~herdsman.middleware.completion.note_echo`) is re-asked
too; after the last try it stands marked as an echo, so the completion check never lets it be
the final answer.

Every reply that stands is also looked at once more: a tool call it wrote as text (it was not
run) is marked on the message (:mod:`~herdsman.turns.text_calls`), so the conversation shows
it as a failed step and never as the agent's answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from herdsman.logs import get_logger
from herdsman.middleware.completion.note_echo import NOTE_ECHO_KEY, echoes_note, note_texts
from herdsman.turns.text_calls import CALL_AS_TEXT_KEY, written_calls
from herdsman.turns.turn import tool_names

log = get_logger(__name__)


def reply_problem(response: ModelResponse) -> str | None:
    """Why the model's reply cannot be used, or ``None`` when it is fine."""
    message = next((m for m in response.result if isinstance(m, AIMessage)), None)
    if message is None:
        return None
    if message.invalid_tool_calls and not message.tool_calls:
        bad = message.invalid_tool_calls[0]
        return (
            f"Your call of the tool {bad.get('name') or '?'!r} could not be parsed "
            f"({bad.get('error') or 'invalid JSON arguments'}). Call it again with arguments as a "
            "valid JSON object, or answer in plain text."
        )
    if not message.tool_calls and not message.text.strip() and not message.content:
        return "Your reply was empty. Answer the request, or call a tool."
    return None


def echoed_instructions(reply: str, system: str) -> bool:
    """Whether ``reply`` repeats three or more long lines (40+ characters) of ``system`` verbatim."""
    if len(reply) < 120 or not system:
        return False
    lines = {line.strip() for line in system.splitlines() if len(line.strip()) >= 40}
    return sum(1 for line in lines if line in reply) >= 3


NOTE_ECHO = (
    "Your reply repeated a note of the harness, which is for you, not the user. Answer the user's request "
    "itself, in your own words."
)

ECHO = (
    "Your reply repeated your instructions instead of doing the task. Do the first step now: call "
    "a tool (write_file, bash, read_file...)."
)


def _known(request: ModelRequest) -> list[str]:
    """What the user, the tools and the model itself said before (a note quotes it: a path, a
    value, a term; a reply may say it again)."""
    return [
        m.text
        for m in request.messages
        if m.type in ("tool", "ai") or (isinstance(m, HumanMessage) and not note_texts([m]))
    ]


def _mark(response: ModelResponse, message: AIMessage, marks: dict[str, object]) -> ModelResponse:
    """``response`` with ``message`` given ``marks`` in its ``additional_kwargs``."""
    marked = message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, **marks}})
    return ModelResponse(
        result=[marked if m is message else m for m in response.result],
        structured_response=response.structured_response,
    )


def mark_calls_as_text(response: ModelResponse, names: list[str]) -> ModelResponse:
    """``response`` with its AI message marked (:data:`CALL_AS_TEXT_KEY`) when its text holds a
    tool call written as text; ``names``: the bound tools."""
    for message in response.result:
        if isinstance(message, AIMessage) and message.text and (written := written_calls(message.text, names)):
            log.info("model_reply_call_as_text", tools=written)
            return _mark(response, message, {CALL_AS_TEXT_KEY: written})
    return response


def _retry_request(request: ModelRequest, problem: str) -> ModelRequest:
    return request.override(messages=[*request.messages, HumanMessage(content=f"[harness] {problem}")])


def _give_up(response: ModelResponse) -> ModelResponse:
    """The reply that ends the step when every try was unusable, said to the user (the problem
    told to the model asks it to call again: no answer for a person)."""
    message = next((m for m in response.result if isinstance(m, AIMessage)), None)
    bad = message.invalid_tool_calls[0] if message is not None and message.invalid_tool_calls else None
    why = f"its call of the tool {bad.get('name') or '?'!r} could not be parsed" if bad else "it was empty"
    text = f"The model's reply could not be used after several tries: {why}. Send the request again, or rephrase it."
    return ModelResponse(result=[AIMessage(content=text)])


class ModelOutputGuardMiddleware(AgentMiddleware):
    """Re-ask the model when its reply is unusable (see module docstring)."""

    def __init__(self, max_retries: int = 2) -> None:
        """``max_retries``: how many times to re-ask before giving up."""
        super().__init__()
        self.max_retries = max_retries

    def _judge(
        self,
        request: ModelRequest,
        response: ModelResponse,
        attempt: int,
        sent: ModelRequest | None = None,
    ) -> tuple[ModelResponse | None, ModelRequest]:
        """(final response, or None to ask again; the request for the next attempt); ``sent``:
        the request that gave ``response`` (with the notes of earlier tries)."""
        problem = reply_problem(response)
        if problem is None:
            message = next((m for m in response.result if isinstance(m, AIMessage)), None)
            system = request.system_message.text if request.system_message is not None else ""
            if message is None or message.tool_calls:
                return self._marked(request, response), request
            if echoes_note(message.text, note_texts((sent or request).messages), _known(request)):
                if attempt >= self.max_retries:  # it stands, marked: never the final answer
                    return self._marked(request, _mark(response, message, {NOTE_ECHO_KEY: True})), request
                problem = NOTE_ECHO
            elif not echoed_instructions(message.text, system):
                return self._marked(request, response), request
            elif attempt >= self.max_retries:
                return self._marked(request, response), request  # prose after all: the completion check has its say
            else:
                problem = ECHO
        log.info("model_reply_unusable", attempt=attempt + 1, problem=problem)
        if attempt >= self.max_retries:
            return _give_up(response), request
        return None, _retry_request(request, problem)

    @staticmethod
    def _marked(request: ModelRequest, response: ModelResponse) -> ModelResponse:
        return mark_calls_as_text(response, sorted(tool_names(request.tools or [])))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Call the model, and again with feedback while its reply is unusable."""
        current, attempt = request, 0
        while True:  # _judge gives a final response at the last attempt
            final, current = self._judge(request, handler(current), attempt, current)
            if final is not None:
                return final
            attempt += 1

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        current, attempt = request, 0
        while True:  # _judge gives a final response at the last attempt
            final, current = self._judge(request, await handler(current), attempt, current)
            if final is not None:
                return final
            attempt += 1
