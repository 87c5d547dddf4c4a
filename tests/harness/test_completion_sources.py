"""Sources are real or absent: a URL in the answer, or in a report the run wrote, must appear in
the request, an uploaded file or a tool result; otherwise the run is sent back to remove or fetch
it, and a link still in the answer when the rounds run out is taken out, marked."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.client import HerdsmanClient
from herdsman.middleware.completion.findings import FINDINGS_KEY
from herdsman.middleware.completion.sources import MARK, strip_unseen, unseen_sources, urls_in
from herdsman.models.scripted import ScriptedChatModel
from tests.support import make_config

INVENTED = "https://www.rainwater-institute.org/harvesting-guide-2021"
REPORT = f"""# Rainwater harvesting

Collecting roof runoff in tanks cuts mains water use for gardens and toilets.

## Sources
- [Rainwater Institute guide]({INVENTED})
"""


def user_data(home: Path, thread: str, folder: str) -> Path:
    path = home / "threads" / thread / "user-data" / folder
    path.mkdir(parents=True, exist_ok=True)
    return path


async def run(
    home: Path, thread: str, request: str, responses: list, rounds: int = 2
) -> tuple[ScriptedChatModel, list, str]:
    # no skill activated by the request's words: a report fits the report and research skills,
    # whose own checks are tested with them
    config = make_config(
        home, lead={"verify_rounds": rounds, "unusable_reply_retries": 0}, skills={"auto_select": "off"}
    )
    model = ScriptedChatModel(responses=responses)
    async with HerdsmanClient(config, model=model) as client:
        finished = await client.run(request, thread_id=thread)
        messages = await client.messages(thread)
    return model, messages, finished.answer


def rules(messages: list) -> list[list[str]]:
    return [
        [f["rule"] for f in m.additional_kwargs[FINDINGS_KEY]]
        for m in messages
        if isinstance(m, HumanMessage) and m.name == "harness"
    ]


def test_urls_are_found_by_their_syntax_in_any_script_and_compared_loosely() -> None:
    assert urls_in("见 https://例子.cn/页面。又见（https://a.org/x）") == ["https://例子.cn/页面", "https://a.org/x"]
    thread = [
        HumanMessage("Summarize https://a.org/page/ for me"),
        AIMessage("", tool_calls=[{"name": "web_fetch", "args": {"url": "https://b.org/doc"}, "id": "c1"}]),
        ToolMessage("text of the page", tool_call_id="c1"),
    ]
    reply = (
        "Per https://a.org/page and https://b.org/doc#intro (site: https://b.org), see https://c.org/made-up. "
        "Run `curl https://api.d.io/v1` or open http://localhost:8080/ or https://www.example.com/x."
    )
    [finding] = unseen_sources(reply, thread, thread)
    assert finding.rule == "source.unseen" and finding.evidence["urls"] == ["https://c.org/made-up"]
    failed = [
        AIMessage("", tool_calls=[{"name": "web_fetch", "args": {"url": "https://c.org/made-up"}, "id": "c2"}]),
        ToolMessage("Error: 404 Not Found", tool_call_id="c2", status="error"),
    ]
    assert unseen_sources(reply, [*thread, *failed], failed)[0].evidence["urls"] == ["https://c.org/made-up"]
    assert unseen_sources(reply, thread, thread, uploads=["links: https://c.org/made-up"]) == []
    assert (
        strip_unseen(f"See [the guide]({INVENTED}) and {INVENTED}.", [INVENTED]) == f"See the guide {MARK} and {MARK}."
    )


async def test_an_invented_source_in_the_answer_is_sent_back_and_taken_out_when_it_stays(home: Path) -> None:
    """The model writes a report in its answer with a source URL nothing showed; sent back twice,
    it keeps the link: the final answer keeps the report, without the link, marked."""
    model, messages, answer = await run(
        home, "t-src1", "Write a short report on rainwater harvesting, with sources.", [REPORT, REPORT, REPORT]
    )
    assert rules(messages) == [["source.unseen"], ["source.unseen"]]
    assert INVENTED in messages[-3].text or INVENTED in model.calls[1].messages[-1].text  # the note named the link
    assert INVENTED not in answer and f"Rainwater Institute guide {MARK}" in answer
    assert "Collecting roof runoff" in answer
    assert all("tool_choice" not in c.kwargs for c in model.calls)  # an answer to rewrite: no tool forced


async def test_a_source_from_an_uploaded_file_or_the_request_passes(home: Path) -> None:
    uploads = user_data(home, "t-src2", "uploads")
    (uploads / "reading.md").write_text(f"Reading list:\n- {INVENTED}\n")
    request = (
        "Write a short report on rainwater harvesting; cite the guide in my reading list and https://water.gov/tanks."
    )
    reply = REPORT + "- https://water.gov/tanks\n"
    read = {"tool_calls": [{"name": "bash", "args": {"command": "wc -l /mnt/user-data/uploads/reading.md"}}]}
    _, messages, answer = await run(
        home, "t-src2", request, [read, reply]
    )  # the link itself was not in any tool result
    assert rules(messages) == []
    assert answer == reply


async def test_an_invented_source_in_a_report_file_is_sent_back_to_rewrite_the_file(home: Path) -> None:
    out = "/mnt/user-data/outputs/report.md"
    fixed = REPORT.replace(f"- [Rainwater Institute guide]({INVENTED})\n", "- none fetched\n")
    responses = [
        {"tool_calls": [{"name": "write_file", "args": {"path": out, "content": REPORT}}]},
        f"Saved the report to {out}.",
        {"tool_calls": [{"name": "write_file", "args": {"path": out, "content": fixed}}]},
        f"Saved the report to {out}, without unverified sources.",
    ]
    model, messages, answer = await run(
        home, "t-src3", f"Write a short report on rainwater harvesting to {out}", responses
    )
    assert rules(messages) == [["source.unseen"]]
    assert model.calls[2].kwargs.get("tool_choice") == "write_file"
    written = (user_data(home, "t-src3", "outputs") / "report.md").read_text()
    assert INVENTED not in written and answer.endswith("without unverified sources.")
