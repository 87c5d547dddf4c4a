"""The agent task benchmark's split into development and held-out test tasks is fixed in the data,
and the summary reports each split (and the gap between them) with the right arithmetic."""

from __future__ import annotations

import sys

import pytest

from tests.support import REPO

sys.path.insert(0, str(REPO / "benchmarks" / "agent_tasks"))

import run as bench  # noqa: E402

# The held-out test split. Moving a task into or out of it is a deliberate edit of this list (and
# of make_tasks.py / heldout.py): see the discipline in benchmarks/agent_tasks/README.md.
TEST_IDS = [
    "test_bg_crunch_log",
    "test_bg_stock_server",
    "test_bg_version_server",
    "test_data_active_emails",
    "test_data_class_avg",
    "test_data_top_stock_value",
    "test_deleg_line_counts",
    "test_deleg_min_max",
    "test_files_add_header",
    "test_files_move_pdfs",
    "test_fix_fizzbuzz",
    "test_fix_pager",
    "test_fix_price_sum",
    "test_fsq_file_exists",
    "test_fsq_folder_bytes",
    "test_fsq_largest_file",
    "test_fsq_line_count",
    "test_fsq_newest_file",
    "test_logs_distinct_users",
    "test_logs_error_window",
    "test_logs_resets",
    "test_logs_status_codes",
    "test_long_powers_of_two",
    "test_long_q1_dates",
    "test_mf_rename_function",
    "test_mf_timeouts",
    "test_mf_version_bump",
    "test_multi_top_words",
    "test_multi_travel_expenses",
    "test_perm_deploy_script",
    "test_perm_find_executables",
    "test_perm_private_keys",
    "test_script_checkport",
    "test_script_colsum",
    "test_script_greet_sh",
    "test_script_wordfreq",
    "test_search_invoice_mail",
    "test_search_requests_imports",
    "test_search_staging_port",
    "test_shell_ext_counts",
    "test_shell_tarball",
    "test_skill_teahouse_site",
    "test_skill_weekday_chart",
    "test_upload_median_call",
    "test_upload_top_city",
    "test_val_billing_owner",
    "test_val_earliest_event",
    "test_val_over_100",
    "test_val_readings_sum",
]


def test_the_test_split_is_pinned() -> None:
    tasks = bench.load_tasks()
    assert all(t["split"] in ("dev", "test") for t in tasks)
    assert sorted(t["id"] for t in tasks if t["split"] == "test") == TEST_IDS
    assert [t["id"] for t in bench.load_tasks(split="test")] == [t["id"] for t in tasks if t["split"] == "test"]
    dev = bench.load_tasks(split="dev")
    assert len(dev) >= 40 and len(TEST_IDS) >= 40 and len(dev) + len(TEST_IDS) == len(tasks)
    assert bench.load_tasks("fs_question", split="dev") and all(
        t["split"] == "dev" for t in bench.load_tasks("fs_question", split="dev")
    )
    with pytest.raises(SystemExit, match="no task id or category dev3 in the dev split"):
        bench.load_tasks("dev3", split="dev")  # a prefix is no id: said, not run as zero tasks


def test_a_fifth_of_the_test_split_is_chinese() -> None:
    test = bench.load_tasks(split="test")
    chinese = [t for t in test if bench.is_chinese(t["prompt"])]
    assert len(chinese) * 5 >= len(test)
    assert len({t["category"] for t in chinese}) >= 10  # spread over the categories
    new_dev = {"fs_question", "background", "logs", "permissions", "scripting", "multi_file", "single_value"}
    assert sum(bench.is_chinese(t["prompt"]) for t in bench.load_tasks(split="dev") if t["category"] in new_dev) >= 2


def test_is_chinese_sets_paths_aside() -> None:
    assert bench.is_chinese("/mnt/user-data/workspace/poem.txt 一共有多少行？")
    assert bench.is_chinese("用 web-page-builder 技能做一个网站，放在 /mnt/user-data/outputs/site。")
    assert not bench.is_chinese("How many lines are in /mnt/user-data/workspace/stock.txt?")
    assert not bench.is_chinese("Make a one-page site for a tea house called 青山茶馆 in /mnt/user-data/outputs/site.")


def _task(id: str, split: str, category: str, prompt: str = "Count the lines.") -> dict:
    return {"id": id, "split": split, "category": category, "prompt": prompt}


def _rec(task: str, agent: str, solved: bool, variant: str = "full") -> dict:
    return {
        "task": task,
        "agent": agent,
        "variant": variant,
        "solved": solved,
        "seconds": 1.0,
        "tool_calls": 2,
        "completion_checks": 0,
    }


def test_summary_reports_each_split_and_the_gap() -> None:
    tasks = [
        _task("d1", "dev", "logs"),
        _task("d2", "dev", "files", "统计一下这个文件有多少行。"),
        _task("t1", "test", "logs"),
        _task("t2", "test", "logs", "这个日志里有多少个错误？"),
        _task("t3", "test", "files"),
        _task("t4", "test", "files"),
    ]
    records = [
        _rec("d1", "herdsman", True),
        _rec("d2", "herdsman", True),
        _rec("t1", "herdsman", True),
        _rec("t2", "herdsman", False),
        _rec("t3", "herdsman", False),  # t4 not run: unsolved
        _rec("d2", "deepagents", True),
        _rec("t2", "deepagents", True),
        _rec("t3", "deepagents", False),
        _rec("t3", "herdsman", True, variant="no_verify"),
        _rec("t4", "herdsman", False, variant="no_verify"),
        _rec("elsewhere", "herdsman", True),  # a task not selected is not counted
    ]
    s = bench.summarize(records, tasks)
    dev, test = s["per_split"]["dev"], s["per_split"]["test"]
    assert (dev["total"], dev["herdsman"], dev["deepagents"], dev["herdsman_pct"], dev["deepagents_pct"]) == (
        2,
        2,
        1,
        100.0,
        50.0,
    )
    assert (test["total"], test["herdsman"], test["deepagents"], test["herdsman_pct"], test["deepagents_pct"]) == (
        4,
        1,
        1,
        25.0,
        25.0,
    )
    assert (dev["herdsman_runs"], test["herdsman_runs"], test["deepagents_runs"]) == (2, 3, 2)
    assert test["per_category"]["logs"] == {
        "total": 2,
        "herdsman": 1,
        "herdsman_pct": 50.0,
        "deepagents": 1,
        "deepagents_pct": 50.0,
    }
    assert test["per_category"]["files"]["herdsman"] == 0 and dev["per_category"]["files"]["herdsman"] == 1
    assert s["dev_test_gap"] == 75.0
    assert (
        s["chinese"]["all"]["total"] == 2
        and s["chinese"]["all"]["herdsman"] == 1
        and s["chinese"]["all"]["deepagents"] == 2
    )
    assert s["chinese"]["test"] == {
        "total": 1,
        "herdsman": 0,
        "herdsman_pct": 0.0,
        "deepagents": 1,
        "deepagents_pct": 100.0,
    }
    assert s["herdsman_solved"] == 3 and s["total"] == 6
    row = s["ablation"]["no_verify"]["per_split"]["test"]
    assert (row["solved"], row["runs"], row["full_solved_same_tasks"]) == (1, 2, 0)
    only_test = bench.summarize(records, [t for t in tasks if t["split"] == "test"])
    assert "dev" not in only_test["per_split"] and only_test["dev_test_gap"] is None
