"""A path that is not where the model looked: the tool's result says where a file of that name is."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tool_folder(ws: Path) -> Path:
    (ws / "tool").mkdir()
    (ws / "tool" / "main.py").write_text("import common\nprint(common.VALUE)\n")
    (ws / "tool" / "common.py").write_text("VALUE = 42\n")
    return ws / "tool"


def test_a_script_run_from_the_wrong_folder_says_where_it_is_and_the_exit_code_stays_last(
    call, tool_folder: Path
) -> None:
    out = str(call("bash", command="python3 main.py").content)
    assert "can't open file '/mnt/user-data/workspace/main.py'" in out
    assert "main.py is at /mnt/user-data/workspace/tool/main.py" in out
    assert "cd /mnt/user-data/workspace/tool first" in out
    assert out.endswith("[exit code 2]")
    # following the note works
    assert str(call("bash", command="cd /mnt/user-data/workspace/tool && python3 main.py").content) == "42"


def test_coreutils_and_python_errors_on_a_relative_path_say_where_it_is(call, tool_folder: Path, ws: Path) -> None:
    (ws / "data").mkdir()
    (ws / "data" / "prices.csv").write_text("a,b\n1,2\n")
    cat = str(call("bash", command="cat prices.csv").content)
    assert "prices.csv is at /mnt/user-data/workspace/data/prices.csv" in cat
    opened = str(call("bash", command="python3 -c \"open('prices.csv')\"").content)
    assert "FileNotFoundError" in opened and "/mnt/user-data/workspace/data/prices.csv" in opened


def test_file_tools_say_where_a_file_of_that_name_is(call, tool_folder: Path) -> None:
    read = str(call("read_file", path="/mnt/user-data/workspace/main.py").content)
    assert "/mnt/user-data/workspace/main.py does not exist" in read
    assert "main.py is at /mnt/user-data/workspace/tool/main.py: use that path" in read
    edit = str(call("str_replace", path="main.py", old="import common", new="import helpers").content)
    assert "main.py is at /mnt/user-data/workspace/tool/main.py" in edit
    assert (tool_folder / "main.py").read_text().startswith("import common")  # nothing was edited


def test_nothing_is_added_when_no_file_of_that_name_exists_or_the_command_succeeded(
    call, tool_folder: Path, ws: Path
) -> None:
    assert str(call("bash", command="python3 nothere.py").content).count("[") == 2  # [Errno 2] and the exit code
    assert "is at" not in str(call("read_file", path="/mnt/user-data/workspace/nothere.txt").content)
    assert str(call("bash", command="cd tool && python3 main.py").content) == "42"
    # a relative path with folders matches only a file under the same folders
    (ws / "other").mkdir()
    (ws / "other" / "main.py").write_text("print(1)\n")
    out = str(call("read_file", path="tool2/main.py").content)
    assert "is at" not in out


def test_the_search_stays_inside_the_thread_and_does_not_follow_glob_characters(
    host_tools, call, tool_folder: Path
) -> None:
    """A name with glob characters is not a pattern; another thread's files are never named."""
    assert "is at" not in str(call("read_file", path="/mnt/user-data/workspace/*.py").content)
    assert "is at" not in str(call("bash", command="cat '[m]ain.py'").content)
    other = host_tools[0].acquire("t2").paths.workspace
    (other / "secret.py").write_text("KEY = 1\n")
    assert "is at" not in str(call("bash", command="python3 secret.py").content)
    assert "is at" not in str(call("read_file", path="secret.py").content)


@pytest.mark.bwrap
def test_in_the_jail_a_script_run_from_the_wrong_folder_says_where_it_is(bwrap_tools) -> None:
    provider, call = bwrap_tools
    tool = provider.acquire("t1").paths.workspace / "tool"
    tool.mkdir()
    (tool / "main.py").write_text("print('ran')\n")
    out = str(call("bash", command="python3 main.py").content)
    assert "main.py is at /mnt/user-data/workspace/tool/main.py" in out and out.endswith("[exit code 2]")
