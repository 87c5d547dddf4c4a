"""The sentences the harness itself says to a person, in the language of the person's request.

A run can end on the harness's words instead of the model's: the honest "could not" that takes
the place of a reply that is no answer (:mod:`~herdsman.middleware.completion.could_not`), the line that says
the last reply was a failed step (``runtime/runs/final_answer.py``), the step limit's and the loop
detector's stop, the one line that folds the checks of a turn (``runtime/tracing/harness_notes.py``). A
person who wrote in Chinese reads them in Chinese. The language is the request's, as
:func:`~herdsman.language.detect.language_of` tells it; English is the default, and the
fallback for a language with no table here (a missing sentence falls back alone).

What the harness says to the *model* (the notes of the completion check) stays in English, the
language the small model follows best; only the line asking it to answer in the request's
language is written in that language too (:mod:`~herdsman.middleware.reply_language`).
"""

from __future__ import annotations

from typing import Any

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ru": "Russian", "ar": "Arabic"}
"""The English name of each language :func:`~herdsman.language.detect.language_of` tells apart."""

_EN = {
    "could_not": "I could not finish this request: my last reply was not a usable answer.",
    "could_not.why": " What was still wrong:",
    "answer.text_call": (
        "No answer: the agent's last reply was a tool call written as text, which was not run ({step})."
    ),
    "answer.echo": "No answer: the agent's last reply repeated a note of the harness instead of answering.",
    "checks.fold": "checked: {found}, sent back to the agent",
    "model.failed": (
        "Error: the model call failed ({kind}: {detail}). Check the model's base_url, api_key and network, "
        "then send the message again; the thread is kept."
    ),
    "checks.findings": "{n} finding{s}",
    "checks.notes": "{n} note{s}",
    "stop.max_steps": (
        "I stopped after {limit} model calls, the limit of one run (lead.max_steps in config.yaml, "
        "or the agent's max_steps). Send a message to go on from here, or raise the limit."
    ),
    "stop.loop": (
        "I stopped because I kept making the same tool call ({what}) without progress ({times} times in a "
        "row). Tell me how to proceed, or rephrase the request."
    ),
    # why a run did not deliver, as `herdsman run` and `chat` print it (runtime/runs/run_outcome.py)
    "outcome.not_done": "Not done:",
    "outcome.limit": "the run was stopped by a limit ({reason}): {text}",
    "outcome.failed": "the run failed: {text}",
    "outcome.missing": "the requested {what} is missing ({rule})",
    "outcome.deliverable": "the deliverable",
    "outcome.work_failed": "{detects} ({rule})",
}

_ZH = {
    "could_not": "我没能完成这个请求：我最后的回复不是可用的回答。",
    "could_not.why": "仍然存在的问题：",
    "answer.text_call": "没有回答：智能体最后的回复是写成文字的工具调用（{tools}），它没有被执行。",
    "answer.echo": "没有回答：智能体最后的回复重复了系统给它的提示，而没有回答请求。",
    "checks.fold": "已检查：{found}，已退回给智能体",
    "model.failed": (
        "错误：模型调用失败（{kind}：{detail}）。请检查模型的 base_url、api_key 和网络，然后重新发送消息；对话已保留。"
    ),
    "checks.findings": "{n} 个问题",
    "checks.notes": "{n} 条提示",
    "stop.max_steps": (
        "我在调用模型 {limit} 次后停下了，这是一次运行的上限（config.yaml 中的 lead.max_steps，"
        "或智能体的 max_steps）。发送一条消息即可从这里继续，或者提高上限。"
    ),
    "stop.loop": (
        "我停下了：我一直重复同一个工具调用（{what}），没有进展（连续 {times} 次）。"
        "请告诉我如何继续，或换一种说法重新提出请求。"
    ),
    # what each rule of the completion check detects, for the "could not" (findings.RULES, in English, is the fallback)
    "rule.call.as_text": "回复里有一个写成文字的工具调用（它没有被执行）",
    "rule.tool.unknown": "调用了一个不存在的工具",
    "rule.reply.echoes_note": "回复重复了系统的提示，而没有回答",
    "rule.reply.wrong_language": "回答没有使用请求的语言",
    "rule.source.unseen": "回答里的链接没有任何工具打开过，用户也没有提供",
    "rule.path.missing": "请求要的文件不存在",
    "rule.file.missing": "请求要创建的文件不存在",
    "rule.path.empty": "请求要的文件是空的",
    "rule.file.empty": "请求要创建的文件是空的",
    "rule.path.not_a_file": "请求要的文件是一个文件夹",
    "rule.folder.empty": "请求要的文件夹里没有文件",
    "rule.skill.output_missing": "当前技能应交付的文件还没有",
    "rule.skill.output_misnamed": "当前技能交付的文件写成了没有扩展名的文件",
    "rule.command.failed_not_retried": "最后一个工具调用失败了",
    "rule.script.does_not_parse": "运行写出的 Python 或 JSON 文件无法解析",
    "outcome.not_done": "未完成：",
    "outcome.limit": "运行被上限停止（{reason}）：{text}",
    "outcome.failed": "运行失败：{text}",
    "outcome.missing": "要求的 {what} 没有交付（{rule}）",
    "outcome.deliverable": "交付物",
    "outcome.work_failed": "{detects}（{rule}）",
}

TEXTS: dict[str, dict[str, str]] = {"en": _EN, "zh": _ZH}
"""Language -> sentence id -> the sentence (``str.format`` fields in braces)."""


def say(key: str, language: str = "en", **values: Any) -> str:
    """The sentence ``key`` in ``language`` (English when that language has none), filled with ``values``."""
    text = TEXTS.get(language, _EN).get(key) or _EN[key]
    return text.format(**values)


def has(key: str, language: str) -> bool:
    """Whether ``language`` has its own sentence ``key``."""
    return key in TEXTS.get(language, {})
