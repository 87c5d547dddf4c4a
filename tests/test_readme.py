"""The README's first screen: what a newcomer reads before anything else."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST_SCREEN_LINES = 15


def _first_screen() -> str:
    return "\n".join((REPO / "README.md").read_text().splitlines()[:FIRST_SCREEN_LINES])


def test_the_first_two_commands_are_make_run_and_make_test() -> None:
    block = re.search(r"```bash\n(.*?)```", _first_screen(), re.DOTALL)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands[:2] == ["make run", "make test"]


def test_the_first_screen_says_which_address_to_open_in_a_browser() -> None:
    screen = _first_screen()
    assert "http://127.0.0.1:2026" in screen
    assert re.search(r"open \*{0,2}http://127\.0\.0\.1:2026\*{0,2} in a browser", screen)
    assert "gateway.port" in screen  # and how to change it


def herdsman_examples(text: str, head_lines: int = 40) -> list[str]:
    """The ``herdsman`` command lines a page shows: every line of its bash blocks, and the
    inline ones of its first screens (the first ``head_lines`` lines) that are whole commands."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        lines += [line.split("  #")[0].strip() for line in block.splitlines()]
    head = re.sub(r"```.*?```", "", "\n".join(text.splitlines()[:head_lines]), flags=re.DOTALL)
    lines += [span for span in re.findall(r"`([^`]+)`", head) if "|" not in span and "..." not in span]
    found = [re.sub(r"^\.venv/bin/", "", line) for line in lines if re.match(r"(\.venv/bin/)?herdsman ", line)]
    return [re.sub(r"\s*\[[^\]]*\]", "", line) for line in found]  # [--thread ID]: an optional part


def assert_real_herdsman_commands(examples: list[str]) -> None:
    """Each example's sub-command exists and takes each option it shows (a renamed option in an
    example fails a newcomer's first try)."""
    import shlex

    import typer

    from herdsman.cli import app

    root = typer.main.get_command(app)
    for example in examples:
        words = shlex.split(example)[1:]
        command, path = root, []
        while words and hasattr(command, "commands") and words[0] in command.commands:
            path.append(words[0])
            command = command.commands[words.pop(0)]
        assert not hasattr(command, "commands"), f"{example!r}: no sub-command of herdsman {' '.join(path)} named there"
        known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        for word in words:
            if word.startswith("-"):
                assert word.split("=")[0] in known, f"{example!r}: herdsman {' '.join(path)} has no option {word}"


def test_every_herdsman_example_names_a_real_command_and_real_options() -> None:
    examples = herdsman_examples((REPO / "README.md").read_text())
    assert any(e.startswith("herdsman run ") for e in examples)
    assert any(e.startswith("herdsman setup ") for e in examples)
    assert_real_herdsman_commands(examples)


def test_the_readme_is_a_way_in_not_the_manual() -> None:
    """Under 150 lines, saying what Herdsman is before anything else; the rest is in docs/."""
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) < 150, f"README.md has {len(lines)} lines: move the detail into docs/"
    assert lines[0] == "# Herdsman" and "agent harness" in " ".join(lines[1:3]).lower()


def test_the_python_client_example_runs_as_a_script_against_the_gateway(tmp_path: Path) -> None:
    """The README's ``langgraph-sdk`` example, saved as a file and run with this Python against
    a gateway (its address put in), prints the run's events: no top-level ``await``, no package
    a fresh install lacks."""
    import subprocess
    import sys

    from tests.gateway.gateway_support import scripted_gateway
    from tests.support import make_config

    [example] = [
        b
        for b in re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
        if "langgraph_sdk" in b
    ][:1]
    with scripted_gateway(make_config(tmp_path / "home")) as served:
        script = tmp_path / "example.py"
        script.write_text(example.replace("http://127.0.0.1:2026", served.url))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("metadata") and "messages" in done.stdout
