"""Answer translation: an answer in the wrong language is translated on a clean page, not redone.

Asked in Chinese, the embedded 1.5B model often answers in English (its system prompt, examples
and tool descriptions are English). The completion check then sends it back once
(``reply.wrong_language``: "write the whole answer again in that language"). The small model does
not rewrite its answer: on dev it replied "好的，请告诉我你需要什么。" ("fine, tell me what you
need"), dropping the answer it had, and on the held-out split the note fired in 10 of 49 runs,
of which 3 were solved. Translating a given text is a narrow task the same model does well when
nothing else is on the page.

So when the note that would send the model back finds only the answer's language (the check
leaves that finding out while it has others: the language is fixed last, see
:meth:`~herdsman.middleware.completion.check.CompletionCheckMiddleware.problems`), the answer is
translated on a clean page (:mod:`~herdsman.middleware.clean_page`): no system prompt of the
agent, no tools, no conversation, only the answer and the language to write it in. The
translation replaces the model's next reply; the English answer is kept in its
``additional_kwargs`` (:data:`ORIGINAL_KEY`). A translation is used only when it keeps what an
answer must not lose (:func:`keeps`): it is in the request's language, holds every number, path
and code block of the answer, and is not many times longer. Otherwise the model is sent back as
before. Language-neutral: any language the check tells apart by script
(:data:`~herdsman.middleware.reply_language.ANSWER_LINES`).

Hand-written: no library re-asks an agent's model outside its conversation for its answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage

from herdsman.language.detect import language_of
from herdsman.language.user_words import LANGUAGE_NAMES
from herdsman.logs import get_logger
from herdsman.middleware.clean_page import CleanPageMiddleware, Page, blocks, note_findings
from herdsman.middleware.completion.rules import numbers_in
from herdsman.turns.turn import is_harness, named_files

log = get_logger(__name__)

TRANSLATION_KEY = "herdsman_translated_answer"
"""``additional_kwargs`` key of an answer the harness translated (its value: the language)."""
ORIGINAL_KEY = "herdsman_original_answer"
"""``additional_kwargs`` key of a translated answer holding the model's own answer."""
RULE = "reply.wrong_language"
PROMPT = (
    "Translate the text the user gives into {language}. Keep file names, paths, numbers, commands, "
    "code and code blocks exactly as they are. Reply with the translation only."
)
MAX_GROWTH = 3
"""A translation more than this many times the answer's length (plus :data:`SLACK`) went on writing."""
SLACK = 200
MIN_SHARE = 0.15
"""A translation shorter than this share of the answer's length left most of it out (Chinese takes
about a third of the characters of the English it translates)."""


def answered(run: Sequence[AnyMessage]) -> AIMessage | None:
    """The answer the note that ends ``run`` was about: the last AI message before the note, when
    it is a reply without tool calls."""
    before = [m for m in run[:-1] if not is_harness(m)]
    last = before[-1] if before else None
    return last if isinstance(last, AIMessage) and not last.tool_calls and last.text.strip() else None


def keeps(answer: str, translation: str, language: str) -> bool:
    """Whether ``translation`` of ``answer`` may stand for it: it is in ``language``, holds every
    number, named file and fenced block of the answer, and is neither many times longer nor a
    small part of its length."""
    if not MIN_SHARE * len(answer) <= len(translation.strip()) <= MAX_GROWTH * len(answer) + SLACK:
        return False
    if language_of(translation) != language:
        return False
    if not numbers_in(answer) <= numbers_in(translation):
        return False
    if any(name not in translation for name in named_files(answer)):
        return False
    return all(code.strip() in translation for _, code in blocks(answer))


class AnswerTranslationMiddleware(CleanPageMiddleware):
    """Translate an answer in the wrong language on a clean page (module docstring)."""

    RULES = frozenset({RULE})
    KEY = TRANSLATION_KEY
    TOOL: ClassVar[str | None] = None  # no tool call: the page's reply is the answer
    MAX_TOKENS = 2048

    def page(self, question: str, run: Sequence[AnyMessage], finding: dict[str, Any], sandbox: Any) -> Page | None:
        """The answer and the language to write it in, when the note found nothing else."""
        language = (finding.get("evidence") or {}).get("language")
        answer = answered(run)
        if not language or answer is None or len(note_findings(run)) != 1:
            return None
        prompt = PROMPT.format(language=LANGUAGE_NAMES.get(language, language))
        return Page([SystemMessage(prompt), HumanMessage(answer.text)], RULE, target=language, before=answer.text)

    def made(self, page: Page, reply: Any) -> AIMessage | None:
        """The translated answer, marked, when it keeps what the answer must not lose; else None."""
        text = reply.text.strip() if isinstance(reply, AIMessage) else ""
        language, answer = str(page.target), str(page.before)
        cut = isinstance(reply, AIMessage) and reply.response_metadata.get("finish_reason") == "length"
        ok = not cut and keeps(answer, text, language)  # a translation cut at the token limit lost its end
        log.info("answer_translation", language=language, used=ok)
        if not ok:
            return None
        return AIMessage(content=text, additional_kwargs={TRANSLATION_KEY: language, ORIGINAL_KEY: answer})
