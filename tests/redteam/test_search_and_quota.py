"""Red team: searches that cannot hold a core, a disk quota that holds, hostile names that get
clean errors (findings 4, 5 and 10 of the hardening issue, and the docker provider's host-side
grep and glob).

- ``glob``/``grep``/``ls`` over ten links to ``.`` and a pattern six levels deep took 12 s of
  gateway CPU (x10 a level); a glob through a link to ``/`` walked the host; ``(a+)+$`` on a
  28-character line took 11 s. Now links are never entered and patterns run on RE2.
- Three 1 GiB files in one command, 20,000 files in one request: now a thread keeps at most
  ``sandbox.disk_quota_mb`` and ``sandbox.max_files``, for the file tools, uploads and commands.
- A 300-character name, or text with lone surrogates, gave the file tools "internal error".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider
from herdsman.sandbox.bwrap import bwrap_status
from herdsman.sandbox.tools import SandboxTools


class _Tools:
    """SandboxTools called as the tool node calls them; errors come back as ("error", text)."""

    def __init__(self, provider: LocalSandboxProvider, config: HerdsmanConfig, tid: str = "t1") -> None:
        self.tools = SandboxTools(provider, config.sandbox)
        self.runtime = type("Runtime", (), {"config": {"configurable": {"thread_id": tid}}})()
        self.as_tools = {t.name: t for t in self.tools.as_tools()}

    def __call__(self, name: str, **kwargs: object) -> tuple[str, str]:
        tool = self.as_tools[name]
        try:
            result = getattr(self.tools, name)(runtime=self.runtime, **kwargs)
        except Exception as exc:  # noqa: BLE001 - what the tool node would turn into an error message
            from herdsman.sandbox.tools import _tool_exception

            return "error", str(_tool_exception(tool.name, exc))
        return "ok", result[0] if isinstance(result, tuple) else result


def _config(tmp_path: Path, **sandbox: object) -> HerdsmanConfig:
    isolation = (
        {"isolation": "bwrap"} if bwrap_status().available else {"isolation": "none", "allow_unisolated_bash": True}
    )
    return HerdsmanConfig.model_validate(
        {"home": str(tmp_path / "home"), "skills": {"enabled": False}, "sandbox": {**isolation, **sandbox}}
    )


@pytest.fixture
def setup(tmp_path: Path):
    config = _config(tmp_path, disk_quota_mb=8, max_files=300)
    provider = LocalSandboxProvider(config)
    sandbox = provider.acquire("t1")
    yield provider, sandbox, _Tools(provider, config)
    provider.close()


# -- bounded search ---------------------------------------------------------------------------


def test_symlink_loops_are_not_followed(setup) -> None:
    _, sandbox, call = setup
    ws = sandbox.paths.workspace
    for i in range(10):
        os.symlink(".", ws / f"loop{i}")
    (ws / "needle.txt").write_text("needle here\n")
    # Followed links would match loop0/loop1/.../needle.txt (a million paths at six levels).
    status, out = call("glob", pattern="*/*/*/*/*/*/needle.txt")
    assert status == "ok" and "no paths match" in out
    status, out = call("grep", pattern="needle")
    assert status == "ok" and out.count("needle here") == 1, out
    status, out = call("ls")
    assert status == "ok" and "loop0" in out and "loop0/loop1" not in out


def test_glob_through_a_link_to_root_stays_in_the_thread(setup) -> None:
    _, sandbox, call = setup
    os.symlink("/", sandbox.paths.workspace / "root")
    status, out = call("glob", pattern="root/**/passwd")
    assert status == "ok" and "no paths match" in out
    status, out = call("grep", pattern="root:x:0", path="/mnt/user-data/workspace")
    assert status == "ok" and "no matches" in out
    status, out = call("glob", pattern="**/*")
    assert "/etc" not in out and "passwd" not in out
    status, out = call("ls", path="root")
    assert status == "error" and "leaves the sandbox" in out


def test_regex_bomb_runs_in_linear_time(setup) -> None:
    _, sandbox, call = setup
    (sandbox.paths.workspace / "bomb.txt").write_text(("a" * 28 + "!\n") * 2000)
    # A backtracking engine takes seconds a line here (the test's timeout would end it).
    status, out = call("grep", pattern="(a+)+$")
    assert status == "ok" and "no matches" in out


def test_patterns_re2_cannot_run_get_a_hint(setup) -> None:
    _, _, call = setup
    status, out = call("grep", pattern=r"(a)\1")
    assert status == "error" and "grep -P" in out


def test_searches_say_when_they_stopped(setup, monkeypatch) -> None:
    from herdsman.sandbox import host_files as local

    _, sandbox, call = setup
    for i in range(30):
        (sandbox.paths.workspace / f"f{i:02}.txt").write_text("x\n")
    monkeypatch.setattr(local, "MAX_WALKED", 10)
    status, out = call("glob", pattern="*.txt")
    assert status == "ok" and "stopped after 10 entries" in out
    monkeypatch.setattr(local, "MAX_LISTED", 5)
    status, out = call("ls")
    assert status == "ok" and "stopped after 5 entries" in out


# -- quota ------------------------------------------------------------------------------------


def test_file_tools_stop_at_the_quota_and_say_how_to_raise_it(setup) -> None:
    _, sandbox, call = setup
    chunk = "x" * (1024 * 1024)
    written = 0
    for i in range(12):
        status, out = call("write_file", path=f"big{i}.txt", content=chunk)
        if status == "error":
            break
        written += 1
    assert status == "error", "12 MiB were written under an 8 MiB quota"
    assert "disk quota exceeded" in out and "sandbox.disk_quota_mb" in out
    assert 5 <= written <= 8
    # The refused file was not created, and the thread still works once space is freed.
    assert not (sandbox.paths.workspace / f"big{written}.txt").exists()
    os.unlink(sandbox.paths.workspace / "big0.txt")
    assert call("write_file", path="small.txt", content="ok")[0] == "ok"


def test_file_count_limit(setup) -> None:
    _, sandbox, call = setup
    for i in range(290):
        (sandbox.paths.workspace / f"n{i}").write_text("")
    results = [call("write_file", path=f"more{i}.txt", content="x")[0] for i in range(20)]
    assert "error" in results
    assert len(list(sandbox.paths.workspace.iterdir())) <= 300


def test_a_command_that_fills_the_disk_is_stopped(setup) -> None:
    provider, sandbox, call = setup
    status, out = call(
        "bash",
        command="for i in $(seq 1 200); do head -c 1048576 /dev/zero > f$i.bin || break; done; echo done",
    )
    assert "disk quota exceeded" in out and "sandbox.disk_quota_mb" in out
    used = sum(p.stat().st_blocks * 512 for p in sandbox.paths.workspace.iterdir())
    assert used < 8 * 1024 * 1024 + 64 * 1024 * 1024, f"{used} bytes kept for an 8 MiB quota"
    # Over the quota, a command may still delete (and the thread recovers)...
    status, out = call("bash", command="rm -f f*.bin && echo freed")
    assert "freed" in out and "quota" not in out
    status, out = call("bash", command="echo fine > fine.txt && cat fine.txt")
    assert "fine" in out and "quota" not in out


def test_a_command_over_the_quota_cannot_grow(tmp_path: Path) -> None:
    # Only the measured quota can be over (after a command's slack): the quota volume never is.
    config = _config(tmp_path, disk_quota_mb=8, max_files=300, quota_volume={"mode": "off"})
    provider = LocalSandboxProvider(config)
    sandbox, call = provider.acquire("t1"), _Tools(provider, config)
    for i in range(12):
        (sandbox.paths.workspace / f"pre{i}").write_bytes(b"y" * 1024 * 1024)  # over, as after a slack
    status, out = call("bash", command="sleep 0.5; head -c 2097152 /dev/zero > more.bin; sleep 2; echo survived")
    provider.close()
    assert "disk quota exceeded" in out and "survived" not in out


# -- clean errors for hostile names (finding 10) --------------------------------------------------


@pytest.mark.parametrize(
    "tool,kwargs",
    [
        ("read_file", {}),
        ("write_file", {"content": "x"}),
        ("str_replace", {"old": "a", "new": "b"}),
        ("ls", {}),
        ("glob", {"pattern": "*"}),
        ("grep", {"pattern": "x"}),
    ],
)
def test_long_names_and_lone_surrogates_get_clean_errors(setup, tool: str, kwargs: dict) -> None:
    _, _, call = setup
    for path in ("a" * 300, "dir/" + "b" * 300 + ".txt", "bad\udcff.txt", "x" * 5000):
        status, out = call(tool, path=path, **kwargs)
        assert "internal error" not in out, (tool, path[:20], out)
        if status == "error":
            assert (
                "too long" in out or "not valid text" in out or "does not exist" in out or "characters long" in out
            ), out
    status, out = call("write_file", path="ok.txt", content="text \udcff here")
    assert status == "error" and "not valid text" in out


def test_deep_paths_hold_few_descriptors_and_dot_dot_still_works(setup) -> None:
    _, sandbox, call = setup
    deep = sandbox.paths.workspace
    for _ in range(200):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("bottom\n")
    (sandbox.paths.workspace / "top.txt").write_text("top\n")
    path = "/".join(["d"] * 200) + "/f.txt"
    open_before = len(os.listdir("/proc/self/fd"))
    with sandbox.files.locate(path) as loc:
        held = len(os.listdir("/proc/self/fd")) - open_before
    assert loc.name == "f.txt" and held <= 3, f"{held} descriptors held for one path"
    assert "bottom" in call("read_file", path=path)[1]
    back = "/".join(["d"] * 200) + "/" + "/".join([".."] * 200) + "/top.txt"
    assert "top" in call("read_file", path=back)[1]
    (deep / "/".join(["d"] * 100)).mkdir(parents=True)
    status, out = call("read_file", path="/".join(["d"] * 300) + "/x")
    assert status == "error" and "folders deep" in out


@pytest.mark.parametrize(
    "tool,kwargs",
    [
        ("grep", {"pattern": "a\ud800b"}),
        ("bash", {"command": "echo \ud800"}),
        ("bash", {"command": "echo a\x00b"}),
        ("glob", {"pattern": "*\ud800"}),
        ("str_replace", {"path": "f.txt", "old": "x", "new": "\ud800"}),
    ],
)
def test_hostile_patterns_and_commands_get_clean_errors(setup, tool: str, kwargs: dict) -> None:
    _, sandbox, call = setup
    (sandbox.paths.workspace / "f.txt").write_text("x\n")
    status, out = call(tool, **kwargs)
    assert "internal error" not in out, out
    if status == "error":
        assert "not valid text" in out or "NUL" in out, out
    assert (sandbox.paths.workspace / "f.txt").read_text() == "x\n"
