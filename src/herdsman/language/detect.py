"""Which language a request is written in, as far as the harness needs to know (the completion
check's rules, the answer's language, the sentences the harness says to a person).

The rules that read English intent ("fix", "how many", "sorted") must not run on a request in
Chinese or Japanese, where they see only the file names and misread them. Telling the writing
system apart is enough for that, and needs no model: the letters of a request (once paths, file
names, URLs and code are taken out) are counted by script. A text mostly in Han characters is
``zh``, one with kana ``ja``, Hangul ``ko``, Cyrillic ``ru``, Arabic ``ar``; Latin letters are
taken for ``en``, the only language whose words the rules know (a French request is called
English here: the English words the rules look for are simply not in it). Hand-written because
no detector is among the project's dependencies and a script count is all the gate needs.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_NOT_WORDS = re.compile(r"```.*?(?:```|\Z)|`[^`]*`|https?://\S+|[\w./-]*/[\w./-]*|\b[\w-]+\.\w{1,5}\b", re.DOTALL)
_SCRIPTS = (
    ("HIRAGANA", "ja"),
    ("KATAKANA", "ja"),
    ("HANGUL", "ko"),
    ("CJK", "zh"),
    ("CYRILLIC", "ru"),
    ("ARABIC", "ar"),
    ("LATIN", "en"),
)
MIN_SHARE = 0.2
"""The share of a request's letters a non-Latin script needs to name its language (a Chinese
request quotes English terms such as CSV; an English one may quote a Chinese name)."""


def prose(text: str) -> str:
    """``text`` with its paths, file names, URLs and code taken out (what :func:`language_of` counts)."""
    return _NOT_WORDS.sub(" ", text)


@functools.lru_cache(maxsize=8192)
def _script(char: str) -> str | None:
    """The language :data:`_SCRIPTS` gives a letter's script, or None (cached: a text repeats its
    letters, and the name lookup is the cost)."""
    try:
        name = unicodedata.name(char)
    except ValueError:
        return None
    return next(
        (language for script, language in _SCRIPTS if name.startswith(script) or f" {script} " in f" {name} "), None
    )


def language_of(text: str) -> str:
    """``en``, ``zh``, ``ja``, ``ko``, ``ru``, ``ar``, or ``und`` (no letters): the language of
    ``text`` by the script of its letters (paths, file names, URLs and code aside)."""
    counts: dict[str, int] = {}
    for char in prose(text):
        if char.isalpha():
            language = _script(char)
            if language is not None:
                counts[language] = counts.get(language, 0) + 1
    total = sum(counts.values())
    if not total:
        return "und"
    if counts.get("ja") and counts.get("ja", 0) + counts.get("zh", 0) >= MIN_SHARE * total:
        return "ja"  # Japanese writes kanji (Han) with kana
    others = [(n, lang) for lang, n in counts.items() if lang != "en" and n >= MIN_SHARE * total]
    return max(others)[1] if others else "en"
