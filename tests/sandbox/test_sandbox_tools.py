"""The sandbox tools through a real ToolNode: results, errors as status="error", concurrency."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from herdsman.sandbox import LocalSandboxProvider, make_sandbox_tools
from herdsman.sandbox.snapshot import take_snapshot

EXPECTED_TOOLS = ["bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"]


@pytest.fixture
def provider(host_tools) -> LocalSandboxProvider:
    return host_tools[0]


@pytest.fixture
def call(host_tools):
    return host_tools[1]


@pytest.fixture
def ws(provider: LocalSandboxProvider) -> Path:
    return provider.acquire("t1").paths.workspace


def ok(message: ToolMessage) -> str:
    assert message.status == "success", message.content
    return str(message.content)


def err(message: ToolMessage) -> str:
    assert message.status == "error", message.content
    return str(message.content)


def test_the_tool_set_and_names(provider: LocalSandboxProvider, host_config) -> None:
    tools = make_sandbox_tools(provider, host_config.sandbox)
    assert [t.name for t in tools] == EXPECTED_TOOLS
    for t in tools:
        assert "/mnt/user-data/workspace" in t.description
        assert "runtime" not in t.tool_call_schema.model_json_schema()["properties"]


def test_write_then_read_with_numbered_lines(call, ws: Path) -> None:
    assert ok(call("write_file", path="notes/a.md", content="one\ntwo\nthree\n")) == (
        "Wrote 14 bytes to /mnt/user-data/workspace/notes/a.md"
    )
    assert (ws / "notes" / "a.md").read_text() == "one\ntwo\nthree\n"
    assert ok(call("read_file", path="/mnt/user-data/workspace/notes/a.md")) == (
        "     1\tone\n     2\ttwo\n     3\tthree"
    )


def test_read_ranges_are_one_based_and_inclusive(call, ws: Path) -> None:
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = ok(call("read_file", path="f.txt", start_line=3, end_line=5))
    assert out == "     3\tline 3\n     4\tline 4\n     5\tline 5\n[lines 3-5 of 10]"
    assert ok(call("read_file", path="f.txt", start_line=9)).startswith("     9\tline 9\n    10\tline 10")
    assert ok(call("read_file", path="f.txt", end_line=1)).startswith("     1\tline 1\n[lines 1-1 of 10]")
    assert "past the end" in err(call("read_file", path="f.txt", start_line=11))
    assert "invalid line range" in err(call("read_file", path="f.txt", start_line=5, end_line=4))
    assert "invalid line range" in err(call("read_file", path="f.txt", start_line=0))


def test_long_reads_are_cut_and_say_where_to_continue(call, ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"{'x' * 90} {i}\n" for i in range(1, 5001)))
    out = ok(call("read_file", path="big.txt"))
    assert len(out) < 20_500
    last = out.splitlines()[-1]
    assert last.startswith("... [output cut: lines ")
    next_line = int(last.split("start_line=")[1].split(" ")[0])
    assert f"\t{'x' * 90} {next_line - 1}" in out
    more = ok(call("read_file", path="big.txt", start_line=next_line, end_line=next_line))
    assert more.startswith(f"{next_line:>6}\t")


def test_append_adds_to_the_end(call, ws: Path) -> None:
    ok(call("write_file", path="log.txt", content="a\n"))
    assert ok(call("write_file", path="log.txt", content="b\n", append=True)).startswith("Appended 2 bytes")
    ok(call("write_file", path="new/dir/log.txt", content="c\n", append=True))
    assert (ws / "log.txt").read_text() == "a\nb\n"
    assert (ws / "new" / "dir" / "log.txt").read_text() == "c\n"


def test_str_replace_once_all_and_its_errors(call, ws: Path) -> None:
    (ws / "code.py").write_text("x = 1\ny = 1\nz = 2\n")
    assert "found 2 times" in err(call("str_replace", path="code.py", old="= 1", new="= 3"))
    assert "not found" in err(call("str_replace", path="code.py", old="w = 0", new="w = 1"))
    assert "empty" in err(call("str_replace", path="code.py", old="", new="q"))
    assert "does not exist" in err(call("str_replace", path="nope.py", old="a", new="b"))
    assert (ws / "code.py").read_text() == "x = 1\ny = 1\nz = 2\n"
    assert ok(call("str_replace", path="code.py", old="z = 2", new="z = 5")) == (
        "Replaced 1 occurrence(s) in /mnt/user-data/workspace/code.py"
    )
    assert ok(call("str_replace", path="code.py", old="= 1", new="= 9", replace_all=True)).startswith(
        "Replaced 2 occurrence(s)"
    )
    assert (ws / "code.py").read_text() == "x = 9\ny = 9\nz = 5\n"


def test_ls_glob_and_grep(call, ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "mod.py").write_text("def hello():\n    return 'Hello'\n")
    (ws / "src" / "main.py").write_text("from pkg.mod import hello\nprint(hello())\n")
    (ws / "README.md").write_text("# hello project\n")
    (ws / "blob.bin").write_bytes(b"hello\x00\x01")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("hello = git\n")

    listing = ok(call("ls")).splitlines()
    assert "/mnt/user-data/workspace/src/" in listing
    assert "/mnt/user-data/workspace/src/main.py  (41 bytes)" in listing  # files with their sizes
    assert "/mnt/user-data/workspace/README.md  (16 bytes)" in listing
    assert "/mnt/user-data/workspace/src/pkg/" in listing
    assert "/mnt/user-data/workspace/src/pkg/mod.py" not in listing  # two levels deep

    assert ok(call("glob", pattern="**/*.py")).splitlines() == [
        "/mnt/user-data/workspace/src/main.py",
        "/mnt/user-data/workspace/src/pkg/mod.py",
        "[2 matches]",  # counted: a small model given 7 paths answered 10
    ]
    assert ok(call("glob", pattern="/mnt/user-data/workspace/src/*.py")) == "/mnt/user-data/workspace/src/main.py"
    assert "no paths match" in ok(call("glob", pattern="*.rs"))
    # one level: the subfolders' matches are counted, with the pattern that includes them
    assert ok(call("glob", pattern="*.py", path="src")).splitlines() == [
        "/mnt/user-data/workspace/src/main.py",
        "[1 more in subfolders: the pattern **/*.py includes them]",
    ]
    assert ok(call("glob", pattern="*.md")) == "/mnt/user-data/workspace/README.md"

    hits = ok(call("grep", pattern=r"hello\(")).splitlines()
    assert hits == [
        "/mnt/user-data/workspace/src/main.py:2: print(hello())",
        "/mnt/user-data/workspace/src/pkg/mod.py:1: def hello():",
        "[2 matching lines in 2 files]",
    ]
    assert ok(call("grep", pattern="hello", glob="*.md")) == "/mnt/user-data/workspace/README.md:1: # hello project"
    assert ok(call("grep", pattern="HELLO", path="src/pkg/mod.py", ignore_case=True)).count("\n") == 2
    assert "no matches" in ok(call("grep", pattern="nothing-like-this"))
    assert "invalid regular expression" in err(call("grep", pattern="("))


def test_grep_caps_matches_and_says_what_was_cut(call, ws: Path) -> None:
    (ws / "many.txt").write_text("match\n" * 1000)
    out = ok(call("grep", pattern="match"))
    assert out.count("\n") == 200
    assert out.endswith("... [800 more matches not shown (1000 in 1 files); narrow the pattern, the path or the glob]")


def test_skills_are_visible_read_only(call) -> None:
    assert "/mnt/skills/public/demo/" in ok(call("ls", path="/mnt/skills"))
    assert "Demo skill." in ok(call("read_file", path="/mnt/skills/public/demo/SKILL.md"))
    assert "read-only" in err(call("write_file", path="/mnt/skills/public/demo/SKILL.md", content="x"))
    assert "read-only" in err(call("str_replace", path="/mnt/skills/public/demo/SKILL.md", old="Demo", new="X"))


def test_a_refused_write_into_the_skills_makes_no_folder_there(call, skills_dir: Path) -> None:
    """A write into a missing folder of /mnt/skills made that folder on the host before it was
    refused: an empty "skill" listed (as invalid) to every user, or under users/<name>/."""
    before = sorted(p.relative_to(skills_dir) for p in skills_dir.rglob("*"))
    for path in (
        "/mnt/skills/custom/evil/SKILL.md",
        "/mnt/skills/public/new/deep/SKILL.md",
        "/mnt/skills/users/ana/x/SKILL.md",
    ):
        message = err(call("write_file", path=path, content="---\nname: evil\n---\nx\n"))
        assert "read-only" in message or "not in this sandbox's skills" in message, message
    assert sorted(p.relative_to(skills_dir) for p in skills_dir.rglob("*")) == before


ESCAPES = ["../../etc/passwd", "/etc/passwd", "/mnt/user-data/workspace/../../..", "/mnt/user-data/../../etc/hosts"]


@pytest.mark.parametrize("escape", ESCAPES)
def test_every_file_tool_refuses_traversal(call, escape: str, tmp_path: Path) -> None:
    messages = [
        call("read_file", path=escape),
        call("write_file", path=escape, content="pwned"),
        call("write_file", path=escape, content="pwned", append=True),
        call("str_replace", path=escape, old="root", new="toor"),
        call("ls", path=escape),
        call("glob", pattern="*", path=escape),
        call("grep", pattern="root", path=escape),
    ]
    for message in messages:
        content = err(message)
        assert "leaves the sandbox" in content
        assert str(tmp_path) not in content


def test_glob_patterns_cannot_climb_out(call) -> None:
    assert "climbs out" in err(call("glob", pattern="../../../../../../etc/*"))
    assert "leaves the sandbox" in err(call("glob", pattern="/etc/*"))
    assert "climbs out" in err(call("glob", pattern="..", path="/mnt/user-data"))  # one level, also counted deeper


def test_symlink_escapes_are_refused_by_every_file_tool(call, provider, ws: Path, tmp_path: Path) -> None:
    other = provider.acquire("t2").paths.workspace
    (other / "secret.txt").write_text("t2 secret\n")
    os.symlink("/etc", ws / "etc")
    os.symlink(other, ws / "other")
    os.symlink("/etc/hostname", ws / "hostname")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside / "created.txt", ws / "dangling")
    for path in ("etc/passwd", "other/secret.txt", "hostname", "dangling"):
        assert "leaves the sandbox" in err(call("read_file", path=path))
        assert "leaves the sandbox" in err(call("write_file", path=path, content="x"))
        assert "leaves the sandbox" in err(call("str_replace", path=path, old="a", new="b"))
    assert "leaves the sandbox" in err(call("ls", path="etc"))
    assert "leaves the sandbox" in err(call("ls", path="other"))
    assert "no paths match" in ok(call("glob", pattern="etc/*"))
    assert "no paths match" in ok(call("glob", pattern="other/*"))
    assert ok(call("grep", pattern="t2 secret")).startswith("no matches")
    assert not (outside / "created.txt").exists()
    assert (other / "secret.txt").read_text() == "t2 secret\n"
    listing = ok(call("ls"))
    assert "/mnt/user-data/workspace/etc" in listing  # listed as an entry, not followed
    assert "passwd" not in listing


def test_threads_do_not_see_each_other(call) -> None:
    ok(call("write_file", thread_id="alice", path="mine.txt", content="alice's"))
    assert "does not exist" in err(call("read_file", thread_id="bob", path="mine.txt"))


def test_bad_thread_id_is_an_error_message(call) -> None:
    assert "invalid thread id" in err(call("ls", thread_id="../escape"))


def test_missing_thread_id_is_an_error_message(provider, host_config) -> None:
    tools = {t.name: t for t in make_sandbox_tools(provider, host_config.sandbox)}
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([tools["ls"]]))
    graph.add_edge(START, "tools")
    call = {"name": "ls", "args": {}, "id": "c1"}
    out = graph.compile().invoke({"messages": [AIMessage("", tool_calls=[call])]})
    message = out["messages"][-1]
    assert message.status == "error"
    assert "no thread id" in message.content


def test_missing_files_and_directories(call, ws: Path) -> None:
    assert "does not exist" in err(call("read_file", path="nope.txt"))
    assert "does not exist" in err(call("ls", path="nope"))
    (ws / "d").mkdir()
    assert "is a directory" in err(call("read_file", path="d"))
    assert "is a directory" in err(call("write_file", path="d", content="x"))
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02")
    assert "binary" in err(call("read_file", path="bin.dat"))
    os.mkfifo(ws / "pipe")  # must not block the tool forever
    assert "not a regular file" in err(call("read_file", path="pipe"))
    assert "pipe" in err(call("write_file", path="pipe", content="x", append=True))
    assert ok(call("grep", pattern="zzz")).startswith("no matches")


def test_concurrent_appends_lose_nothing(call, provider, ws: Path) -> None:
    sandbox = provider.acquire("t1")
    line = "y" * 5000

    def worker(n: int) -> None:
        for i in range(40):
            sandbox.write_text("shared.log", f"{n}-{i} {line}\n", append=True)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = [("write_file", {"path": "shared.log", "content": f"tool-{i} {line}\n", "append": True}) for i in range(40)]
    assert all(m.status == "success" for m in call.many(calls))
    lines = (ws / "shared.log").read_text().splitlines()
    assert len(lines) == 12 * 40 + 40
    assert {ln.split(" ")[0] for ln in lines} == {f"{n}-{i}" for n in range(12) for i in range(40)} | {
        f"tool-{i}" for i in range(40)
    }
    assert all(ln.endswith(line) for ln in lines)


def test_parallel_str_replace_calls_on_one_file_keep_every_edit(call, ws: Path) -> None:
    (ws / "t.txt").write_text("".join(f"slot{i}=TODO\n" for i in range(30)))
    calls = [("str_replace", {"path": "t.txt", "old": f"slot{i}=TODO", "new": f"slot{i}=done"}) for i in range(30)]
    assert all(m.status == "success" for m in call.many(calls))
    assert (ws / "t.txt").read_text() == "".join(f"slot{i}=done\n" for i in range(30))


def test_bash_in_host_mode_uses_virtual_paths_and_shows_no_host_path(call, tmp_path: Path) -> None:
    ok(call("write_file", path="/mnt/user-data/uploads/in.txt", content="data\n"))
    out = ok(
        call(
            "bash",
            command="pwd; echo $HOME; cp /mnt/user-data/uploads/in.txt /mnt/user-data/outputs/out.txt && cat ../outputs/out.txt",
        )
    )
    assert out == "/mnt/user-data/workspace\n/mnt/user-data/workspace\ndata"
    failing = ok(call("bash", command="cat missing.txt; exit 4"))
    assert failing.endswith("[exit code 4]")
    assert str(tmp_path) not in failing


def test_outputs_in_a_command_or_a_path_is_the_outputs_folder_whatever_the_working_directory(call, provider) -> None:
    """The command runs in the workspace, yet ``outputs/x`` is /mnt/user-data/outputs/x (it was
    workspace/outputs/x), in a redirection, after a cd elsewhere, and for the file tools."""
    paths = provider.acquire("t1").paths
    ok(
        call(
            "bash",
            command="echo chart > outputs/totals.txt && mkdir -p outputs/sub && cd /tmp && echo up > ./outputs/sub/b.txt",
        )
    )
    ok(call("write_file", path="outputs/pal.py", content="print('ok')\n"))
    assert (paths.outputs / "totals.txt").read_text() == "chart\n"
    assert (paths.outputs / "sub" / "b.txt").read_text() == "up\n"
    assert (paths.outputs / "pal.py").is_file()
    assert not (paths.workspace / "outputs").exists()
    assert ok(call("read_file", path="outputs/totals.txt")).endswith("chart")
    assert "print('ok')" in ok(call("bash", command="cat outputs/pal.py"))


def test_bash_timeout_message(make_config, make_runner) -> None:
    _, call = make_runner(make_config(isolation="none", allow_unisolated_bash=True, command_timeout_seconds=1))
    out = ok(call("bash", command="echo partial; sleep 100"))
    assert out.startswith("partial\n")
    assert out.endswith("[timed out after 1s, the process tree was killed]")


def test_no_host_path_in_any_tool_output(call, ws: Path, tmp_path: Path) -> None:
    os.symlink("/etc", ws / "etc")
    messages = [
        call("bash", command="pwd; env; ls -la; readlink -f .; ls /nonexistent-dir; cd ..; pwd"),
        call("bash", command="python3 -c 'import os; print(os.getcwd()); open(\"/nope/x\")'"),
        call("write_file", path="a.txt", content="a"),
        call("read_file", path="etc/passwd"),
        call("read_file", path="missing"),
        call("ls"),
        call("ls", path="/mnt/user-data"),
        call("glob", pattern="**/*"),
        call("grep", pattern="a"),
        call("str_replace", path="a.txt", old="zzz", new="y"),
        call("write_file", path="a.txt/child", content="x"),
    ]
    real = os.path.realpath(tmp_path)
    for m in messages:
        assert str(tmp_path) not in m.content and real not in m.content, m.content


class ToolCallingFakeModel(GenericFakeChatModel):
    """A fake chat model that accepts bind_tools, for create_agent."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
        return self


def test_errors_reach_the_model_as_error_tool_messages_in_create_agent(provider, host_config) -> None:
    script: Iterator[AIMessage] = iter(
        [
            AIMessage("", tool_calls=[
                {"name": "read_file", "args": {"path": "/etc/passwd"}, "id": "c1"},
                {"name": "write_file", "args": {"path": "ok.txt", "content": "fine"}, "id": "c2"},
            ]),
            AIMessage("done"),
        ]
    )  # fmt: skip
    agent = create_agent(ToolCallingFakeModel(messages=script), tools=make_sandbox_tools(provider, host_config.sandbox))
    out = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "agent-1"}})
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["c1"].status == "error"
    assert "leaves the sandbox" in results["c1"].content
    assert results["c2"].status == "success"
    assert out["messages"][-1].content == "done"
    assert (provider.acquire("agent-1").paths.workspace / "ok.txt").read_text() == "fine"


def test_bash_tool_cuts_ten_megabytes_and_says_so(call) -> None:
    out = ok(call("bash", command="printf 'FIRST\\n'; head -c 10000000 /dev/zero | tr '\\0' x; printf '\\nLAST'"))
    assert out.startswith("FIRST\n")
    assert out.endswith("\nLAST")
    assert f"... [{10_000_011 - 20_000} characters cut] ..." in out
    assert len(out) < 20_100


async def test_tools_work_under_async_invocation(host_config, provider) -> None:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(make_sandbox_tools(provider, host_config.sandbox)))
    graph.add_edge(START, "tools")
    calls = [
        {"name": "write_file", "args": {"path": "async.txt", "content": "async ok"}, "id": "w"},
        {"name": "bash", "args": {"command": "echo from bash"}, "id": "b"},
    ]
    out = await graph.compile().ainvoke(
        {"messages": [AIMessage("", tool_calls=calls)]}, {"configurable": {"thread_id": "async-1"}}
    )
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["w"].status == "success" and results["b"].content == "from bash"
    assert provider.acquire("async-1").read_text("async.txt") == "async ok"


def test_bash_artifact_has_exit_code_streams_and_files_changed(call, ws: Path, tmp_path: Path) -> None:
    (ws / "old.txt").write_text("old")
    (ws / "gone.txt").write_text("bye")
    message = call(
        "bash",
        command="echo made > made.txt; echo more >> old.txt; rm gone.txt; echo out; echo oops >&2; exit 3",
    )
    # The model sees the same text as before: merged output and the exit code line.
    assert ok(message) == "out\noops\n[exit code 3]"
    artifact = message.artifact
    assert artifact["command"].startswith("echo made")
    assert (artifact["exit_code"], artifact["stdout"], artifact["stderr"]) == (3, "out\n", "oops\n")
    assert artifact["timed_out"] is False
    assert artifact["files_changed"] == [
        {"path": "/mnt/user-data/workspace/gone.txt", "action": "deleted"},
        {"path": "/mnt/user-data/workspace/made.txt", "action": "created"},
        {"path": "/mnt/user-data/workspace/old.txt", "action": "modified"},
    ]
    assert artifact["files_changed_incomplete"] is False
    assert str(tmp_path) not in repr(artifact)


def test_bash_artifact_says_when_the_file_list_is_capped(call, ws: Path, monkeypatch) -> None:
    from herdsman.sandbox import host_files as local

    monkeypatch.setattr(local, "take_snapshot", lambda root, vroot: take_snapshot(root, vroot, limit=3))
    message = call("bash", command="for i in 1 2 3 4 5; do echo $i > f$i.txt; done")
    assert message.artifact["files_changed_incomplete"] is True
    assert len(message.artifact["files_changed"]) <= 3


def test_file_tool_artifacts_name_the_file_and_the_action(call) -> None:
    created = call("write_file", path="notes.md", content="a\n")
    assert ok(created) == "Wrote 2 bytes to /mnt/user-data/workspace/notes.md"
    assert created.artifact["files_changed"] == [{"path": "/mnt/user-data/workspace/notes.md", "action": "created"}]
    rewritten = call("write_file", path="notes.md", content="b\n", append=True)
    assert rewritten.artifact["action"] == "modified"
    edited = call("str_replace", path="notes.md", old="b", new="c")
    assert edited.artifact == {
        "path": "/mnt/user-data/workspace/notes.md",
        "action": "modified",
        "replacements": 1,
        "files_changed": [{"path": "/mnt/user-data/workspace/notes.md", "action": "modified"}],
    }
    failed = call("str_replace", path="notes.md", old="zzz", new="c")
    assert failed.status == "error" and failed.artifact is None


@pytest.mark.bwrap
def test_bash_artifact_under_bubblewrap(make_config, make_runner) -> None:
    _, call = make_runner(make_config(isolation="bwrap", command_timeout_seconds=20))
    message = call("bash", command="mkdir -p ../outputs && echo hi | tee ../outputs/r.txt; ls nope")
    assert message.artifact["stdout"] == "hi\n"
    assert "nope" in message.artifact["stderr"]
    assert message.artifact["exit_code"] == 2
    assert message.artifact["files_changed"] == [{"path": "/mnt/user-data/outputs/r.txt", "action": "created"}]


def test_the_small_prompts_python_example_runs_as_written(call, tmp_path: Path) -> None:
    """The small profile teaches Python through a heredoc (python3 -c cannot hold for/with after
    ';', which the model kept writing): the worked example's command runs in the jail as written."""
    import json
    import re

    from herdsman.prompting.parts import SMALL_EXAMPLES

    command = json.loads(re.search(r"<tool_call>(.*?)</tool_call>", SMALL_EXAMPLES).group(1))["arguments"]["command"]
    assert "for row in" in command
    ok(call("write_file", path="/mnt/user-data/uploads/grades.csv", content="name,score\nA,3\nB,4\n"))
    assert ok(call("bash", command=command)).strip() == "3.5"


def test_read_files_line_numbers_copied_into_write_file_are_left_out(call, ws: Path) -> None:
    """From the benchmark: the model copied read_file's listing, numbers and all, into write_file
    and broke the script. Only text numbered exactly as read_file numbers it is cut."""
    (ws / "wc.py").write_text("import sys\n\nprint(len(sys.argv))\n")
    listing = ok(call("read_file", path="wc.py"))
    out = ok(call("write_file", path="wc.py", content=listing + "\n"))
    assert "without the line numbers" in out
    assert (ws / "wc.py").read_text() == "import sys\n\nprint(len(sys.argv))\n"
    for kept in ("1\tAda\n2\tBob\n", "     1\ta\n     3\tb\n", "     1\tonly one line"):  # a TSV, a gap, one line
        ok(call("write_file", path="t.tsv", content=kept))
        assert (ws / "t.tsv").read_text() == kept


def test_writing_back_the_same_text_says_nothing_changed(call, ws: Path) -> None:
    """From the benchmark: asked to fix stats.py, the model wrote back what it had read (less the
    final newline), was told "Wrote 60 bytes" and answered that it was fixed."""
    (ws / "stats.py").write_text("def mean(values):\n    return sum(values) / (len(values) - 1)\n")
    same = ok(
        call("write_file", path="stats.py", content="def mean(values):\n    return sum(values) / (len(values) - 1)")
    )
    assert "Nothing changed: /mnt/user-data/workspace/stats.py already held this text" in same
    fixed = ok(call("write_file", path="stats.py", content="def mean(values):\n    return sum(values) / len(values)\n"))
    assert "Nothing changed" not in fixed and fixed.startswith("Wrote ")
    assert "Nothing changed" not in ok(call("write_file", path="new.py", content="x = 1\n"))
    assert "Nothing changed" not in ok(call("write_file", path="new.py", content="x = 1\n", append=True))
    same = err(call("str_replace", path="stats.py", old="len(values)", new="len(values)"))
    assert "old and new are the same text, so nothing would change" in same


def test_an_edit_that_breaks_a_python_or_json_file_says_so(call, ws: Path) -> None:
    """From the benchmark: str_replace put .replace('<a real line break>', ' ') into wc.py (the \\n of
    the model's JSON), and the script died on a SyntaxError only when run."""
    (ws / "wc.py").write_text("import sys\ntext = open(sys.argv[1]).read()\nprint(len(text))\n")
    mended = ok(
        call(
            "str_replace",
            path="wc.py",
            old="open(sys.argv[1]).read()",
            new="open(sys.argv[1]).read().replace('\n', ' ')",
        )
    )
    assert mended.startswith("Replaced 1 occurrence(s)") and "the line break in new was written as \\n" in mended
    assert "Warning" not in mended
    assert (
        ws / "wc.py"
    ).read_text() == "import sys\ntext = open(sys.argv[1]).read().replace('\\n', ' ')\nprint(len(text))\n"
    broke = ok(call("str_replace", path="wc.py", old="print(len(text))", new="print(len(text)"))
    assert "Warning: /mnt/user-data/workspace/wc.py does not parse now: SyntaxError:" in broke
    assert "is not valid JSON now" in ok(call("write_file", path="out/a.json", content='{"a": 1'))
    assert "Warning" not in ok(call("write_file", path="out/b.json", content='{"a": 1}'))
    assert "Warning" not in ok(call("write_file", path="notes.md", content="not code (\n"))


def test_python_written_as_one_escaped_line_gets_its_line_breaks(call, ws: Path) -> None:
    """From the benchmark: write_file got server.py with its line breaks escaped twice, one line of
    "import json\\n\\nconfig = ...", and the script would not parse. Such text is written with real
    line breaks (and says so); a \\n inside a string of code that parses stays as it is."""
    escaped = "import json\\n\\nconfig = {'port': 1}\\nprint('listening on', config['port'])"
    out = ok(call("write_file", path="server.py", content=escaped))
    assert "with real line breaks" in out and "Warning" not in out
    assert (
        ws / "server.py"
    ).read_text() == "import json\n\nconfig = {'port': 1}\nprint('listening on', config['port'])"
    ok(call("write_file", path="greet.py", content="print('a\\nb')"))
    assert (ws / "greet.py").read_text() == "print('a\\nb')"
    ok(call("write_file", path="notes.txt", content="a\\nb"))
    assert (ws / "notes.txt").read_text() == "a\\nb"


def test_a_command_cancelled_before_it_starts_never_starts(provider: LocalSandboxProvider, ws: Path) -> None:
    """A Ctrl-C that lands while the bash worker still takes its snapshot: the command must not
    start afterwards (it would outlive the cancelling loop and run its whole length)."""
    from herdsman.sandbox.tools import run_traced

    sandbox = provider.acquire("t1")
    cancelled = threading.Event()
    cancelled.set()
    result, artifact = run_traced(sandbox, "echo ran > ran.txt", cancelled)
    assert result.exit_code == -1 and "cancelled before it started" in result.output
    assert not (ws / "ran.txt").exists()
    result, _ = run_traced(sandbox, "echo ran > ran.txt", threading.Event())
    assert result.exit_code == 0 and (ws / "ran.txt").read_text() == "ran\n"
