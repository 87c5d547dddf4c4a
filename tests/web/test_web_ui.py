"""The web UI in a real browser: Playwright drives Debian's Chromium headless against a gateway
that serves the built UI (``web/dist``) and runs the scripted lead of ``web_support``.

Each test runs one scenario of ``e2e.mjs`` with node and asserts on the JSON line it prints;
screenshots are kept under ``tests/web/artifacts/``. Needs ``make web`` (the build) and the
``chromium`` package (``scripts/install-system.sh`` installs it); without them the tests are
skipped locally and fail in CI.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from herdsman.memory.audit import Origin
from herdsman.memory.facts import Fact
from herdsman.memory.graph import GraphStore
from herdsman.memory.graph_schema import ExtractedRelation
from tests.gateway.cron_support import YEARLY, settled, tick
from tests.gateway.gateway_support import RunningGateway
from tests.web.web_support import REPO, browser_missing, web_gateway

SCRIPT = Path(__file__).with_name("e2e.mjs")
ARTIFACTS = Path(__file__).with_name("artifacts")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """One gateway serving the built UI for all the browser scenarios."""
    reason = browser_missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    ARTIFACTS.mkdir(exist_ok=True)
    # the completion check on, as users have it: its notes are folded into one line per turn; plan
    # mode on (context.todos), so the plan view has todos to show
    with web_gateway(tmp_path_factory.mktemp("web-home"), lead={"verify_rounds": 1}, context={"todos": True}) as served:
        yield served


API_KEY = "web-test-key"


@pytest.fixture(scope="module")
def keyed_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A second gateway, with auth on (``gateway.api_keys``)."""
    with web_gateway(tmp_path_factory.mktemp("web-keyed"), api_keys=[API_KEY]) as served:
        yield served


FACTS = [("I prefer green tea", "preference"), ("I live in Lyon", "profile"), ("My project uses PostgreSQL", "project")]


@pytest.fixture(scope="module")
def memory_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A third gateway, with memory on (the agent's memory tool) and three facts about the default user."""
    with web_gateway(tmp_path_factory.mktemp("web-memory"), memory={"enabled": True, "mode": "tool"}) as served:
        store = served.app.state.gateway.memory.store
        for content, category in FACTS:
            store.put("default", Fact.new(content, category))
        graph = GraphStore(store.store)
        for where, since in (("AWS", "2026-01-10"), ("GCP", "2026-03-01")):  # GCP replaces AWS: a history
            graph.put_relation(
                "default",
                ExtractedRelation(subject="Atlas", predicate="deploys_to", object=where, valid_from=since),
                Origin("updater", "t-seed"),
            )
        yield served


def run_scenario(
    gateway: RunningGateway, scenario: str, extra_env: dict[str, str] | None = None, timeout: float = 120
) -> dict:
    """Run one browser scenario (``extra_env`` is added to its environment); its checks on success,
    a readable failure otherwise."""
    proc = subprocess.run(
        ["node", str(SCRIPT), scenario, gateway.url, str(ARTIFACTS)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "WEB_API_KEY": API_KEY, **(extra_env or {})},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the {scenario} scenario printed no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(lines[-1])
    assert result["ok"] and proc.returncode == 0, (
        f"browser scenario {scenario} failed: {result.get('error')}\nchecks: {result['checks']}\n"
        f"screenshots: {result['screenshots']}\n{proc.stderr[-2000:]}"
    )
    assert all(Path(s).is_file() for s in result["screenshots"]) and result["screenshots"]
    return result["checks"]


def test_send_message_and_see_streamed_answer(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "chat")
    assert checks["tokens streamed"]["distinct_lengths"] >= 3
    assert checks["thread listed"] and checks["output previewed"] and checks["run error shown"]
    # the completion check's note: one line with the answer, its text only once opened
    assert checks["the check folded into one line"].endswith("left") and checks["placed with the turn's answer"]
    assert (
        checks["no note text until opened"]
        and checks["the reply sent back is folded too"]
        and checks["not as the user's"]
    )
    assert checks["opened: the note's text"] and checks["its points as a list"] and checks["what is still found"]
    assert checks["the check's line says fixed"].endswith("fixed") and checks["the write after the note is shown"]
    assert checks["opened by a click"] and checks["an earlier turn does not claim fixed"].endswith("then answered")
    assert checks["after a reload, still folded and fixed"]


def test_a_newcomers_first_session_end_to_end(gateway: RunningGateway) -> None:
    """Open, try an example, upload a file, see the plan, watch sub-agents and stop one, stop a
    run, look at the outputs (a Markdown report, an image)."""
    checks = run_scenario(gateway, "firstsession")
    assert checks["an example ran"] and checks["the upload was read"]
    assert sorted(checks["one sub-agent stopped, two completed"]) == ["cancelled", "completed", "completed"]
    assert checks["the header said it waited for sub-agents"]
    assert checks["the stopped answer is kept"] and checks["the report is rendered in the preview"]
    assert checks["outputs download as one zip"] == "outputs.zip"
    assert "Sum the totals" in checks["the plan is shown with what is done"] and checks["an image is shown inline"]
    samples = checks["the header always said what the agent was doing"]
    assert len(samples) >= 5


def test_the_start_screen_offers_examples_and_skills_and_slash_picks_one(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "start")
    assert (
        checks["example tasks"] and checks["skills listed with a line each"] and checks["an example fills the composer"]
    )
    assert checks["the / menu lists matching skills"] and checks["Enter picks the skill"] and checks["the menu closes"]
    assert checks["the start screen gives way to the thread"]


def test_the_skill_picker_picks_several_skills_by_button_keyboard_and_slash_mid_text(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "picker")
    assert checks["the button lists the skills"] and checks["the filter narrows the list"]
    assert checks["a word of the description finds a skill"] and checks["Escape closes the picker"]
    assert checks["two skills are picked as chips"] and checks["/ in the middle of the text opens the picker"]
    assert checks["the pick leaves the text without its /name"] and checks["a third chip"]
    assert (
        checks["the message goes out with a /name for each picked skill"] and checks["the chips are gone after sending"]
    )


def test_the_model_picker_picks_the_model_of_the_next_run(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "model")
    assert checks["picked model answered"] and checks["default model answered again"]


def test_a_custom_agent_made_in_the_page_runs_new_threads(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "agents")
    assert checks["a nameless agent is refused in the form"] and checks["its model answered"]
    assert checks["the thread list names its agent"] and checks["an edit is a new version"]
    assert checks["the thread goes on with its agent"]
    assert checks["the start screen lists the custom agent"] and checks["the / menu offers the agent"]
    assert checks["picking it in the / menu starts a thread on it"] and checks["the agent picked by / answers"]
    assert checks["the thread list shows the run ended"]
    assert checks["a run that ends out of sight leaves its thread idle in the list"]


def test_three_parallel_subagents_show_three_live_cards(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "subagents")
    assert checks["three cards"] and checks["cards live together"]["running"] >= 2 and checks["all completed"]
    assert checks["tokens grow while the model writes"]["later"] > checks["tokens grow while the model writes"]["early"]
    assert checks["subagent in trace"] and checks["subagent steps"] and checks["subagent answer"]


def test_interrupts_answered_in_the_page(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "interrupt")
    assert checks["clarification answered"] and checks["approved call ran"]


def test_upload_by_drop_then_agent_reads_it(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "upload")
    assert checks["csv previewed as a table"] and checks["agent read the upload"]


def test_files_panel_lists_workspace_and_outputs_previews_and_downloads(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "files")
    assert checks["tree lists workspace and outputs"] and checks["code file highlighted"]
    assert (
        checks["download named and attached"] and checks["download content"] and checks["outputs downloaded as one zip"]
    )
    assert checks["big text truncated with a note"] and checks["binary offered for download"]


def test_files_panel_says_no_files_only_when_there_are_none(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "filesnote")
    assert checks["no files: said so"] and checks["files below the listed depth, and no claim that there are none"]
    assert checks["the outputs can be downloaded"] and checks["the deeper folder listed on demand"]


def test_memory_tab_shows_an_off_state_with_the_setting_when_memory_is_off(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "memoryoff")
    assert checks["an off switch"] and checks["the setting to change"] and checks["and how"]
    assert checks["no raw 409 error"] and checks["still off when checked again"]


def test_a_1_gb_upload_is_refused_in_the_page_which_stays_usable(gateway: RunningGateway, tmp_path: Path) -> None:
    big = tmp_path / "huge.bin"
    with big.open("wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GB long, no disk blocks used
    try:
        checks = run_scenario(gateway, "bigupload", {"WEB_BIG_FILE": str(big)})
    finally:
        big.unlink()
    assert "50 MB" in checks["over the limit shown"] and checks["nothing uploaded"] == 0
    assert checks["small upload works after"] and checks["chat works after"]


def test_reload_mid_run_and_the_run_goes_on_in_the_page(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "reload")
    assert checks["rejoined the running stream"] and checks["all steps shown"]["after"] == 4


def test_gateway_down_is_shown_and_the_page_recovers(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "down")
    assert checks["down shown"] and checks["usable after recovery"]


def test_stop_cancels_the_run_and_keeps_what_was_said(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "stop")
    assert checks["run cancelled on the gateway"]["status"] != "busy"
    assert checks["the header says what the agent is doing, and for how long"]
    assert checks["the stopped answer stays on the page"].startswith("Once upon a time")
    assert checks["the stopped answer is saved in the thread"]["next"] == []
    assert checks["and is there after a reload"]


def test_the_trace_restores_files_to_a_step_and_runs_again_from_it(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "timetravel")
    assert checks["restore files to this step"] and checks["written again"]
    assert checks["run again from a step starts from its files"]


def test_edit_and_regenerate_branch_from_a_checkpoint(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "branch")
    assert checks["edited branch"] and checks["regenerated in place"]


def test_api_key_set_in_the_page_and_previews_work_with_auth(keyed_gateway: RunningGateway) -> None:
    checks = run_scenario(keyed_gateway, "auth")
    assert checks["asks for the key"] and checks["key checked in settings"]
    assert checks["image previewed with the key"] and checks["no errors left"]


HOSTILE_PAGE = """<!doctype html><pre id="result">running</pre><script>
const out = {};
try { out.key = localStorage.getItem("herdsman.apiKey"); } catch (e) { out.key = "blocked"; }
try { out.cookie = document.cookie; } catch (e) { out.cookie = "blocked"; }
try { out.parent = parent.localStorage.getItem("herdsman.apiKey"); } catch (e) { out.parent = "blocked"; }
out.origin = String(window.origin);
fetch(GATEWAY + "/api/threads/THREAD/files", {credentials: "include"})
  .then((r) => r.text()).then((t) => { out.api = "read: " + t.slice(0, 40); }, () => { out.api = "blocked"; })
  .finally(() => { document.getElementById("result").textContent = JSON.stringify(out); });
</script>"""
COUNTER_PAGE = '<!doctype html><button id="inc">+1</button> <span id="count">0</span><script src="app.js"></script>'
COUNTER_JS = (
    'let n = 0; document.getElementById("inc").onclick = () => { document.getElementById("count").textContent = ++n; };'
)


def test_the_preview_tab_shows_pages_and_servers_and_a_hostile_page_gets_nothing(keyed_gateway: RunningGateway) -> None:
    from herdsman.sandbox.bwrap import bwrap_status

    if not bwrap_status().available:
        pytest.skip(f"bubblewrap unusable: {bwrap_status().reason}")
    import httpx

    headers = {"x-api-key": API_KEY}
    tid = httpx.post(f"{keyed_gateway.url}/threads", json={}, headers=headers).json()["thread_id"]
    sandbox = keyed_gateway.app.state.gateway.sandbox.acquire(tid)
    sandbox.write_text(
        "/mnt/user-data/outputs/evil/index.html",
        HOSTILE_PAGE.replace("GATEWAY", json.dumps(keyed_gateway.url)).replace("THREAD", tid),
    )
    sandbox.write_text("/mnt/user-data/outputs/site/index.html", COUNTER_PAGE)
    sandbox.write_text("/mnt/user-data/outputs/site/app.js", COUNTER_JS)
    job = sandbox.start_background(
        "cd /mnt/user-data/outputs/site && exec python3 -m http.server 8000 --bind 127.0.0.1"
    )
    assert job.wait_listening(15) == [8000]
    checks = run_scenario(keyed_gateway, "preview", {"PREVIEW_THREAD": tid})
    assert checks["servers and pages listed"] and checks["frame sandboxed without allow-same-origin"]
    assert (
        checks["the page cannot read the key"]
        and checks["the page has no cookies"]
        and checks["the page cannot call the API"]
    )
    assert checks["the page's origin is opaque"] and checks["the server's page runs its script"] and checks["reload"]
    job.stop()


def test_settings_manage_memory_skills_and_see_models_and_highlighted_code(memory_gateway: RunningGateway) -> None:
    checks = run_scenario(memory_gateway, "settings")
    assert checks["facts shown"] and checks["fact edited on the gateway"] and checks["fact deleted on the gateway"]
    assert (
        checks["graph with history shown"]
        and checks["relation deleted on the gateway"]
        and checks["memory switched off"]
    )
    assert checks["audit trail shown"]
    assert checks["relation corrected on the gateway"]
    assert checks["relation ended on the gateway"]
    assert checks["skill disabled on the gateway"] and checks["SKILL.md shown"]
    assert checks["models with key status"] and checks["failed call shown in the panel"] and checks["key status shown"]
    assert checks["code highlighted"] and checks["code copied"]
    memory = memory_gateway.app.state.gateway.memory.store
    kept = sorted(f.content for f in memory.facts("default"))
    assert kept == ["I prefer black tea", "My project uses PostgreSQL"]
    assert [r.valid_to is not None for r in GraphStore(memory.store).relations("default")] == [True]
    assert not memory.enabled_for("default")


@pytest.fixture(scope="module")
def shell_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway whose bash runs even without bubblewrap (isolated when it is there)."""
    with web_gateway(tmp_path_factory.mktemp("web-shell"), sandbox={"allow_unisolated_bash": True}) as served:
        yield served


def test_trace_steps_through_model_calls_and_bash_commands(shell_gateway: RunningGateway) -> None:
    checks = run_scenario(shell_gateway, "trace")
    assert checks["steps in order"] and checks["steps numbered"] and checks["total tokens"]
    assert checks["model call tokens"] and checks["bash command"] and checks["exit code 0"] and checks["stdout"]
    assert checks["file created"] and checks["file opened from the trace"] and checks["non-zero exit code highlighted"]
    assert checks["failed stdout"] and checks["failed stderr"] and checks["previous"]


@pytest.fixture(scope="module")
def paced_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway whose bash runs even without bubblewrap and whose lead streams each piece of a
    reply (its text, a call's arguments) a quarter second after the one before: further apart than
    the gateway's stream wakes up on a loaded machine, so the browser gets the pieces one by one.
    At 0.03 s apart a call's arguments reached the page in one batch under CPU load, and the card
    never showed the call growing (the test failed)."""
    options = {"stream_chunk_chars": 12, "chunk_delay": 0.25}
    home = tmp_path_factory.mktemp("web-paced")
    with web_gateway(home, model_options=options, sandbox={"allow_unisolated_bash": True}) as served:
        yield served


def test_progress_shows_the_call_being_written_the_command_running_and_an_estimate(
    paced_gateway: RunningGateway,
) -> None:
    checks = run_scenario(paced_gateway, "progress")
    assert checks["the call's command grew while it was written"] and checks["the card said it was being written"]
    assert checks["the command running, and for how long"] and checks["an estimate of a model step here"]
    assert checks["no outcome line after a run that delivered"]


@pytest.fixture(scope="module")
def drafts_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway whose lead writes its calls as the embedded model does: drafts of the call's text
    on the custom stream while it is written, then the call whole."""
    options = {"stream_call_args": False, "stream_call_drafts": True, "stream_chunk_chars": 8, "chunk_delay": 0.04}
    with web_gateway(tmp_path_factory.mktemp("web-drafts"), model_options=options) as served:
        yield served


def test_a_stop_keeps_the_words_so_far_and_the_files_written(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "stopKeepsFiles")
    assert (
        checks["the line says the run was stopped and its work kept"]
        and checks["the stop is still said after a reload"]
    )
    assert checks["the words so far are kept after a reload"]["kept"] > 0
    assert checks["the file written before the stop is listed after a reload"] and checks["and holds what was written"]
    assert checks["the tool call that wrote it is shown"]


def test_a_call_sent_whole_at_the_end_is_shown_growing_while_it_is_written(drafts_gateway: RunningGateway) -> None:
    checks = run_scenario(drafts_gateway, "drafts")
    assert (
        checks["the call's text grew in a card while it was written"] and checks["the line said which call is written"]
    )
    assert checks["the real call replaced the draft"] and checks["the file was written"]
    assert checks["the header said a call is written"]


def test_a_call_the_model_wrote_as_text_is_a_failed_step_not_its_message(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "textcall")
    assert checks["a failed step naming the tool"] and checks["collapsed"]
    assert checks["no agent message ever held the raw call"]
    assert checks["the check's note folded, naming the call written as text"]


def test_a_run_without_its_deliverable_or_with_an_error_says_so(gateway: RunningGateway) -> None:
    checks = run_scenario(gateway, "outcome")
    assert checks["not delivered, with what is missing"] and checks["still said after a reload"]
    assert checks["a failed run says so"] and checks["a run that answered shows no failure"]


@pytest.fixture(scope="module")
def retry_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway whose failed model calls are retried once, as users have it (then the harness replies)."""
    with web_gateway(
        tmp_path_factory.mktemp("web-retry"), lead={"verify_rounds": 1, "model_retries": 1, "retry_initial_delay": 0}
    ) as served:
        yield served


def test_the_harness_speaks_the_requests_language_and_a_failed_model_call_fails_the_run(
    retry_gateway: RunningGateway,
) -> None:
    checks = run_scenario(retry_gateway, "chinese")
    assert (
        checks["not delivered, said in Chinese"]
        and checks["the checks' line in Chinese"]
        and checks["its labels in Chinese"]
    )
    assert checks["a failed model call fails the run, in Chinese"] and checks["the reply says why, in Chinese"]


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def channels_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway with WeCom and Bark enabled against addresses that refuse connections."""
    nowhere = f"http://127.0.0.1:{_closed_port()}"
    wecom = {
        "enabled": True,
        "corp_id": "ww1",
        "secret": "wecom-secret-value",
        "agent_id": 1,
        "token": "t",
        "encoding_aes_key": "a" * 43,
        "base_url": nowhere + "/cgi-bin/",
    }
    bark = {"enabled": True, "device_key": "k", "base_url": nowhere, "min_seconds": 0}
    with web_gateway(tmp_path_factory.mktemp("web-channels"), channels={"wecom": wecom, "bark": bark}) as served:
        yield served


def test_settings_show_channels_configured_connected_or_failing(channels_gateway: RunningGateway) -> None:
    checks = run_scenario(channels_gateway, "channels")
    assert (
        checks["every platform listed"] and checks["failed channel with its reason"] and checks["unconfigured channel"]
    )
    assert checks["no secret shown"]
    assert checks["bark running"] and checks["summary"] and checks["bark failing after a push"]


def test_the_scheduled_panel_lists_creates_and_deletes_crons(gateway: RunningGateway) -> None:
    """A cron fired by the scheduler (driven by the test) shows its next time and last result."""

    async def fire_one() -> None:
        sdk = get_client(url=gateway.url, api_key=None)
        try:
            thread = await sdk.threads.create()
            cron = await sdk.crons.create_for_thread(
                thread["thread_id"],
                "lead_agent",
                schedule=YEARLY,
                input={"messages": [{"role": "user", "content": "status report"}]},
            )
            tick(gateway, cron["next_run_date"])
            assert (await settled(sdk, cron["cron_id"]))["status"] == "success"
        finally:
            await sdk.aclose()

    asyncio.run(fire_one())
    checks = run_scenario(gateway, "scheduled")
    assert checks["fired cron shows its last result"].startswith("last success")
    assert checks["and its next time"].startswith("next ")
    assert "0 9 * * 1-5" in checks["a bad schedule is refused with an example"]
    assert checks["the new cron is listed"] and checks["deleted"]
    assert checks["with its next time and no run yet"].startswith("next ") and checks[
        "with its next time and no run yet"
    ].endswith("never run yet")


@pytest.fixture(scope="module")
def learning_gateway(gateway: RunningGateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway with skill learning on and two proposals of the local user's (seeded)."""
    from herdsman.skills.learning.store import ProposalStore
    from herdsman.skills.learning.trace import read_trace
    from tests.skills.learning_support import CSV_CALLS, CSV_REQUEST, turn

    folder = tmp_path_factory.mktemp("web-learning")
    (folder / "skills" / "public").mkdir(parents=True)
    with web_gateway(folder / "home", skills={"path": str(folder / "skills"), "learning": {"enabled": True}}) as served:
        store = ProposalStore.of(served.app.state.gateway.config)
        logs = turn(
            "Keep the ERROR lines of app.log",
            [("bash", {"command": "grep ERROR app.log > /mnt/user-data/outputs/e.txt"}, 0)],
        )
        for messages in (turn(CSV_REQUEST, CSV_CALLS), logs):
            trace = read_trace(messages)
            assert trace is not None and store.propose(None, trace, {}) is not None
        yield served


def test_skill_proposals_are_reviewed_edited_accepted_and_declined(learning_gateway: RunningGateway) -> None:
    checks = run_scenario(learning_gateway, "proposals")
    assert checks["proposals listed"] and checks["parameters shown"] and checks["SKILL.md and its script shown"]
    assert checks["nothing installed before accept"] and checks["accepted as edited"]
    assert checks["its script path follows the new name"] and checks["declined"]


def test_chinese_is_drawn_with_real_glyphs_not_empty_boxes(gateway: RunningGateway) -> None:
    """Needs a CJK font (``scripts/install-system.sh`` installs fonts-wqy-microhei): without one,
    Chromium draws every Chinese character as the same empty box."""
    checks = run_scenario(gateway, "cjk")
    assert checks["every character leaves ink"] and checks["each character has a box on the page"]
    assert checks["distinct characters are drawn as distinct glyphs, not one box"]["closest"] >= 0.25
