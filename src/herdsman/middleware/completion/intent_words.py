"""The words of intent the completion check's language-bound rules read, by language.

Most rules of the completion check are structural (a path that is missing, a command that
failed, a number no tool printed) and hold for a request in any language. A few read what the
request asks for: to change a file ("fix", 修复), to make one ("save", 保存), a count ("how many",
多少), the largest of something ("which ... largest", 哪个最大), a sorted list ("sorted", 排序),
or whether it is about files at all. Their words are here, one table per intent with a pattern
per language, so a rule declares the languages it understands
(:data:`~herdsman.middleware.completion.findings.RULES`) and every language it declares has its words in
one place. English and Chinese (Simplified and Traditional characters where they differ) are
written; a language without a pattern never matches, so its rules stay off.

Hand-written because these are short word lists, not a language model's job: the rules need to
know that the request says "fix", not what it means, and a wrong match only sends one extra note.
"""

from __future__ import annotations

import re

INTENT_LANGUAGES = ("en", "zh")
"""The languages whose words of intent are written here."""

_SUPERLATIVES_ZH = "最(?:大|多|高|小|少|低|长|長|短|新|旧|舊|早|晚|贵|貴|便宜|热|熱|冷|重|轻|輕)"
_ASKS_ZH = "哪|什么|什麼|谁|誰"

_WORDS: dict[str, dict[str, re.Pattern[str]]] = {
    # the request asks to change an existing file
    "change": {
        "en": re.compile(r"\b(fix|fixes|change|edit|update|modify|correct|set|repair)\b", re.IGNORECASE),
        "zh": re.compile(
            r"(修复|修復|修正|修改|更改|改成|改为|改為|改正|纠正|糾正|更新|设置|設置|设为|設為|编辑|編輯|调整|調整)"
        ),
    },
    # the request asks for a file to be made (saved, written, converted, moved...)
    "make": {
        "en": re.compile(
            r"\b(save|saves|saved|write|writes|create|creates|generate|export|produce|make|store|put|output|"
            r"convert|rename|move|copy|build|draw|plot|render|dump|append|add|split|merge|extract|compress|archive)\b",
            re.IGNORECASE,
        ),
        "zh": re.compile(
            r"(保存|存为|存為|存到|存入|另存|写入|寫入|写到|寫到|写成|寫成|写一个|寫一個|创建|創建|新建|生成|导出|導出|输出到|輸出到|"
            r"制作|製作|转换|轉換|重命名|改名|移动|移動|复制|複製|拷贝|拷貝|打包|压缩|壓縮|归档|歸檔|合并|合併|拆分|提取|追加|"
            r"添加|画|畫|绘制|繪製)"
        ),
    },
    # the request asks for a count or a total
    "count": {
        "en": re.compile(r"\b(how many|how much|what is the (?:total|sum|average|mean|count|number))\b", re.IGNORECASE),
        "zh": re.compile(
            r"(多少|几[个個行次条條项項种種天份位]|幾[个個行次条條项項种種天份位]|总和|總和|总数|總數|合计|合計|总计|總計|平均)"
        ),
    },
    # the request asks which item is the largest, smallest, newest...: the word is a group
    "superlative": {
        "en": re.compile(
            r"\b(?:which|what)\b(?:[^?.]|\.(?=\w))*?\b(largest|biggest|smallest|longest|shortest|oldest|newest|highest|lowest|warmest|"
            r"coldest|cheapest|most|least)\b",
            re.IGNORECASE,
        ),
        "zh": re.compile(
            rf"(?:{_ASKS_ZH})[^。！？?!]*?({_SUPERLATIVES_ZH})|({_SUPERLATIVES_ZH})[^。！？?!]*?(?:{_ASKS_ZH})"
        ),
    },
    # the request asks for a sorted list
    "sorted": {
        "en": re.compile(
            r"\b(?:sorted|in (?:alphabetical|ascending|descending) order|alphabetically)\b", re.IGNORECASE
        ),
        "zh": re.compile(
            r"(排序|排好序|按字母|按顺序|按順序|升序|降序|从小到大|從小到大|从大到小|從大到小|从高到低|從高到低|从低到高|從低到高)"
        ),
    },
    # the request talks of files, folders or data
    "files": {
        "en": re.compile(
            r"\b(files?|folders?|director(?:y|ies)|workspace|uploads?|csv|json|script|dataset)\b", re.IGNORECASE
        ),
        "zh": re.compile(r"(文件|檔案|文件夹|資料夾|目录|目錄|数据|數據|脚本|腳本|日志|日誌|表格|上传|上傳)"),
    },
    # a negation just before a word ("no files needed", 不需要文件)
    "negation": {
        "en": re.compile(r"\b(?:no|without|not|don't|do not|never|nor)\b(?:\s+\w+){0,2}\s*$", re.IGNORECASE),
        "zh": re.compile(r"(?:不|无|無|没有|沒有|不用|无需|無需|不需要|不必)[\u4e00-\u9fff]{0,3}$"),
    },
    # the request is a question (besides a question mark): a question word, and no task verb
    "question": {
        "zh": re.compile(r"(多少|几|幾|哪|什么|什麼|谁|誰|是否|有没有|有沒有|吗\s*$|嗎\s*$)"),
    },
}

_UNITS: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    # what a count asks to count, as the wc option that counts it
    "en": ((re.compile(r"\b(?:count|number of|how many)\s+(?:the\s+)?(words|lines|characters)\b", re.IGNORECASE), ""),),
    "zh": (
        (re.compile(r"(字数|字數|词数|詞數|单词数|單詞數|多少(?:个|個)?(?:单|單)?(?:词|詞))"), "words"),
        (re.compile(r"(行数|行數|多少行|几行|幾行)"), "lines"),
        (re.compile(r"(字符数|字符數|多少(?:个|個)?字符)"), "characters"),
    ),
}


def says(intent: str, text: str, language: str) -> re.Match[str] | None:
    """Where ``text``, written in ``language``, says ``intent`` (one of the tables above), or
    None (also for a language with no words for it)."""
    pattern = _WORDS[intent].get(language)
    return pattern.search(text) if pattern is not None else None


def said_word(match: re.Match[str]) -> str:
    """The word a match of an intent with a group caught (the superlative: "largest", 最大)."""
    return next((g for g in match.groups() if g), match.group(0)).lower()


_LEAST = frozenset(
    "smallest shortest lowest coldest cheapest least fewest 最小 最少 最低 最短 最便宜 最冷 最轻 最輕".split()
)
_MOST = frozenset(
    "largest biggest longest highest warmest most 最大 最多 最高 最长 最長 最贵 最貴 最热 最熱 最重".split()
)


def extreme(word: str) -> str | None:
    """Which way the superlative ``word`` (:func:`said_word` of a ``superlative`` match)
    compares: "min", "max", or None for one that does not say (oldest, newest, 最新)."""
    return "min" if word in _LEAST else "max" if word in _MOST else None


def counted_unit(text: str, language: str) -> str | None:
    """What a count request asks to count: ``words``, ``lines``, ``characters``, or None."""
    for pattern, unit in _UNITS.get(language, ()):
        match = pattern.search(text)
        if match is not None:
            return unit or match.group(1).lower()
    return None


def files_topic(text: str, language: str) -> bool:
    """Whether ``text`` talks of files, folders or data, not negated ("no files needed",
    不需要文件: not)."""
    pattern = _WORDS["files"].get(language)
    negation = _WORDS["negation"].get(language)
    if pattern is None:
        return False
    return any(
        negation is None or not negation.search(text[max(0, m.start() - 24) : m.start()])
        for m in pattern.finditer(text)
    )


def zh_question(text: str) -> bool:
    """Whether a Chinese request is a question: it ends with a question mark or asks with a
    question word (多少, 哪, 是否...), and asks for no file to be made or changed."""
    text = text.strip()
    asked = text.endswith(("?", "\uff1f")) or says("question", text, "zh") is not None
    return asked and says("make", text, "zh") is None and says("change", text, "zh") is None
