"""Red team: one user's slow work does not starve another user's (real gateway, two API keys).

Every blocking call once shared asyncio's default pool of ``min(32, cpus + 4)`` threads, so user
A's turns of eight parallel ``sleep`` commands held all of them, and user B's file listing,
download, upload and plain chat run waited for A's commands to end. Here A fans out enough
commands to fill that old pool on any machine, and while they all still run, each of B's requests
must complete: the test asserts ordering (A's runs and commands still going when B's last answer
arrives), never a duration. Then A's runs are cancelled and their commands are gone.

The conversion variant: eight uploads of a small document whose conversion needs many seconds of
CPU once held every thread of that pool too (each waits on its converting child process), and
froze other users for as long as the conversions ran (90 s, their wall-time limit). B's requests
must finish before any of A's uploads has answered, while A's converting children still run;
then the test kills those children (each upload answers with its conversion error) and none is
left. With two attackers the conversions pool itself is full, and B's text upload, which has
nothing to convert, must not wait for it.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import time
import uuid
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import running_gateway, user_message
from tests.redteam.test_document_bombs import _docx_bomb
from tests.support import make_config

SLEEP = ("sleep", "613")  # a command no other test runs, so its processes can be counted
FAN_OUT = 8  # tool calls in one of A's replies
PATIENCE = 120.0  # seconds a request of B may take before it counts as starved (A sleeps 613 s)


def respond(messages) -> object:
    """``fan out``: eight parallel ``sleep 613`` commands in one reply; anything else: an echo."""
    last = messages[-1]
    if last.type == "human" and last.text.startswith("fan out"):
        return {"tool_calls": [{"name": "bash", "args": {"command": " ".join(SLEEP)}} for _ in range(FAN_OUT)]}
    if last.type == "tool":
        return "done"
    return f"echo: {last.text}"


def sleeping() -> int:
    """How many of A's ``sleep 613`` processes are alive on this machine."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tuple((entry / "cmdline").read_bytes().split(b"\0")[:2]) == tuple(s.encode() for s in SLEEP):
                    count += 1
            except OSError:
                continue
    return count


async def until(check, what: str, seconds: float = 60.0) -> None:
    """Wait until ``check()`` holds; fail naming ``what`` after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} never happened")


def turns_to_fill_the_old_pool() -> int:
    """A's turns whose commands together fill asyncio's default pool of the old code."""
    return math.ceil(min(32, (os.cpu_count() or 1) + 4) / FAN_OUT)


async def test_one_users_commands_do_not_starve_another_users_files_and_runs(home) -> None:
    config = make_config(
        home,
        gateway={"api_keys": ["key-a", "key-b"]},
        sandbox={"allow_unisolated_bash": True, "command_timeout_seconds": 900},
    )
    with running_gateway(config, model=ScriptedChatModel(respond=respond)) as served:
        a = get_client(url=served.url, api_key="key-a")
        b = get_client(url=served.url, api_key="key-b")
        http_b = httpx.AsyncClient(base_url=served.url, headers={"x-api-key": "key-b"}, timeout=PATIENCE)
        a_runs: list[tuple[str, str]] = []
        try:
            mine = (await b.threads.create())["thread_id"]
            files = f"/api/threads/{mine}"
            first = await http_b.post(f"{files}/uploads", files=[("files", ("notes.txt", b"B's notes", "text/plain"))])
            assert first.status_code == 200, first.text

            for _ in range(turns_to_fill_the_old_pool()):
                tid = (await a.threads.create())["thread_id"]
                run = await a.runs.create(tid, "lead_agent", input=user_message("fan out"))
                a_runs.append((tid, run["run_id"]))
            await until(lambda: sleeping() >= 4, "A's commands starting")

            async def listing() -> httpx.Response:
                return await http_b.get(f"{files}/files", params={"path": "uploads"})

            async def download() -> httpx.Response:
                return await http_b.get(f"{files}/artifacts/mnt/user-data/uploads/notes.txt")

            async def upload() -> httpx.Response:
                return await http_b.post(f"{files}/uploads", files=[("files", ("more.txt", b"more", "text/plain"))])

            async def chat() -> dict:
                return await asyncio.wait_for(b.runs.wait(mine, "lead_agent", input=user_message("hello")), PATIENCE)

            listed, downloaded, uploaded, answered = await asyncio.gather(listing(), download(), upload(), chat())
            # B is done, and A's commands and runs are all still going
            still_sleeping = sleeping()
            a_status = [(await a.runs.get(tid, rid))["status"] for tid, rid in a_runs]

            assert listed.status_code == 200 and "notes.txt" in listed.text
            assert downloaded.status_code == 200 and downloaded.content == b"B's notes"
            assert uploaded.status_code == 200 and uploaded.json()["files"][0]["filename"] == "more.txt"
            assert answered["messages"][-1]["content"].startswith("echo: hello")
            assert still_sleeping >= 4, "A's commands ended before B was done: the test proved nothing"
            assert set(a_status) == {"running"}, a_status
        finally:
            for tid, rid in a_runs:
                await a.runs.cancel(tid, rid, wait=True)
            await http_b.aclose()
            await a.aclose()
            await b.aclose()
        await until(lambda: sleeping() == 0, "A's commands being killed on cancel")


CONVERTER = b"herdsman.tools.documents"  # the module each conversion's child process runs (python -m)
SLOW_PARAGRAPHS = 60_000  # a 50 KB DOCX whose conversion needs tens of seconds of CPU
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def converting(marker: str) -> list[int]:
    """The process ids of the conversions of uploads whose name holds ``marker``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if len(argv) > 3 and argv[1:3] == [b"-m", CONVERTER] and marker.encode() in argv[3]:
                pids.append(int(entry.name))
    return pids


def kill(pids: list[int]) -> None:
    """SIGKILL each of ``pids`` that is still there."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("attackers", [["key-a"], ["key-a", "key-c"]], ids=["one attacker", "two attackers"])
async def test_slow_conversions_do_not_starve_another_users_files_and_runs(home, tmp_path, attackers) -> None:
    """Two attackers fill the conversions pool (two slots each, four threads): B's upload of a text
    file, which has nothing to convert, must not wait for that pool either."""
    config = make_config(home, gateway={"api_keys": [*attackers, "key-b"]})
    slow = _docx_bomb(tmp_path / "slow.docx", SLOW_PARAGRAPHS).read_bytes()
    marker = f"slow-{uuid.uuid4().hex[:12]}"  # in the name of A's uploads, so their converting children can be found
    uploads = max(FAN_OUT, turns_to_fill_the_old_pool() * FAN_OUT)  # per attacker
    with running_gateway(config, model=ScriptedChatModel(respond=respond)) as served:
        b = get_client(url=served.url, api_key="key-b")
        http_a = [httpx.AsyncClient(base_url=served.url, headers={"x-api-key": key}, timeout=None) for key in attackers]
        http_b = httpx.AsyncClient(base_url=served.url, headers={"x-api-key": "key-b"}, timeout=PATIENCE)
        a_uploads: list[asyncio.Task[httpx.Response]] = []
        latencies: dict[str, float] = {}
        try:
            mine = (await b.threads.create())["thread_id"]
            files = f"/api/threads/{mine}"
            first = await http_b.post(f"{files}/uploads", files=[("files", ("notes.txt", b"B's notes", "text/plain"))])
            assert first.status_code == 200, first.text

            for client in http_a:
                theirs = (await client.post("/threads", json={})).json()["thread_id"]
                a_uploads += [
                    asyncio.create_task(
                        client.post(
                            f"/api/threads/{theirs}/uploads", files=[("files", (f"{marker}-{i}.docx", slow, DOCX))]
                        )
                    )
                    for i in range(uploads)
                ]
            await until(lambda: len(converting(marker)) >= 2 * len(attackers), "A's conversions starting")

            async def timed(name: str, call):
                start = time.monotonic()
                try:
                    return await call
                finally:
                    latencies[name] = time.monotonic() - start

            listed, downloaded, uploaded, answered = await asyncio.gather(
                timed("listing", http_b.get(f"{files}/files", params={"path": "uploads"})),
                timed("download", http_b.get(f"{files}/artifacts/mnt/user-data/uploads/notes.txt")),
                timed(
                    "upload", http_b.post(f"{files}/uploads", files=[("files", ("more.txt", b"more", "text/plain"))])
                ),
                timed("chat", asyncio.wait_for(b.runs.wait(mine, "lead_agent", input=user_message("hello")), PATIENCE)),
            )
            # B is done: A's conversions still run, and none of A's uploads has answered
            still_converting = len(converting(marker))
            a_answered = sum(task.done() for task in a_uploads)
            print(
                f"B's latencies with {len(attackers)} attacker(s) converting (s): "
                + ", ".join(f"{k} {v:.2f}" for k, v in latencies.items())
            )

            assert listed.status_code == 200 and "notes.txt" in listed.text
            assert downloaded.status_code == 200 and downloaded.content == b"B's notes"
            assert uploaded.status_code == 200 and uploaded.json()["files"][0]["filename"] == "more.txt"
            assert answered["messages"][-1]["content"].startswith("echo: hello")
            assert a_answered == 0, (
                f"{a_answered} of A's uploads answered before B was done: B waited for A's conversions"
            )
            assert still_converting >= 1, "A's conversions ended before B was done: the test proved nothing"
        finally:
            # end A's conversions: each killed child makes its upload answer with a conversion error
            for _ in range(int(PATIENCE / 0.05)):
                if all(task.done() for task in a_uploads):
                    break
                kill(converting(marker))
                await asyncio.sleep(0.05)
            answers = await asyncio.gather(*a_uploads, return_exceptions=True)
            for client in http_a:
                await client.aclose()
            await http_b.aclose()
            await b.aclose()
        assert converting(marker) == [], "A's conversions are still running"
        for answer in answers:
            assert isinstance(answer, httpx.Response) and answer.status_code == 200, answer
            assert "could not be converted" in answer.json()["files"][0]["conversion_error"]
