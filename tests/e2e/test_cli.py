"""The herdsman CLI in real processes: run, resume in a new process, threads, Ctrl-C, config check."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support import run_cli


def write_config(tmp: Path, name: str, responses: list, **model: object) -> Path:
    """A config file with a scripted model playing ``responses``, SQLite in ``tmp/home``."""
    script = tmp / f"{name}.script.yaml"
    script.write_text(yaml.safe_dump(responses))
    cfg = tmp / f"{name}.config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "home": "home",
                "lead": {"model_retries": 0},
                "models": [
                    {
                        "name": "scripted",
                        "use": "herdsman.models.scripted:ScriptedChatModel",
                        "script": str(script),
                        "record_file": str(tmp / f"{name}.calls.jsonl"),
                        **model,
                    }
                ],
            }
        )
    )
    return cfg


def records(tmp: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (tmp / f"{name}.calls.jsonl").read_text().splitlines()]


def test_run_then_resume_in_a_new_process(tmp_path: Path) -> None:
    first = write_config(
        tmp_path,
        "first",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/note.md", "content": "# Plan\n"}}
                ]
            },
            "Wrote the plan to outputs/note.md.",
        ],
    )
    out = run_cli("run", "Write a plan", "--thread", "resume-me", "--config", str(first), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "▶ write_file" in out.stdout
    assert "Wrote the plan to outputs/note.md." in out.stdout
    assert "/mnt/user-data/outputs/note.md" in out.stdout.split("Files in outputs:")[1]
    assert str(tmp_path) not in out.stdout
    assert (tmp_path / "home" / "threads" / "resume-me" / "user-data" / "outputs" / "note.md").read_text() == "# Plan\n"

    second = write_config(tmp_path, "second", ["You asked me to write a plan, and I did."])
    out = run_cli("run", "What did I ask?", "--thread", "resume-me", "--config", str(second), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "You asked me to write a plan" in out.stdout
    # the model in the new process saw the whole earlier conversation
    seen = records(tmp_path, "second")[0]["messages"]
    assert [m["type"] for m in seen] == ["system", "human", "ai", "tool", "ai", "human"]
    assert seen[1]["content"] == "Write a plan" and seen[-1]["content"] == "What did I ask?"

    long_id = "d049ba2c574044c38f8eff54a1b2c3d4e5f60718"
    third = write_config(tmp_path, "third", ["Hello."])
    assert run_cli("run", "hi", "--thread", long_id, "--config", str(third), cwd=tmp_path).returncode == 0
    listing = run_cli("threads", "list", "--config", str(second), cwd=tmp_path, env={"COLUMNS": "60"})
    assert listing.returncode == 0, listing.stderr
    assert "resume-me" in listing.stdout and "Write a plan" in listing.stdout
    assert long_id in listing.stdout  # whole on a narrow terminal: it is what --thread takes
    shown = run_cli("threads", "show", "resume-me", "--config", str(second), cwd=tmp_path)
    assert "you> Write a plan" in shown.stdout and "you> What did I ask?" in shown.stdout
    assert "▶ write_file" in shown.stdout
    assert "files in /mnt/user-data/outputs" in shown.stdout and "  /mnt/user-data/outputs/note.md" in shown.stdout
    assert "files in /mnt/user-data/uploads (none)" in shown.stdout
    missing = run_cli("threads", "show", "nope", "--config", str(second), cwd=tmp_path)
    assert missing.returncode == 1 and "no thread 'nope'" in missing.stderr


def test_the_completion_checks_note_is_one_line_not_the_conversation(tmp_path: Path) -> None:
    """Sent back by the completion check, the agent writes the file: the run and the thread's
    transcript tell the note in one line, never as the user's words."""
    cfg = write_config(
        tmp_path,
        "checked",
        [
            "Here is the summary.",
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/sum.md", "content": "short\n"}}
                ]
            },
            "Saved the summary to /mnt/user-data/outputs/sum.md.",
        ],
    )
    out = run_cli(
        "run",
        "Save a short summary to /mnt/user-data/outputs/sum.md",
        "--thread",
        "checked",
        "--config",
        str(cfg),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "checked: 2 findings, sent back to the agent" in out.stdout
    assert "[harness" not in out.stdout and "Not done yet" not in out.stdout
    assert out.stdout.index("Here is the summary.") < out.stdout.index("checked:") < out.stdout.index("▶ write_file")
    # the model did see the note: it is in the thread, only not shown
    assert any("[harness check]" in str(m["content"]) for m in records(tmp_path, "checked")[1]["messages"])
    shown = run_cli("threads", "show", "checked", "--config", str(cfg), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("you>") == 1 and "[harness" not in shown.stdout
    lines = shown.stdout.splitlines()
    fold = next(i for i, line in enumerate(lines) if "checked: 2 findings, sent back to the agent" in line)
    assert "Saved the summary" in lines[fold - 1], "the line closes the turn, after its answer"
    # --notes opens the fold: the note the model read, with its rules, where it was sent
    full = run_cli("threads", "show", "checked", "--notes", "--config", str(cfg), cwd=tmp_path)
    assert full.returncode == 0, full.stderr
    assert "note to the agent [" in full.stdout and "path.missing" in full.stdout and "Not done yet" in full.stdout
    assert (
        full.stdout.index("Here is the summary.")
        < full.stdout.index("Not done yet")
        < full.stdout.index("▶ write_file")
    )
    assert full.stdout.count("you>") == 1 and "checked: 2 findings" in full.stdout


def test_run_with_notes_shows_the_harness_notes_in_full(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        "noted",
        [
            "Here is the summary.",
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/sum.md", "content": "short\n"}}
                ]
            },
            "Saved the summary to /mnt/user-data/outputs/sum.md.",
        ],
    )
    out = run_cli(
        "run", "Save a short summary to /mnt/user-data/outputs/sum.md", "--notes", "--config", str(cfg), cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    fold = next(i for i, line in enumerate(lines) if "checked: 2 findings, sent back to the agent" in line)
    assert "note to the agent" in lines[fold + 1] and "Not done yet" in out.stdout.split("checked: 2 findings")[1]


def test_run_exits_non_zero_when_the_requested_file_is_missing(tmp_path: Path) -> None:
    """The model keeps saying it is done and writes nothing: when the checks run out, the run
    says what is missing on stderr and exits 1 (it exited 0, as if done)."""
    cfg = write_config(tmp_path, "missing", ["Done, the summary is saved."], on_exhausted="repeat_last")
    out = run_cli("run", "Save a short summary to /mnt/user-data/outputs/sum.md", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 1, out.stdout
    assert "Not done" in out.stderr and "/mnt/user-data/outputs/sum.md" in out.stderr and "missing" in out.stderr
    assert "thread:" in out.stderr  # the thread is kept, to resume


def test_a_chinese_request_is_told_what_is_missing_in_chinese(tmp_path: Path) -> None:
    """A person who wrote in Chinese reads why the run is not done in Chinese: the heading and the
    line, with the path; not the check's English note to the model."""
    cfg = write_config(tmp_path, "missing", ["完成了，摘要已保存。"], on_exhausted="repeat_last")
    out = run_cli("run", "把一段简短的摘要保存到 /mnt/user-data/outputs/sum.md", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 1, out.stdout
    assert "未完成：" in out.stderr and "/mnt/user-data/outputs/sum.md" in out.stderr and "没有交付" in out.stderr
    assert "Not done" not in out.stderr and "is missing" not in out.stderr


def test_the_readme_example_exits_non_zero_when_its_script_fails_and_the_model_says_done_again(tmp_path: Path) -> None:
    """The README's first CLI example, as a newcomer met it: the script imports a package that is
    not installed, its run fails, the harness sends the model back, and the model only says again
    that here are the primes. The run is not done: exit 1 with the failure on stderr (it exited 0)."""
    script = "import primesieve_not_installed\nprint(primesieve_not_installed.primes(30)[:10])\n"
    cfg = write_config(
        tmp_path,
        "primes",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/primes.py", "content": script}}
                ]
            },
            {"tool_calls": [{"name": "bash", "args": {"command": "python3 outputs/primes.py"}}]},
            "Here are the first 10 primes: 2, 3, 5, 7, 11, 13, 17, 19, 23, 29.",
        ],
        on_exhausted="repeat_last",
    )
    request = "Write outputs/primes.py, a Python script that prints the first 10 primes, and run it"
    out = run_cli("run", request, "--config", str(cfg), cwd=tmp_path)
    assert "No module named 'primesieve_not_installed'" in out.stdout  # the failure was shown as it ran
    assert out.returncode == 1, out.stdout
    assert "Not done" in out.stderr and "last tool call failed" in out.stderr and "primesieve" in out.stderr


def test_run_exits_non_zero_when_the_model_call_failed(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "failing", [{"error": "the endpoint is down"}], on_exhausted="repeat_last")
    data = yaml.safe_load(cfg.read_text())
    data["lead"] = {"model_retries": 1, "retry_initial_delay": 0.01}
    cfg.write_text(yaml.safe_dump(data))
    out = run_cli("run", "hi", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 1, out.stdout
    assert "the run failed" in out.stderr and "the endpoint is down" in out.stderr


def test_run_exits_zero_when_the_requested_file_is_there(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        "delivered",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "/mnt/user-data/outputs/sum.md", "content": "short\n"}}
                ]
            },
            "Saved the summary to /mnt/user-data/outputs/sum.md.",
        ],
    )
    out = run_cli("run", "Save a short summary to /mnt/user-data/outputs/sum.md", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Not done" not in out.stderr


async def test_the_cli_and_the_gateway_list_the_same_threads(tmp_path: Path) -> None:
    """A thread made by ``herdsman run`` is in the gateway's thread search (the web UI's list),
    with its conversation; threads made through the gateway are in ``herdsman threads list``,
    run or not: one list on one home."""
    from langgraph_sdk import get_client

    from tests.gateway.gateway_support import serve_subprocess
    from tests.services import free_port

    cfg = write_config(tmp_path, "shared", ["A haiku about rain."], on_exhausted="repeat_last")
    port = free_port()
    data = yaml.safe_load(cfg.read_text())
    data["gateway"] = {"port": port}
    cfg.write_text(yaml.safe_dump(data))
    out = run_cli("run", "Write a haiku", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    cli_thread = out.stderr.split("thread:")[1].split()[0]

    with serve_subprocess(cfg, port, tmp_path) as served:
        sdk = get_client(url=served.url, api_key=None)
        try:
            listed = await sdk.threads.search(limit=100, sort_by="updated_at", sort_order="desc")
            found = next((t for t in listed if t["thread_id"] == cli_thread), None)
            assert found is not None, [t["thread_id"] for t in listed]
            assert found["metadata"]["graph_id"] == "lead_agent" and found["status"] == "idle"
            state = await sdk.threads.get_state(cli_thread)
            assert [m["content"] for m in state["values"]["messages"]][:2] == ["Write a haiku", "A haiku about rain."]
            run_here = (await sdk.threads.create())["thread_id"]
            await sdk.runs.wait(run_here, "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]})
            made_here = (await sdk.threads.create())["thread_id"]
        finally:
            await sdk.aclose()
    listing = run_cli("threads", "list", "--config", str(cfg), cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    for thread_id in (cli_thread, run_here, made_here):
        assert thread_id in listing.stdout


def test_a_call_written_as_text_is_a_failed_step_in_the_run_and_the_transcript(tmp_path: Path) -> None:
    """The model writes a call as text (hundreds of assertions in it), is sent back, then
    answers: neither the run's output nor 'threads show' prints the raw call as the agent's
    message; both print one failed-step line for it."""
    raw = (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "t.py", "content": "'
        + "assert p('aba')\\n" * 200
        + '"}}\n</tool_call>'
    )
    cfg = write_config(tmp_path, "raw", [raw, "Palindromes read the same both ways; the tests are below."])
    out = run_cli("run", "Explain what a palindrome is.", "--thread", "raw", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "<tool_call>" not in out.stdout and "assert p(" not in out.stdout
    assert "✗ write_file: tool call written as text, not run" in out.stdout
    shown = run_cli("threads", "show", "raw", "--config", str(cfg), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "<tool_call>" not in shown.stdout and "assert p(" not in shown.stdout
    assert shown.stdout.count("✗ write_file: tool call written as text, not run") == 1
    assert shown.stdout.count("agent>") == 1 and "agent> Palindromes read the same" in shown.stdout


@pytest.mark.bwrap
def test_ctrl_c_stops_cleanly_and_the_thread_resumes(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        "slow",
        [{"tool_calls": [{"name": "bash", "args": {"command": "sleep 67.31 & echo started; wait"}}]}, "never reached"],
    )
    env = {k: v for k, v in os.environ.items() if k != "HERDSMAN_CONFIG"} | {"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    # The CLI starts as from a terminal, with Ctrl-C's default disposition: a test run started in the
    # background by a non-interactive shell (nohup ... &) ignores SIGINT, its children inherit that,
    # and this test then hung (twice in clean-clone runs; SigIgn of the pytest process showed it).
    proc = subprocess.Popen(
        [sys.executable, "-m", "herdsman", "run", "Sleep a while", "--thread", "stopped", "--config", str(cfg)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = proc.stdout.readline()
    while "▶ bash" not in line:
        assert line, "the run ended before the tool call"
        line = proc.stdout.readline()
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "Stopped" in err and "--thread stopped" in err
    assert "Traceback" not in err
    leftover = subprocess.run(["pgrep", "-f", "sleep 67.31"], capture_output=True, text=True).stdout.split()
    assert not leftover, "the sandboxed command outlived the CLI"

    again = write_config(tmp_path, "again", ["Resumed fine."])
    out = run_cli("run", "Are you back?", "--thread", "stopped", "--config", str(again), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Resumed fine." in out.stdout
    seen = records(tmp_path, "again")[0]["messages"]
    # the interrupted tool call got a result, so the history is valid for any provider
    assert [m["type"] for m in seen] == ["system", "human", "ai", "tool", "human"]
    assert "interrupted" in seen[3]["content"]


def test_ctrl_c_during_an_answer_keeps_the_words_said(tmp_path: Path) -> None:
    answer = "Here is the first part of a long answer, and then much more that never comes."
    cfg = write_config(tmp_path, "talk", [answer], stream_chunk_chars=6, chunk_delay=0.3)
    env = {k: v for k, v in os.environ.items() if k != "HERDSMAN_CONFIG"} | {"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "herdsman", "run", "Talk", "--thread", "talking", "--config", str(cfg)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # see the test above
    )
    shown = b""
    while b"first" not in shown:
        piece = os.read(proc.stdout.fileno(), 100)
        assert piece, "the run ended before the answer streamed"
        shown += piece
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err

    again = write_config(tmp_path, "again", ["Yes."])
    assert run_cli("run", "Go on", "--thread", "talking", "--config", str(again), cwd=tmp_path).returncode == 0
    seen = records(tmp_path, "again")[0]["messages"]
    assert [m["type"] for m in seen] == ["system", "human", "ai", "human"]
    kept = seen[2]["content"]
    assert kept.startswith("Here is the first") and answer.startswith(kept) and kept != answer


def test_config_check_reports_problems_with_paths(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  - name: x\n    use: nowhere:Chat\nsandbox: {timeout: 3}\n")
    out = run_cli("config", "check", "--config", str(bad), "--offline", cwd=tmp_path)
    assert out.returncode == 1
    assert "sandbox.timeout: unknown key" in out.stderr
    good = write_config(tmp_path, "good", ["hi"])
    out = run_cli("config", "check", "--config", str(good), "--offline", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout and "'scripted'" in out.stdout
    broken_class = tmp_path / "class.yaml"
    broken_class.write_text("models:\n  - name: x\n    use: nowhere:Chat\n")
    out = run_cli("config", "check", "--config", str(broken_class), "--offline", cwd=tmp_path)
    assert out.returncode == 1 and "models.0" in out.stderr and "cannot import 'nowhere'" in out.stderr


def test_unset_variable_stops_run_with_its_name(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("models:\n  - {name: g, use: 'langchain_openai:ChatOpenAI', api_key: $HERDSMAN_TEST_UNSET_KEY}\n")
    out = run_cli("run", "hi", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 2
    assert "models.0.api_key" in out.stderr and "$HERDSMAN_TEST_UNSET_KEY is not set" in out.stderr


def test_threads_restore_lists_versions_and_brings_files_back(tmp_path: Path) -> None:
    def write(name: str, text: str) -> dict:
        return {
            "tool_calls": [{"name": "write_file", "args": {"path": f"/mnt/user-data/outputs/{name}", "content": text}}]
        }

    cfg = write_config(tmp_path, "versions", [write("a.txt", "one"), "wrote a"])
    assert run_cli("run", "first", "--thread", "v", "--config", str(cfg), cwd=tmp_path).returncode == 0
    cfg = write_config(tmp_path, "again", [write("a.txt", "two"), "wrote again"])
    assert run_cli("run", "second", "--thread", "v", "--config", str(cfg), cwd=tmp_path).returncode == 0
    listed = run_cli("threads", "restore", "v", "--config", str(cfg), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 3  # the newest checkpoint, the step that changed a.txt, the step that made it
    assert "~1" in lines[1] and "+1 " in lines[2]
    added = [lines[2].split()[0]]
    out = run_cli("threads", "restore", "v", "--checkpoint", added[0], "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "1 written" in out.stdout and "/mnt/user-data/outputs/a.txt" in out.stdout
    assert (tmp_path / "home" / "threads" / "v" / "user-data" / "outputs" / "a.txt").read_text() == "one"
    bad = run_cli("threads", "restore", "v", "--checkpoint", "nope", "--config", str(cfg), cwd=tmp_path)
    assert bad.returncode == 1 and "not kept" in bad.stderr
