"""The judge of the everyday benchmark: pure functions over a thread's messages, its files and what
the page showed.

- a deliverable request is *delivered* when each of its ``deliver`` globs (under the thread's
  user-data folder) matches a file that is new or changed, and *correct* when its check passes
  (the checks of ``agent_tasks/checks.py``; a ``path`` may be a glob, passing when one matching
  file passes);
- a question is *direct* when no note of the harness asked for tools or files (the rule ids of
  :data:`ASKED_FOR_TOOLS`, read from the notes' ``herdsman_findings``), and the final answer is
  there, in the request's language (its letters mostly CJK for a Chinese request, mostly Latin for
  an English one), at least ``min_length`` long (words, or CJK characters), and names no URL that
  neither the request nor a tool result holds;
- a note of the harness is *in the conversation* when a message the page shows outside the folded
  "checked" lines holds a sentence the harness wrote (one the conversation before the note does
  not hold, so the parts a note quotes of the agent's own words do not count), or a raw
  ``[harness ...]`` prefix.

Counting words splits on Latin letters: English and the languages written like it; a Chinese
request's length is counted in CJK characters.
"""

from __future__ import annotations

import glob
import re
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "agent_tasks"))

from checks import check  # noqa: E402

ASKED_FOR_TOOLS = ("tool.none_used", "tool.none_used_topic", "path.missing", "file.missing")
"""Rules whose notes ask the agent to use tools or make a file: wrong for a question that needs none."""

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`，。、）]+")
RAW_NOTE = re.compile(r"\[harness(?: check| review| plan)?\]|\[plan\] Step \d")
SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")
MARKUP = re.compile(r"[*_`#>|]+")
MIN_SENTENCE = 30
"""A note's sentence shorter than this is not looked for in the conversation (too likely by chance)."""


def text_of(message: Mapping[str, Any]) -> str:
    """The text of a message's content (a string, or a list of parts) as LangGraph's JSON holds it."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content if isinstance(p, (str, dict)))
    return ""


def is_note(message: Mapping[str, Any]) -> bool:
    """Whether the message is a note of the harness to the model."""
    return message.get("type") == "human" and message.get("name") == "harness"


def note_rules(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """The rule ids of every finding the harness's notes carry, in order."""
    rules = []
    for message in messages:
        if is_note(message):
            for finding in (message.get("additional_kwargs") or {}).get("herdsman_findings") or []:
                if isinstance(finding, Mapping) and isinstance(finding.get("rule"), str):
                    rules.append(finding["rule"])
    return rules


def final_answer(messages: Sequence[Mapping[str, Any]]) -> str:
    """The run's final answer: the last message when it is the agent's text, else nothing."""
    if not messages:
        return ""
    last = messages[-1]
    if last.get("type") != "ai" or last.get("tool_calls"):
        return ""
    return text_of(last).strip()


def share_cjk(text: str) -> float:
    """CJK characters among the letters (CJK and Latin) of ``text``; 0 for no letters."""
    cjk, latin = len(CJK.findall(text)), len(LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def length(text: str, language: str) -> int:
    """Words (Latin script) or CJK characters (``zh``)."""
    return len(CJK.findall(text)) if language == "zh" else len(WORD.findall(text))


def invented_urls(answer: str, request: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """URLs of the answer that neither the request nor any tool result holds."""
    known = request + "\n" + "\n".join(text_of(m) for m in messages if m.get("type") == "tool")
    found = [u.rstrip(".,;:!?") for u in URL.findall(answer)]
    return sorted({u for u in found if u not in known})


def direct_problems(request: Mapping[str, Any], answer: str, rules: Sequence[str], urls: Sequence[str]) -> list[str]:
    """Why a question's answer is not direct (empty when it is)."""
    problems = [f"the harness asked for tools or files ({rule})" for rule in dict.fromkeys(rules) if rule in ASKED_FOR_TOOLS]
    if not answer.strip():
        return [*problems, "no final answer"]
    language = request["language"]
    cjk = share_cjk(answer)
    if language == "zh" and cjk < 0.5:
        problems.append(f"not in Chinese (CJK share {cjk:.2f})")
    if language != "zh" and cjk > 0.1:
        problems.append(f"not in the request's language (CJK share {cjk:.2f})")
    size, wanted = length(answer, language), int(request.get("min_length") or 1)
    if size < wanted:
        problems.append(f"too short: {size} {'characters' if language == 'zh' else 'words'}, at least {wanted} wanted")
    problems += [f"a URL no tool result or the request holds: {u}" for u in urls]
    return problems


def _plain(text: str) -> str:
    return " ".join(MARKUP.sub("", text).split())


def harness_sentences(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The sentences the harness wrote in its notes: long enough, and not in any message before the
    note (what a note quotes of the request, the agent's answer or a tool result is not its own)."""
    out: list[str] = []
    for i, message in enumerate(messages):
        if not is_note(message):
            continue
        before = _plain("\n".join(text_of(m) for m in messages[:i]))
        for sentence in SENTENCE.split(RAW_NOTE.sub("", text_of(message))):
            plain = _plain(sentence.lstrip("- "))
            if len(plain) >= MIN_SENTENCE and plain not in before and plain not in out:
                out.append(plain)
    return out


def note_in_conversation(visible: Iterable[str], messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a message the page shows (outside the folded lines) holds a note of the harness."""
    sentences = harness_sentences(messages)
    for shown in visible:
        if RAW_NOTE.search(shown):
            return True
        plain = _plain(shown)
        if any(s in plain for s in sentences):
            return True
    return False


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.glob(pattern) if p.is_file())


def delivered(request: Mapping[str, Any], root: Path) -> bool:
    """Each ``deliver`` glob matches a file that is new or changed (not a set-up file as given)."""
    given = {f"workspace/{k}": v for k, v in (request.get("workspace") or {}).items()}
    given |= {f"uploads/{k}": v for k, v in (request.get("uploads") or {}).items()}
    for pattern in request.get("deliver") or []:
        fresh = [p for p in _files(root, pattern) if given.get(p.relative_to(root).as_posix()) != p.read_text(errors="replace")]
        if not fresh:
            return False
    return True


def check_request(spec: Sequence[Mapping[str, Any]], root: Path, answer: str) -> str | None:
    """None when every check of ``spec`` passes on ``root`` and ``answer``, else why not. A check
    whose ``path`` is a glob passes when one of the files it matches passes."""
    for item in spec:
        path = item.get("path")
        if not isinstance(path, str) or not glob.has_magic(path):
            why = check(dict(item), root, answer)
        else:
            candidates = _files(root, path)
            if not candidates:
                why = f"no file matches {path}"
            else:
                tried = [check({**item, "path": p.relative_to(root).as_posix()}, root, answer) for p in candidates]
                why = None if None in tried else tried[0]
        if why is not None:
            return why
    return None


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 1) if known else None


def totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures over every request: direct questions, correct deliverables, notes shown, medians."""
    questions = [r for r in records if r["kind"] == "question"]
    deliverables = [r for r in records if r["kind"] == "deliverable"]
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.get("outcome") or "none"] = outcomes.get(r.get("outcome") or "none", 0) + 1
    return {
        "requests": len(records),
        "questions_direct": f"{sum(bool(r['direct']) for r in questions)}/{len(questions)}",
        "deliverables_delivered": f"{sum(bool(r['delivered']) for r in deliverables)}/{len(deliverables)}",
        "deliverables_correct": f"{sum(bool(r['correct']) for r in deliverables)}/{len(deliverables)}",
        "deliverable_correct_share": round(sum(bool(r["correct"]) for r in deliverables) / len(deliverables), 3) if deliverables else None,
        "harness_notes_in_conversation": sum(bool(r["harness_note_in_conversation"]) for r in records),
        "invented_urls": sum(bool(r.get("invented_urls")) for r in records),
        "errors": sum(bool(r["error"]) for r in records),
        "outcomes": outcomes,
        "median_first_text_s": _median(r["first_text_s"] for r in records),
        "median_total_s": _median(r["total_s"] for r in records),
        "median_total_s_questions": _median(r["total_s"] for r in questions),
        "median_total_s_deliverables": _median(r["total_s"] for r in deliverables),
    }
