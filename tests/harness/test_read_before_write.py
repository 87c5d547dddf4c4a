"""Read before write: a blind overwrite or edit of an existing file is refused and loses nothing;
after reading it (read_file or cat) the same edit goes through; new and empty files are free."""

from __future__ import annotations

from pathlib import Path

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.middleware.read_before_write import SHOWN_LINES, printed_paths, written_paths
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

SCRIPT = "import sys\n\nname = sys.argv[1]\nprint('hello ' + nme)\n"
LONG = SCRIPT + "".join(f"# note {i}\n" for i in range(SHOWN_LINES))  # too long to show with a refusal


def call(name: str, n: int, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args, "id": f"call-{n}"}]}


def workspace(home: Path, thread: str) -> Path:
    return home / "threads" / thread / "user-data" / "workspace"


async def run(config, responses: list, thread: str, message: str = "fix greet.py") -> list[ToolResult]:
    async with HerdsmanClient(config, model=ScriptedChatModel(responses=responses)) as client:
        events = [e async for e in client.stream(message, thread_id=thread)]
    return [e for e in events if isinstance(e, ToolResult)]


async def test_blind_overwrite_is_refused_then_allowed_after_reading(home: Path) -> None:
    config = make_config(home)
    ws = workspace(home, "t-rbw")
    ws.mkdir(parents=True)
    (ws / "greet.py").write_text(LONG)
    results = await run(
        config,
        [
            call("write_file", 1, path="greet.py", content="print('hello')\n"),  # blind: refused
            call("str_replace", 2, path="/mnt/user-data/workspace/greet.py", old="nme", new="name"),  # still blind
            call("read_file", 3, path="greet.py"),
            call("str_replace", 4, path="greet.py", old="nme", new="name"),  # read: allowed
            call("str_replace", 5, path="greet.py", old="hello ", new="hi "),  # its own edit counts as read
            call("write_file", 6, path="notes/new.md", content="fresh\n"),  # new file: free
            call("bash", 7, command="touch empty.py"),
            call("write_file", 8, path="empty.py", content="print(2)\n"),  # empty: nothing to lose, free
            call("bash", 9, command="echo '[]' > list.json"),
            call("write_file", 10, path="list.json", content='["Ada"]'),  # [] holds nothing either
            "done",
        ],
        "t-rbw",
    )
    assert "refused to change /mnt/user-data/workspace/greet.py" in results[0].content
    assert "read_file" in results[0].content and "Nothing was written" in results[0].content
    assert "have not read it" in results[1].content
    assert results[3].content.startswith("Replaced 1")
    assert results[4].content.startswith("Replaced 1")
    assert "# note 1" not in results[0].content  # a long file is not shown with the refusal
    assert (ws / "greet.py").read_text() == LONG.replace("nme", "name").replace("hello ", "hi ")
    assert (ws / "notes" / "new.md").read_text() == "fresh\n"
    assert (ws / "empty.py").read_text() == "print(2)\n"
    assert (ws / "list.json").read_text() == '["Ada"]'


async def test_a_refused_edit_of_a_short_file_shows_it_and_the_same_edit_then_goes_through(home: Path) -> None:
    config = make_config(home)
    ws = workspace(home, "t-rbw-short")
    ws.mkdir(parents=True)
    (ws / "greet.py").write_text(SCRIPT)
    (ws / "other.py").write_text("x = 1\n")
    results = await run(
        config,
        [
            call("write_file", 1, path="greet.py", content="print('hello')\n"),  # blind: refused, shown
            call("write_file", 2, path="greet.py", content="print('hello')\n"),  # seen now: goes through
            call("str_replace", 3, path="other.py", old="1", new="2"),  # another file is still unread
            "done",
        ],
        "t-rbw-short",
    )
    assert "refused to change /mnt/user-data/workspace/greet.py" in results[0].content
    assert "Nothing was written" in results[0].content
    assert "     4\tprint('hello ' + nme)" in results[0].content  # the file, numbered as read_file shows it
    assert results[1].content.startswith("Wrote")
    assert (ws / "greet.py").read_text() == "print('hello')\n"
    assert "refused to change /mnt/user-data/workspace/other.py" in results[2].content
    assert "     1\tx = 1" in results[2].content
    assert (ws / "other.py").read_text() == "x = 1\n"


async def test_a_file_changed_since_reading_must_be_read_again(home: Path) -> None:
    config = make_config(home)
    ws = workspace(home, "t-rbw2")
    ws.mkdir(parents=True)
    (ws / "data.txt").write_text("one\n")
    model = ScriptedChatModel(
        responses=[
            call("bash", 1, command="cat data.txt"),
            "seen",
            call("write_file", 2, path="data.txt", content="three\n"),
            call("bash", 3, command="head -n 5 /mnt/user-data/workspace/data.txt"),
            call("write_file", 4, path="data.txt", content="three\n"),
            call("write_file", 5, path="data.txt", content="four\n", append=True),
            "done",
        ]
    )
    async with HerdsmanClient(config, model=model) as client:
        [e async for e in client.stream("show data.txt", thread_id="t-rbw2")]
        (ws / "data.txt").write_text("one\ntwo\n")  # changed behind the agent's back, between runs
        events = [e async for e in client.stream("replace data.txt", thread_id="t-rbw2")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert "it changed since you last read it" in results[0].content
    assert results[2].content.startswith("Wrote")
    assert (ws / "data.txt").read_text() == "three\nfour\n"


async def test_switched_off_blind_writes_go_through(home: Path) -> None:
    config = make_config(home, tools={"read_before_write": False})
    ws = workspace(home, "t-rbw3")
    ws.mkdir(parents=True)
    (ws / "greet.py").write_text(SCRIPT)
    results = await run(config, [call("write_file", 1, path="greet.py", content="x\n"), "done"], "t-rbw3")
    assert results[0].content.startswith("Wrote")


def test_printed_paths_reads_simple_commands() -> None:
    assert printed_paths("cat a.txt && head -n 3 /mnt/user-data/uploads/b.csv | wc -l") == [
        "/mnt/user-data/workspace/a.txt",
        "/mnt/user-data/uploads/b.csv",
    ]
    assert printed_paths("echo hi > a.txt; python3 x.py") == []
    assert printed_paths("cat 'unterminated") == []


async def test_a_file_a_command_wrote_whole_is_the_agents_own_but_an_appended_one_is_not(home: Path) -> None:
    """``cmd > file`` wrote all of the file: writing it again goes through. ``cmd >> file`` kept
    what was there, which the agent has not seen: refused until read."""
    config = make_config(home)
    ws = workspace(home, "t-rbw4")
    ws.mkdir(parents=True)
    (ws / "log.txt").write_text("kept line\n")
    results = await run(
        config,
        [
            call(
                "bash",
                1,
                command="python3 - > /mnt/user-data/outputs/summary.md <<'EOF'\nif 2 > 1:\n    print(30.5)\nEOF",
            ),
            call("write_file", 2, path="/mnt/user-data/outputs/summary.md", content="Total: 30.5\n"),
            call("bash", 3, command="echo more >> log.txt"),
            call("write_file", 4, path="log.txt", content="replaced\n"),
            "done",
        ],
        "t-rbw4",
    )
    assert results[1].content.startswith("Wrote")
    assert (home / "threads" / "t-rbw4" / "user-data" / "outputs" / "summary.md").read_text() == "Total: 30.5\n"
    assert "refused to change /mnt/user-data/workspace/log.txt" in results[3].content
    assert (ws / "log.txt").read_text() == "kept line\nmore\n"


def test_written_paths_reads_whole_writes_only() -> None:
    assert written_paths("sort x > a.txt; echo 1 >> b.txt 2>/dev/null | tee -a c.txt | tee d.txt") == [
        "/mnt/user-data/workspace/a.txt",
        "/mnt/user-data/workspace/d.txt",
    ]
    assert written_paths("python3 - <<'EOF'\nif a > b: pass\nEOF") == []


async def test_a_file_a_command_created_is_the_agents_own(home: Path) -> None:
    """cp made the file in this step (the command's record says created): writing it is free."""
    config = make_config(home)
    ws = workspace(home, "t-rbw5")
    ws.mkdir(parents=True)
    (ws / "notes.txt").write_text("draft\n")
    results = await run(
        config,
        [
            call("bash", 1, command="cp notes.txt copy.txt"),
            call("write_file", 2, path="copy.txt", content="final\n"),
            "done",
        ],
        "t-rbw5",
    )
    assert results[1].content.startswith("Wrote")
    assert (ws / "copy.txt").read_text() == "final\n"


def test_the_files_a_sub_agent_wrote_are_the_leads_own() -> None:
    """A sub-agent (task) wrote outputs/words.txt: the lead may rewrite it without reading it (the
    sub-agent's own read before write held for its edits)."""
    from types import SimpleNamespace

    from herdsman.middleware.read_before_write import ReadBeforeWriteMiddleware

    request = SimpleNamespace(tool_call={"name": "task", "args": {"prompt": "count"}, "id": "c1"})
    artifact = {
        "results": [
            {"files_written": ["/mnt/user-data/outputs/words.txt"], "files_seen": ["/mnt/user-data/outputs/words.txt"]}
        ]
    }
    touched = ReadBeforeWriteMiddleware._touched(None, request, artifact)  # type: ignore[arg-type]
    assert touched == ["/mnt/user-data/outputs/words.txt"]
