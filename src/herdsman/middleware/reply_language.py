"""Answer in the language of the request.

A request written in Chinese got an English answer from the small model: its system prompt, its
worked examples and every tool description are English, and it follows them. Two pieces:

* :class:`ReplyLanguageMiddleware` writes one short line, in the request's own language ("请用中文
  回答。"), under each user message that is not in English, as the model sees it (the stored
  message is unchanged, the UI shows what the user typed). It goes under every such message, not
  only the last, so the view of earlier turns stays the same from call to call (a local model
  keeps what it computed for an unchanged beginning).
* :func:`wrong_language`, read by the completion check (rule ``reply.wrong_language``): the final
  answer of a request in a language with a line here is mostly Latin letters (English). That is
  counted by script, no model (:mod:`~herdsman.language.detect`), and the reply is sent back
  once with a note asking for the answer in the request's language. A Chinese request that asks
  for English (翻译成英文, "in English") is left alone.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from langchain_core.messages import HumanMessage

from herdsman.language.detect import language_of, prose
from herdsman.middleware.context.uploads_notice import with_notice
from herdsman.middleware.rewrite import RequestRewriteMiddleware
from herdsman.turns.turn import is_harness

ANSWER_LINES = {
    "zh": "请用中文回答。",
    "ja": "日本語で答えてください。",
    "ko": "한국어로 답해 주세요.",
    "ru": "Отвечай на русском языке.",
    "ar": "أجب باللغة العربية.",
}
"""Language -> the line, in that language, that asks for the answer in it."""

ASKS_FOR_ENGLISH = {"zh": re.compile(r"英文|英语|英語|English|翻译|翻譯|译成|譯成", re.IGNORECASE)}
"""Language -> words of a request in it that ask for English (or a translation): no check then."""

MIN_LETTERS = 24
"""Latin letters (code, paths and URLs aside) an answer needs before its language counts: "Saved
outputs/a.png." is not an English answer to complain of."""

_SCANNED = 2000
"""Characters of a message whose script is counted (a long paste needs no more)."""


def wrong_language(request: str, reply: str) -> str | None:
    """The request's language when the ``reply`` to ``request`` should be in it and is in English
    instead, else None (an English request, a language with no line here, a request that asks
    for English, a reply with too few letters to tell)."""
    language = language_of(request[:_SCANNED])
    if language not in ANSWER_LINES:
        return None
    english = ASKS_FOR_ENGLISH.get(language)
    if english is not None and english.search(request):
        return None
    if sum(c.isascii() and c.isalpha() for c in prose(reply)) < MIN_LETTERS:
        return None
    return language if language_of(reply) == "en" else None


@functools.lru_cache(maxsize=1024)
def _answer_line(head: str) -> str | None:
    """The line for a message that begins with ``head`` (cached: every model call of a thread
    sees its earlier messages again, and counting scripts costs milliseconds a message)."""
    return ANSWER_LINES.get(language_of(head))


def with_answer_line(message: HumanMessage) -> HumanMessage:
    """``message`` as the model sees it: with the line that asks for the answer in its language
    under its text, when it is written in a language with a line; else unchanged."""
    line = _answer_line(message.text[:_SCANNED])
    return with_notice(message, line) if line else message


def without_answer_line(text: str) -> str:
    """``text`` without the line :func:`with_answer_line` put under it (what the user wrote: a
    reader of the request's words, such as the skill ranker, must not take "中文" for a topic)."""
    for line in ANSWER_LINES.values():
        text = text.replace(f"\n\n{line}", "")
    return text


class ReplyLanguageMiddleware(RequestRewriteMiddleware):
    """Ask the model, in the request's language, to answer in it (see the module docstring)."""

    def rewrite(self, request: Any) -> Any:
        """Each user message not in English carries the line of its language."""
        messages = [
            with_answer_line(m) if isinstance(m, HumanMessage) and not is_harness(m) else m for m in request.messages
        ]
        return request.override(messages=messages)
