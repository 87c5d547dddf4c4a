"""``outputs/...``, ``uploads/...`` and ``workspace/...`` mean the virtual folders in a path and in
a command, whatever the command's working directory."""

from __future__ import annotations

import pytest

from herdsman.sandbox.paths import normalize_virtual
from herdsman.sandbox.virtual_folders import rewrite_command, virtual_folder_path


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 - > outputs/totals.png", "python3 - > /mnt/user-data/outputs/totals.png"),
        ("mkdir -p outputs/pal.py", "mkdir -p /mnt/user-data/outputs/pal.py"),
        (
            "cd /tmp && cp uploads/a.csv ./outputs/",
            "cd /tmp && cp /mnt/user-data/uploads/a.csv /mnt/user-data/outputs/",
        ),
        ("python3 -c \"open('outputs/a.txt','w')\"", "python3 -c \"open('/mnt/user-data/outputs/a.txt','w')\""),
        ("cat workspace/notes.md", "cat /mnt/user-data/workspace/notes.md"),
        ("tar czf x.tgz --directory=outputs/", "tar czf x.tgz --directory=/mnt/user-data/outputs/"),
    ],
)
def test_a_relative_folder_path_in_a_command_is_made_absolute(command: str, expected: str) -> None:
    assert rewrite_command(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "ls src/outputs/x ../outputs/a ~/outputs/b $HOME/outputs/c",  # part of another path
        "curl https://example.com/outputs/a.png",
        "scp host:outputs/a .",
        "git clone git@host:uploads/x",
        "echo my_outputs/ pre-outputs/ outputs.txt outputs",
        "ls /mnt/user-data/outputs/a",
    ],
)
def test_other_paths_and_words_are_left_alone(command: str) -> None:
    assert rewrite_command(command) == command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ('echo "save to outputs/x" > outputs/log.txt', 'echo "save to outputs/x" > /mnt/user-data/outputs/log.txt'),
        ("printf 'outputs/\\n' > .gitignore", "printf 'outputs/\\n' > .gitignore"),
        ("echo outputs/a 2>outputs/err.txt", "echo outputs/a 2>/mnt/user-data/outputs/err.txt"),
        (
            "if true; then echo 'see outputs/a'; fi; ls outputs/",
            "if true; then echo 'see outputs/a'; fi; ls /mnt/user-data/outputs/",
        ),
        ("env LANG=C echo outputs/x | tee outputs/y", "env LANG=C echo outputs/x | tee /mnt/user-data/outputs/y"),
        ("# keep outputs/x\nls outputs/", "# keep outputs/x\nls /mnt/user-data/outputs/"),
        ("grep -c x <<< 'outputs/a'", "grep -c x <<< 'outputs/a'"),
        (
            "cat > outputs/notes.md <<'EOF'\nThe chart is in outputs/chart.png\nEOF\ncat outputs/notes.md",
            "cat > /mnt/user-data/outputs/notes.md <<'EOF'\nThe chart is in outputs/chart.png\nEOF\ncat /mnt/user-data/outputs/notes.md",
        ),
        (
            "cat <<-END > outputs/a.md\n\toutputs/b\n\tEND\nls outputs/",
            "cat <<-END > /mnt/user-data/outputs/a.md\n\toutputs/b\n\tEND\nls /mnt/user-data/outputs/",
        ),
    ],
)
def test_text_that_is_no_path_is_left_as_written_and_the_paths_around_it_are_rewritten(
    command: str, expected: str
) -> None:
    """Arguments of echo and printf, comments, and the text of a heredoc or here-string fed to a
    command that is no interpreter say something; their redirections and the other commands'
    words are paths."""
    assert rewrite_command(command) == expected
    assert rewrite_command(expected) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "python3 - <<'EOF'\nopen('outputs/a.txt', 'w').write('x')\nEOF",
            "python3 - <<'EOF'\nopen('/mnt/user-data/outputs/a.txt', 'w').write('x')\nEOF",
        ),
        (
            "bash <<EOF\necho 'outputs/x' > outputs/y\nEOF",
            "bash <<EOF\necho 'outputs/x' > /mnt/user-data/outputs/y\nEOF",
        ),
        ('echo "$(ls outputs/)"', 'echo "$(ls /mnt/user-data/outputs/)"'),
        ('cp "outputs/a b.txt" uploads/', 'cp "/mnt/user-data/outputs/a b.txt" /mnt/user-data/uploads/'),
        ("echo 'an open quote outputs/x", "echo 'an open quote /mnt/user-data/outputs/x"),  # cannot be split: all of it
    ],
)
def test_code_and_quoted_paths_of_other_commands_are_still_rewritten(command: str, expected: str) -> None:
    """A heredoc fed to Python or a shell is code whose paths are used; a command substitution
    inside echo runs a command; a quoted argument of cp is a path."""
    assert rewrite_command(command) == expected


def test_a_relative_path_a_file_tool_gets() -> None:
    assert normalize_virtual("outputs/pal.py") == "/mnt/user-data/outputs/pal.py"
    assert normalize_virtual("./uploads/data.csv") == "/mnt/user-data/uploads/data.csv"
    assert normalize_virtual("workspace/a/../b.md") == "/mnt/user-data/workspace/b.md"
    assert normalize_virtual("outputs") == "/mnt/user-data/outputs"
    assert normalize_virtual("notes/outputs/a.md") == "/mnt/user-data/workspace/notes/outputs/a.md"
    assert normalize_virtual("outputs/../../../etc/passwd") == "/etc/passwd"  # still refused by the roots
    assert virtual_folder_path("data.csv") is None
