"""Program answers: a value the model could not get right is computed by a program it writes on a clean page.

Asked "how many distinct client IP addresses appear in access.log?", the embedded 1.5B model
greps for the word "client", finds nothing and answers 0; told that no tool result shows 0, it
writes a Python program that counts the lines holding "client". Asked for the bytes of the .bin
files under a folder, it runs ``du -sh`` and answers "68K" three times over. Its own earlier
attempts are in its context and it keeps to them. Asked the same question on a clean page, with
nothing but the question and how the files it names begin, the same model wrote the program that
gives the right value (the distinct addresses of the first field, in English and in Chinese; the
orders whose status is failed), in one call of about ten seconds. That is program-aided answering
(PAL, Gao et al. 2023): the model writes the computation, the interpreter does the arithmetic a
small model gets wrong.

So when a note of the completion check says the answer's *value* is not backed
(:data:`COMPUTE_RULES`: a number no tool result shows, a count made by reading, no number at all
where one was asked for, a name no tool result shows: on dev the model printed the largest
distance, 9.54, and named the planet it knew to be farthest instead of the one in the file; the
smallest or largest picked by eye, as the item with the least stock in a CSV), the model is asked
on a clean page instead
(:mod:`~herdsman.middleware.clean_page`: once per run; the question and the beginning of each file
or folder it names) for one Python program that prints the answer. A program that parses
(:func:`~herdsman.middleware.clean_page.program_of`) becomes the model's next step: a ``bash`` call
running it, made in the model's name and marked (:data:`PROGRAM_KEY`).

The model then answers from what it printed. It may not: on a dev task the program printed 8
and the model answered 11 again, the count it had made by reading. So when the program exited 0
and printed a few short lines (:func:`printed_value`), the answer the model gives right after it
must hold each of them (on dev it printed 23 and j01 and the model answered j01); one that does
not is replaced by it (the model's own words are kept in
``additional_kwargs``, :data:`VALUE_KEY`): a value a program computed on a clean page outranks a
number the check already found unbacked. The completion check checks that answer as any other.

Hand-written: no library runs a program-aided step inside an agent's loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.logs import get_logger
from herdsman.middleware.clean_page import Page, ProgramPageMiddleware, named_looks
from herdsman.middleware.completion.rules import failed
from herdsman.middleware.value_answer import results_text
from herdsman.turns.forced_call import final_reply, replace_reply
from herdsman.turns.turn import this_run

log = get_logger(__name__)

PROGRAM_KEY = "herdsman_program_answer"
"""``additional_kwargs`` key of the AI message whose bash call runs a program the harness asked for."""
VALUE_KEY = "herdsman_program_value"
"""``additional_kwargs`` key of an answer replaced by the value the program printed: the model's own words."""
MAX_VALUE_CHARS = 80
"""A printed line longer than this is output to read, not a value to answer with."""
MAX_VALUES = 3
"""More printed lines than this are output to read, not values to answer with."""
COMPUTE_RULES = frozenset(
    {"number.unsupported", "count.not_computed", "number.missing", "name.unsupported", "compare.not_made"}
)
"""The completion check's rules that say the answer's value (a number, or a name such as the row
with the largest value, or the largest or smallest picked by eye) is not backed by a computation.
(A compare note whose query the harness can run itself, ``ls -S`` of a named folder, never gets
here: the check runs it; a page is asked when the note could only give the query's shape.)"""
PROMPT = (
    "Write one Python 3 program that computes the answer to the user's question and prints only the answer "
    "(the value itself, no words). Use only the standard library. Read the files at the paths the question "
    "names: below is how they begin. Apply every condition the question states. "
    "Reply with the program in one ```python block."
)
MAX_TOKENS = 512
"""The program's length limit (a short program; a small model may otherwise go on explaining it)."""


def printed_value(run: Sequence[AnyMessage]) -> str | None:
    """The values the program printed, one per line, when ``run`` ends with the result of the
    program's call, it exited 0 and printed at most :data:`MAX_VALUES` short lines (a question may
    ask for two things: how many WARN lines, and which job shows up most); else None."""
    last = run[-1] if run else None
    if not isinstance(last, ToolMessage) or failed(last):
        return None
    ran = next((m for m in reversed(run) if isinstance(m, AIMessage) and m.tool_calls), None)
    if ran is None or not ran.additional_kwargs.get(PROGRAM_KEY) or ran.tool_calls[0]["id"] != last.tool_call_id:
        return None
    lines = [line.strip() for line in last.text.strip().splitlines() if line.strip()]
    if not 0 < len(lines) <= MAX_VALUES or any(len(line) > MAX_VALUE_CHARS for line in lines):
        return None
    return "\n".join(lines)


def holding(reply: AIMessage, value: str) -> AIMessage | None:
    """``reply`` as the printed ``value`` when it leaves out one of its lines (the model's words
    kept), or None when it holds them all."""
    if all(line.casefold() in reply.text.casefold() for line in value.splitlines()):
        return None
    log.info("program_value", replaced=True)
    kwargs = {**reply.additional_kwargs, VALUE_KEY: reply.text}
    return reply.model_copy(update={"content": value, "additional_kwargs": kwargs})


class ProgramAnswerMiddleware(ProgramPageMiddleware):
    """Compute a value the model could not back with a program written on a clean page (module docstring)."""

    RULES = COMPUTE_RULES
    KEY = PROGRAM_KEY
    MAX_TOKENS = MAX_TOKENS

    def page(self, question: str, run: Sequence[AnyMessage], finding: dict[str, Any], sandbox: Any) -> Page:
        """The question and how the files it names begin, read now. Without a named file that can
        be read, the run's last tool results stand in. (The model's own tool results are left out
        otherwise: on a dev task a grep for a guessed word that found nothing made the program
        count that word.)"""
        files = "\n\n".join(named_looks(question, sandbox)) or f"Tool results:\n{results_text(run) or '(none)'}"
        messages: list[AnyMessage] = [SystemMessage(PROMPT), HumanMessage(f"Question: {question[:2000]}\n\n{files}")]
        return Page(messages, str(finding["rule"]))

    def after(self, request: ModelRequest, response: Any) -> Any:
        """``response`` with its final answer made the program's value, when it answers right
        after the program and does not hold what it printed (module docstring)."""
        _, run = this_run(request.messages)
        value = printed_value(run)
        found = final_reply(response) if value is not None else None
        made = holding(found[0][found[1]], value) if found and value is not None else None
        return replace_reply(response, *found, made) if found and made is not None else response
