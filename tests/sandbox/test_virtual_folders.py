"""``outputs/...``, ``uploads/...`` and ``workspace/...`` mean the virtual folders in a path and in
a command, whatever the command's working directory."""

from __future__ import annotations

import pytest

from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.virtual_folders import rewrite_command, virtual_folder_path


@pytest.mark.parametrize(("command", "expected"), [
    ("python3 - > outputs/totals.png", "python3 - > /mnt/user-data/outputs/totals.png"),
    ("mkdir -p outputs/pal.py", "mkdir -p /mnt/user-data/outputs/pal.py"),
    ("cd /tmp && cp uploads/a.csv ./outputs/", "cd /tmp && cp /mnt/user-data/uploads/a.csv /mnt/user-data/outputs/"),
    ("python3 -c \"open('outputs/a.txt','w')\"", "python3 -c \"open('/mnt/user-data/outputs/a.txt','w')\""),
    ("cat workspace/notes.md", "cat /mnt/user-data/workspace/notes.md"),
    ("tar czf x.tgz --directory=outputs/", "tar czf x.tgz --directory=/mnt/user-data/outputs/"),
])
def test_a_relative_folder_path_in_a_command_is_made_absolute(command: str, expected: str) -> None:
    assert rewrite_command(command) == expected


@pytest.mark.parametrize("command", [
    "ls src/outputs/x ../outputs/a ~/outputs/b $HOME/outputs/c",  # part of another path
    "curl https://example.com/outputs/a.png", "scp host:outputs/a .", "git clone git@host:uploads/x",
    "echo my_outputs/ pre-outputs/ outputs.txt outputs", "ls /mnt/user-data/outputs/a",
])
def test_other_paths_and_words_are_left_alone(command: str) -> None:
    assert rewrite_command(command) == command


def test_a_relative_path_a_file_tool_gets() -> None:
    assert normalize_virtual("outputs/pal.py") == "/mnt/user-data/outputs/pal.py"
    assert normalize_virtual("./uploads/data.csv") == "/mnt/user-data/uploads/data.csv"
    assert normalize_virtual("workspace/a/../b.md") == "/mnt/user-data/workspace/b.md"
    assert normalize_virtual("outputs") == "/mnt/user-data/outputs"
    assert normalize_virtual("notes/outputs/a.md") == "/mnt/user-data/workspace/notes/outputs/a.md"
    assert normalize_virtual("outputs/../../../etc/passwd") == "/etc/passwd"  # still refused by the roots
    assert virtual_folder_path("data.csv") is None
