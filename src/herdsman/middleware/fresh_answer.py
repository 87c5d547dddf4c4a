"""A second answer from a clean page, when the model repeats an answer the completion check sent back.

Told "your answer says no, but a tool result lists /mnt/user-data/workspace/media/deep/d.bin:
d.bin is there", the embedded 1.5B model answers "No" again: its own earlier answer, the long
system prompt and the tool schemas outweigh the note. Leaving only its rejected answers out of
its view did not help on the benchmark's development tasks (it repeated them from the tool
results' context); asked the question with nothing but the request, the tool results and the
note, it answered from the results.

So when a final answer repeats, word for word, the one that the completion check's last note
sent back, and a finding of that note is about what the answer states (one that asks only for
the answer again in words, priority :data:`~herdsman.middleware.completion.findings.ANSWER`, or one of
:data:`ABOUT_THE_ANSWER`: a number or a name no tool result shows, a count made by reading, a
number missing, a largest or smallest picked by eye: asked which item of a table has the least
stock, it read the table, answered "tea", and answered "tea" again under the harness's own query
that printed "oil"), the model did not take the note in, whatever it called in between. This
middleware then asks the run's model once more in a fresh context (no system prompt, no tools,
none of its own answers: the request, the last tool results, the note's findings), and the fresh
reply replaces the repeated one; the repeated one is kept in the message's ``additional_kwargs``
(:data:`FRESH_KEY`). The completion check checks the new answer as any other. Language-neutral:
it compares the model's own two answers and reads the typed findings of the note, never the
request's words. Once per note (the fresh answer is the last word until the check writes
another note).

Hand-written: no library re-asks an agent's model outside its conversation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage

from herdsman.logs import get_logger
from herdsman.middleware.completion.findings import ANSWER, FINDINGS_KEY
from herdsman.middleware.value_answer import results_text
from herdsman.turns.forced_call import NO_STREAM, final_reply, replace_reply
from herdsman.turns.turn import is_harness, this_run

log = get_logger(__name__)

FRESH_KEY = "herdsman_fresh_answer"
"""``additional_kwargs`` key of an answer given again in a fresh context: the repeated answer."""
PROMPT = (
    "Answer the user's question from the tool results below. A check found a problem with an earlier answer: "
    "take it into account. Reply with the answer only, in the language of the question."
)
ABOUT_THE_ANSWER = frozenset(
    {"number.unsupported", "name.unsupported", "count.not_computed", "number.missing", "compare.not_made"}
)
"""The completion check's rules (besides the ANSWER-priority ones) that are about what the answer states."""
MAX_TOKENS = 256
"""The fresh answer's length limit: an answer, not an essay (a small model may ramble on)."""
_WORDS = re.compile(r"\w+")


def same_answer(a: str, b: str) -> bool:
    """Whether two answers say the same words (case, spaces and punctuation aside)."""
    words_a, words_b = _WORDS.findall(a.casefold()), _WORDS.findall(b.casefold())
    return bool(words_a) and words_a == words_b


def about_the_answer(finding: dict[str, Any]) -> bool:
    """Whether a note's finding (as :meth:`~herdsman.middleware.completion.findings.Finding.to_dict` wrote
    it) is about what the answer states."""
    return finding.get("priority") == ANSWER or finding.get("rule") in ABOUT_THE_ANSWER


def sent_back(run: Sequence[AnyMessage]) -> tuple[AIMessage, list[str]] | None:
    """The answer the last note of the completion check sent back and the texts of the note's
    findings, when one of them is about what the answer states; else None."""
    at = next((i for i in range(len(run) - 1, -1, -1) if is_harness(run[i])), None)
    findings = run[at].additional_kwargs.get(FINDINGS_KEY) or [] if at is not None else []
    if not any(about_the_answer(f) for f in findings):
        return None
    answer = next((m for m in reversed(run[:at]) if isinstance(m, AIMessage)), None)
    if answer is None or answer.tool_calls or answer.additional_kwargs.get(FRESH_KEY) is not None:
        return None
    return answer, [str(f.get("text") or f.get("rule")) for f in findings]


def brief(question: str, run: Sequence[AnyMessage], notes: Sequence[str]) -> list[AnyMessage]:
    """The fresh context: the question, the run's last tool results, the check's findings, not
    the model's answer itself. (On a dev task the 1.5B model repeated "11" from a brief holding
    its answer, or only a finding that quotes it, and said "2" from one holding neither: not the
    8 that a result showed. With the findings, the "No" a listing contradicted became "Yes".)"""
    results = results_text(run) or "(none)"
    found = "\n".join(f"- {n}" for n in notes)
    return [
        SystemMessage(PROMPT),
        HumanMessage(f"Question: {question[:2000]}\n\nTool results:\n{results}\n\nThe check found:\n{found}"),
    ]


class FreshAnswerMiddleware(AgentMiddleware):
    """Ask again in a fresh context when the model repeats a sent-back answer (module docstring)."""

    @staticmethod
    def _stuck(request: ModelRequest, reply: AIMessage) -> list[AnyMessage] | None:
        """The fresh context to ask in, when ``reply`` repeats the sent-back answer; else None."""
        question, run = this_run(request.messages)
        back = sent_back(run) if question is not None else None
        if back is None or not same_answer(reply.text, back[0].text):
            return None
        return brief(question.text, run, back[1])  # type: ignore[union-attr]  # question is set

    @staticmethod
    def _fresh(reply: AIMessage, answer: Any) -> AIMessage | None:
        """``reply`` with the fresh answer's text, or None to keep it (no text, or the same)."""
        text = answer.text.strip() if isinstance(answer, AIMessage) else ""
        if not text or same_answer(text, reply.text):
            log.info("fresh_answer", changed=False)
            return None
        log.info("fresh_answer", changed=True, chars=len(text))
        kwargs = {**reply.additional_kwargs, FRESH_KEY: reply.text}
        return reply.model_copy(update={"content": text, "additional_kwargs": kwargs})

    def _plan(self, request: ModelRequest, response: Any) -> tuple[tuple[list[Any], int], list[AnyMessage]] | None:
        """Where the response's final reply is and the fresh context to ask in, when it repeats
        the sent-back answer; else None."""
        found = final_reply(response)
        fresh = self._stuck(request, found[0][found[1]]) if found else None
        return (found, fresh) if found and fresh else None

    def _apply(self, response: Any, found: tuple[list[Any], int], answer: Any) -> Any:
        """``response`` with the fresh answer in place of the repeated one (unchanged without one)."""
        made = self._fresh(found[0][found[1]], answer)
        return replace_reply(response, *found, made) if made is not None else response

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Call the model; a repeated sent-back answer is asked again in a fresh context."""
        response = handler(request)
        plan = self._plan(request, response)
        if plan is None:
            return response
        try:
            answer = request.model.bind(max_tokens=MAX_TOKENS).invoke(plan[1], config=NO_STREAM)
        except Exception as exc:  # noqa: BLE001 - the harness's own call never fails a run
            log.warning("fresh_answer_failed", error=str(exc))
            return response
        return self._apply(response, plan[0], answer)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        response = await handler(request)
        plan = self._plan(request, response)
        if plan is None:
            return response
        try:
            answer = await request.model.bind(max_tokens=MAX_TOKENS).ainvoke(plan[1], config=NO_STREAM)
        except Exception as exc:  # noqa: BLE001 - the harness's own call never fails a run
            log.warning("fresh_answer_failed", error=str(exc))
            return response
        return self._apply(response, plan[0], answer)
