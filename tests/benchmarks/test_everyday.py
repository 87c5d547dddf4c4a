"""The everyday benchmark's request set and judge, without a model, and a short run through the web
UI with the canned model (``--model scripted``; the embedded model is run by hand)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO
from tests.web.web_support import browser_missing

sys.path.insert(0, str(REPO / "benchmarks"))

import everyday as bench  # noqa: E402


def place(root: Path, request: dict[str, Any]) -> None:
    """The request's set-up files under ``root`` (a thread's user-data folder), as the run gives them."""
    for folder in ("workspace", "uploads", "outputs"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for folder in ("workspace", "uploads"):
        for rel, text in (request.get(folder) or {}).items():
            (root / folder / rel).write_text(text)


def by_id(request_id: str) -> dict[str, Any]:
    return next(r for r in bench.load() if r["id"] == request_id)


def test_the_set_has_both_kinds_in_both_languages() -> None:
    requests = bench.load()
    assert len(requests) >= 14 and len({r["id"] for r in requests}) == len(requests)
    kinds = Counter(r["kind"] for r in requests)
    assert kinds["question"] >= 6 and kinds["deliverable"] >= 8 and set(kinds) == {"question", "deliverable"}
    for kind in kinds:
        languages = Counter(r["language"] for r in requests if r["kind"] == kind)
        assert set(languages) == {"en", "zh"} and min(languages.values()) >= 3, kind
    for r in requests:
        chinese = bench.share_cjk(r["text"]) > 0.5
        assert chinese == (r["language"] == "zh"), r["id"]
        assert r["scripted"], r["id"]
        if r["kind"] == "question":
            assert r["min_length"] > 0 and not (r.get("uploads") or r.get("workspace") or r.get("check")), r["id"]
        else:
            assert r["check"] and r["deliver"] and (r.get("uploads") or r.get("workspace")), r["id"]
    assert [r["id"] for r in bench.load(only="d_books_json,q_lighthouse")] == ["q_lighthouse", "d_books_json"]
    with pytest.raises(SystemExit):
        bench.load(only="no_such_request")


@pytest.mark.parametrize("request_id", [r["id"] for r in bench.load() if r["kind"] == "deliverable"])
def test_nothing_done_is_neither_delivered_nor_correct(tmp_path: Path, request_id: str) -> None:
    request = by_id(request_id)
    place(tmp_path, request)
    assert not bench.is_delivered(request, tmp_path)
    assert bench.check_request(request["check"], tmp_path, "") is not None


def test_glob_paths_pass_when_one_matching_file_passes(tmp_path: Path) -> None:
    request = by_id("d_books_json")
    place(tmp_path, request)
    (tmp_path / "outputs" / "notes.json").write_text('{"not": "the books"}')
    assert bench.check_request(request["check"], tmp_path, "") is not None
    rows = [
        {"title": "Dune", "author": "Frank Herbert", "year": "1965"},
        {"title": "Neuromancer", "author": "William Gibson", "year": 1984},
        {"title": "The Left Hand of Darkness", "author": "Ursula K. Le Guin", "year": 1969},
        {"title": "Kindred", "author": "Octavia E. Butler", "year": 1979},
    ]
    (tmp_path / "outputs" / "books.json").write_text(json.dumps(rows))
    assert bench.check_request(request["check"], tmp_path, "") is None
    assert bench.is_delivered(request, tmp_path)


def test_the_fix_is_judged_by_what_the_script_prints(tmp_path: Path) -> None:
    request = by_id("d_fix_average")
    place(tmp_path, request)
    script = tmp_path / "workspace" / "average.py"
    script.write_text(script.read_text() + "\n# looked at, not fixed\n")
    assert bench.is_delivered(request, tmp_path)  # changed...
    assert bench.check_request(request["check"], tmp_path, "") is not None  # ...but still wrong
    script.write_text(script.read_text().replace("range(1, len(values))", "range(len(values))"))
    assert bench.check_request(request["check"], tmp_path, "") is None


TESTS_HEAD = "import unittest\nfrom palindrome import is_palindrome\n\nclass T(unittest.TestCase):\n"
TESTS_TAIL = "\nif __name__ == '__main__':\n    unittest.main()\n"


def test_palindrome_tests_must_pass_and_catch_a_broken_function(tmp_path: Path) -> None:
    request = by_id("d_palindrome_tests")
    place(tmp_path, request)
    tests = tmp_path / "workspace" / "test_palindrome.py"
    only_true = "    def test_word(self):\n        self.assertTrue(is_palindrome('level'))\n"
    tests.write_text(TESTS_HEAD + only_true + TESTS_TAIL)  # passes, but also when it always says True
    assert "exited" in (bench.check_request(request["check"], tmp_path, "") or "")
    wrong = "    def test_word(self):\n        self.assertFalse(is_palindrome('level'))\n"
    tests.write_text(TESTS_HEAD + wrong + TESTS_TAIL)  # fails on the right function
    assert bench.check_request(request["check"], tmp_path, "") is not None
    both = only_true + "    def test_other(self):\n        self.assertFalse(is_palindrome('hello'))\n"
    tests.write_text(TESTS_HEAD + both + TESTS_TAIL)
    assert bench.check_request(request["check"], tmp_path, "") is None
    assert (tmp_path / "workspace" / "palindrome.py").read_text() == request["workspace"][
        "palindrome.py"
    ]  # checked on a copy


def note(text: str, *rules: str) -> dict[str, Any]:
    return {
        "type": "human",
        "name": "harness",
        "content": text,
        "additional_kwargs": {"herdsman_findings": [{"rule": r} for r in rules]},
    }


def test_a_direct_answer_is_in_the_request_language_long_enough_and_asked_for_no_tools() -> None:
    poem = by_id("q_autumn_poem_zh")
    assert bench.direct_problems(poem, "西风吹落满山黄，雁字南飞过夕阳。稻谷低头香十里，一轮明月照秋霜。", [], []) == []
    assert any(
        "not in Chinese" in p
        for p in bench.direct_problems(poem, "Autumn leaves fall down, the wind is cold and grey tonight.", [], [])
    )
    assert any("too short" in p for p in bench.direct_problems(poem, "秋天来了。", [], []))
    assert bench.direct_problems(poem, "", [], []) == ["no final answer"]
    email = by_id("q_landlord_email")
    answer = "Dear landlord, " + "the kitchen tap leaks and needs a repair this week please " * 5
    assert bench.direct_problems(email, answer, ["number.unsupported"], []) == []
    asked = bench.direct_problems(email, answer, ["tool.none_used_topic", "file.missing"], [])
    assert asked == [
        "the harness asked for tools or files (tool.none_used_topic)",
        "the harness asked for tools or files (file.missing)",
    ]


def test_a_url_counts_only_when_a_tool_result_or_the_request_holds_it() -> None:
    fetched = {"type": "tool", "content": "Fetched https://example.org/lighthouses: 200 OK"}
    answer = "Sources: https://example.org/lighthouses, and (https://made-up.example/fresnel)."
    assert bench.invented_urls(answer, "how does a lighthouse work?", [fetched]) == ["https://made-up.example/fresnel"]
    assert bench.invented_urls(answer, "see https://made-up.example/fresnel", [fetched]) == []


def test_a_note_shown_as_a_message_is_found_but_not_what_it_quotes() -> None:
    request = {"type": "human", "content": "Explain in about 300 words how a lighthouse works, no files needed."}
    first = {"type": "ai", "content": "A lighthouse turns a small lamp into a beam that sailors see from far away."}
    sent_back = note(
        "[harness check] Not done yet:\n- You answered without using any tool. Look at the files with your "
        "tools (read_file, ls, grep, bash) and answer from what they show.\n- Your answer was the line below:\n"
        "A lighthouse turns a small lamp into a beam that sailors see from far away.",
        "tool.none_used",
    )
    messages = [request, first, sent_back, {"type": "ai", "content": "..."}]
    assert bench.note_rules(messages) == ["tool.none_used"]
    # the agent's own words, shown as its answer, are not the note's (the note only quoted them)
    assert not bench.note_in_conversation([request["content"], first["content"]], messages)
    # the note's own sentence as the agent's message (rendered Markdown: no backticks, other spacing)
    echoed = (
        "You answered without using any tool.\nLook at the files with your tools (read_file, ls, grep, bash) and answer"
    )
    assert bench.note_in_conversation([request["content"], echoed], messages)
    shown = bench.note_shown([request["content"], echoed], messages)
    assert shown is not None and shown.startswith(echoed[:50]) and "[holds: " in shown  # what to look at
    assert bench.note_in_conversation(["[harness check] Not done yet"], [request])


def test_the_final_answer_is_the_last_message_when_it_is_the_agents_text() -> None:
    call = {"type": "ai", "content": "", "tool_calls": [{"name": "bash", "args": {}, "id": "c1"}]}
    assert (
        bench.final_answer(
            [{"type": "human", "content": "q"}, {"type": "ai", "content": [{"type": "text", "text": " A. "}]}]
        )
        == "A."
    )
    assert bench.final_answer([{"type": "human", "content": "q"}, call]) == ""
    assert bench.final_answer([{"type": "ai", "content": "A"}, note("[harness check] Not done yet")]) == ""


def test_a_scripted_run_through_the_web_ui_reports_each_request(tmp_path: Path) -> None:
    """One question and one deliverable as written, two canned replies that are wrong (a total of
    250 in the file, an English answer to a Chinese question), and one that takes longer than
    ``--max-seconds`` (the page's Stop ends it)."""
    reason = browser_missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    requests = bench.load()
    wrong_total = {
        **by_id("d_expenses_total_zh"),
        "id": "wrong_total",
        "text": "帮我把 expenses.csv 的金额加总，写进 outputs/total.txt。",
    }
    wrong_total["scripted"] = [
        {
            "tool_calls": [
                {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/total.txt", "content": "250\n"}}
            ]
        },
        "总数是 250，写在 outputs/total.txt。",
    ]
    english = {**by_id("q_cats_dogs_zh"), "id": "english_answer", "text": "猫和狗，哪个更适合住公寓的人？"}
    english["scripted"] = [
        "Cats suit a small flat better: they need no walks, stay quiet and are happy indoors, while most dogs "
        "need daily walks, space and company, and some bark when left alone."
    ]
    slow = {
        **by_id("q_landlord_email"),
        "id": "slow",
        "text": "Write a short thank-you note to my neighbour for watering my plants.",
    }
    slow["scripted"] = [{"content": "Dear neighbour, thank you for watering my plants while I was away.", "delay": 300}]
    data = tmp_path / "everyday.yaml"
    data.write_text(yaml.safe_dump({"requests": [*requests, wrong_total, english, slow]}, allow_unicode=True))
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "everyday.py"),
            "--model",
            "scripted",
            "--data",
            str(data),
            "--only",
            "q_landlord_email,d_expenses_total_zh,wrong_total,english_answer,slow",
            "--max-seconds",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    assert figures["model"] == "scripted" and figures["warmup_s"] is None  # only the embedded model is warmed up
    records = {r["id"]: r for r in figures["requests"]}
    stopped = records.pop("slow")
    assert stopped["error"].startswith("the run did not end within 20 s") and stopped["outcome"] == "stopped"
    assert (stopped["delivered"], stopped["direct"], stopped["first_text_s"], stopped["answer"]) == (
        False,
        False,
        None,
        "",
    )
    assert list(records) == ["q_landlord_email", "d_expenses_total_zh", "wrong_total", "english_answer"]
    keys = {
        "id",
        "kind",
        "language",
        "delivered",
        "correct",
        "direct",
        "harness_note_in_conversation",
        "first_text_s",
        "total_s",
        "error",
        "outcome",
        "why",
        "notes",
        "checked",
        "malformed_calls",
        "page_errors",
        "answer",
    }
    for r in records.values():
        assert keys <= set(r), r
        assert r["error"] is None and r["harness_note_in_conversation"] is False and r["page_errors"] == [], r
        assert r["first_text_s"] is not None and r["total_s"] is not None and r["first_text_s"] <= r["total_s"], r
        assert bool(r["notes"]) == bool(r["checked"]), r  # a note of the harness is shown folded, never as a message
    assert {records[i]["outcome"] for i in ("q_landlord_email", "d_expenses_total_zh")} == {"done"}
    # the wrong total may be sent back by the completion check; then the page says so
    assert records["wrong_total"]["outcome"] == ("not delivered" if records["wrong_total"]["notes"] else "done")
    email = records["q_landlord_email"]
    assert (email["kind"], email["language"], email["direct"], email["correct"]) == ("question", "en", True, True)
    assert email["answer"].startswith("Subject: Leaking kitchen tap")
    right = records["d_expenses_total_zh"]
    assert (right["kind"], right["language"], right["delivered"], right["correct"], right["direct"]) == (
        "deliverable",
        "zh",
        True,
        True,
        None,
    )
    wrong = records["wrong_total"]
    assert wrong["delivered"] is True and wrong["correct"] is False and "205.4" in wrong["why"][0]
    assert records["english_answer"]["direct"] is False and "not in Chinese" in records["english_answer"]["why"][0]
    totals = figures["totals"]
    assert (totals["requests"], totals["questions_direct"], totals["deliverables_correct"], totals["errors"]) == (
        5,
        "1/3",
        "1/2",
        1,
    )
    assert totals["deliverable_correct_share"] == 0.5 and totals["harness_notes_in_conversation"] == 0
    assert totals["median_total_s"] is not None and sum(totals["outcomes"].values()) == 5
