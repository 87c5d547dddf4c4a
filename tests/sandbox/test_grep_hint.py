"""A grep that found nothing in a named file: the bash result shows how the file writes the words."""

from __future__ import annotations

import json
from pathlib import Path

ORDERS = json.dumps([{"id": i, "status": s} for i, s in enumerate(["failed", "ok", "failed", "pending"])], indent=1)


def test_a_count_of_zero_from_a_guessed_pattern_shows_the_files_own_lines(call, ws: Path) -> None:
    """grep -c 'status: failed' on a JSON file that writes "status": "failed": the result still
    says 0 and exit 1, then the lines where 'failed' appears, so the next pattern can match them."""
    (ws / "orders.json").write_text(ORDERS)
    out = str(call("bash", command="grep -c 'status: failed' orders.json").content)
    assert out.startswith("0\n[the search matched no line") and out.endswith("[exit code 1]")
    assert "/mnt/user-data/workspace/orders.json has 2 line(s) with 'status' and 'failed'" in out
    assert '"status": "failed"' in out


def test_piped_counts_and_chinese_words_are_explained_too(call, ws: Path) -> None:
    """cat FILE | grep PATTERN | wc -l printing 0, with a Chinese word in the pattern."""
    (ws / "log.txt").write_text("2026-01-01 错误: 磁盘已满\n2026-01-02 信息: 正常\n")
    out = str(call("bash", command="cat log.txt | grep '错误：磁盘' | wc -l").content)
    assert out.startswith("0")
    assert "错误: 磁盘已满" in out


def test_a_search_whose_words_are_nowhere_says_so_and_a_match_adds_nothing(call, ws: Path) -> None:
    (ws / "orders.json").write_text(ORDERS)
    nowhere = str(call("bash", command="grep -c refunded orders.json").content)
    assert "no line of /mnt/user-data/workspace/orders.json contains 'refunded' at all" in nowhere
    found = str(call("bash", command="grep -c '\"failed\"' orders.json").content)
    assert found == "2"
    missing_file = str(call("bash", command="grep x nothere.txt").content)
    assert "matched no line" not in missing_file


def test_the_completion_check_still_reads_the_failure_under_the_note(call, ws: Path) -> None:
    """The exit code stays the last line, and the check reads the command's own record."""
    from herdsman.middleware.completion.rules import failed, failure_detail

    (ws / "orders.json").write_text(ORDERS)
    result = call("bash", command="grep -c 'status: failed' orders.json")
    assert failed(result) and failure_detail(result) == "0 [exit code 1]"
    assert not failed(call("bash", command="grep -c failed orders.json"))


def test_a_guess_whose_words_are_nowhere_shows_how_the_file_begins_in_bash_and_the_grep_tool(call, ws: Path) -> None:
    """An access log grepped for 'client' (its lines begin with the address): the note shows the
    file's first lines, for a grep in bash and for the grep tool on that one file."""
    (ws / "access.log").write_text(
        '10.0.0.1 - - [01/Jan] "GET / HTTP/1.1" 200\n10.0.0.2 - - [01/Jan] "GET /a HTTP/1.1" 404\n'
    )
    for out in (
        str(call("bash", command="grep -c client access.log").content),
        str(call("grep", pattern="client", path="/mnt/user-data/workspace/access.log").content),
    ):
        assert "contains 'client' at all" in out and "access.log begins like this:" in out, out
        assert '10.0.0.1 - - [01/Jan] "GET / HTTP/1.1" 200' in out
    (ws / "other.log").write_text("x\n")
    several = str(call("grep", pattern="client", path="/mnt/user-data/workspace").content)
    assert several.startswith("no matches for 'client'") and "begins like this" not in several  # two files: none shown
