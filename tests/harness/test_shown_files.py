"""Files a reply shows (a file name, then its text in a fenced block) and the run never wrote:
the completion check finds them, and the harness writes them for the model (lead.run_shown_code)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, ToolMessage

from herdsman.middleware.completion.findings import FINDINGS_KEY
from herdsman.middleware.completion.shown_files import shown_files
from herdsman.middleware.completion.skill_checks import misnamed_target
from tests.harness.test_completion_findings import call, notes, run
from tests.harness.test_shown_code import ran_for_model

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
    <meta charset="UTF-8">
    <meta name="viewport" content="width=device-width, initial-scale=1.0">
    <title>Counter Site</title>
</head>
<body>
    <p id="counter">0</p>
    <button id="incrementButton">Increment</button>
    <script src="script.js"></script>
</body>
</html>
"""
SCRIPT = "document.getElementById('incrementButton').onclick = () => {\n  counter.textContent = +counter.textContent + 1;\n};\n"
# the embedded model's reply to the live-preview request (2026-12-05), shortened
TUTORIAL = f"""To build a one-page site with a counter and a button, follow these steps:

### 1. Create the HTML structure

Create a file named `index.html` in the `/mnt/user-data/workspace` directory.

```html
{PAGE}```

### 2. Write the JavaScript

Create a file named `script.js` in the `/mnt/user-data/workspace` directory.

```javascript
{SCRIPT}```

### 3. Serve the site

```bash
python3 -m http.server 8000 --bind 127.0.0.1
```

Open the site in a web browser by navigating to `http://127.0.0.1:8000`.
"""
OUT = "/mnt/user-data/outputs"


def test_named_blocks_are_files_under_outputs_and_commands_are_not() -> None:
    assert shown_files(TUTORIAL, []) == {f"{OUT}/index.html": PAGE, f"{OUT}/script.js": SCRIPT}


def test_paths_names_in_any_language_and_what_is_not_taken() -> None:
    chinese = "创建文件 **report.md**：\n```markdown\n# 报告\n```\n再创建 `/mnt/user-data/workspace/a.py`：\n```python\nprint(1)\n```"
    assert shown_files(chinese, []) == {f"{OUT}/report.md": "# 报告\n", "/mnt/user-data/workspace/a.py": "print(1)\n"}
    folder = "Save this as `style.css` in /mnt/user-data/outputs/site:\n```css\nbody{margin:0}\n```"
    assert shown_files(folder, []) == {f"{OUT}/site/style.css": "body{margin:0}\n"}
    # an extension that does not fit the block, a way out of the folder, no name at all
    assert shown_files("Install Node.js first:\n```python\nprint(1)\n```", []) == {}
    assert shown_files("Write `../../etc/cron.d/x.sh`:\n```sh\nid\n```", []) == {}
    assert shown_files("Run this:\n```python\nprint(1)\n```", []) == {}


def test_nothing_when_the_run_wrote_files_or_the_block_was_quoted_from_a_tool_result() -> None:
    wrote = [
        AIMessage("", tool_calls=[{"name": "write_file", "args": {"path": "x", "content": "y"}, "id": "w1"}]),
        ToolMessage("Wrote 1 bytes", tool_call_id="w1", name="write_file"),
    ]
    assert shown_files(TUTORIAL, wrote) == {}
    fetched = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "curl -s x"}, "id": "b1"}]),
        ToolMessage(f"page text\n{SCRIPT}", tool_call_id="b1", name="bash"),
    ]
    assert list(shown_files(TUTORIAL, fetched)) == [f"{OUT}/index.html"]  # script.js was quoted, not written


async def test_the_harness_writes_the_shown_files_and_the_model_goes_on_from_there(home: Path) -> None:
    """The reply is a tutorial; the harness writes index.html and script.js in outputs in one
    message in the model's name, the note says so, and the model answers once they exist."""
    model, state = await run(
        home,
        "t-files",
        "Build a one-page site that shows a counter with a button.",
        [TUTORIAL, call("ls", 1, path=OUT), "The page is in outputs/index.html."],
        lead_extra={"run_shown_code": "on"},
        skills={"auto_select": "off"},  # no skill: the web-page builder's own steps are tested below
    )
    outputs = home / "threads" / "t-files" / "user-data" / "outputs"
    assert (outputs / "index.html").read_text() == PAGE and (outputs / "script.js").read_text() == SCRIPT
    [made] = ran_for_model(state)
    assert [c["name"] for c in made.tool_calls] == ["write_file", "write_file"]
    [note] = notes(state)
    [finding] = [f for f in note.additional_kwargs[FINDINGS_KEY] if f["rule"] == "code.files_not_written"]
    assert finding["evidence"]["paths"] == [f"{OUT}/index.html", f"{OUT}/script.js"]
    assert not any(f["rule"] == "code.shown_not_run" for f in note.additional_kwargs[FINDINGS_KEY])
    assert state["messages"][-1].text == "The page is in outputs/index.html."


async def test_with_run_shown_code_off_the_model_is_told_to_write_them(home: Path) -> None:
    model, state = await run(
        home,
        "t-files-off",
        "Build a one-page site that shows a counter with a button.",
        [TUTORIAL, call("write_file", 1, path=f"{OUT}/index.html", content=PAGE), "Written."],
        lead_extra={"run_shown_code": "off"},
        skills={"auto_select": "off"},
    )
    assert not ran_for_model(state)
    [note] = notes(state)
    assert f"Your reply shows {OUT}/index.html, {OUT}/script.js, but nothing wrote them" in note.text
    assert note.additional_kwargs.get("force_tools") == ["write_file"]


async def test_with_the_defaults_the_site_a_tutorial_shows_is_written_checked_and_served(home: Path) -> None:
    """The live-preview request with the configured defaults: the request activates the web-page
    builder (skills.auto_select: activate), and a model that only ever answers in prose still ends
    with the files written, the skill's check run and its server listening for the Preview tab."""
    model, state = await run(
        home,
        "t-site",
        "Build a one-page site that shows a counter with a button, serve it, and show it to me.",
        [TUTORIAL, "The page is live.", "The page is live.", "The page is live."],
        lead_extra={"run_shown_code": "on"},
    )
    assert state["active_skill"]["name"] == "web-page-builder" and state["active_skill"]["chosen"]
    outputs = home / "threads" / "t-site" / "user-data" / "outputs"
    assert (outputs / "index.html").read_text() == PAGE and (outputs / "script.js").read_text() == SCRIPT
    calls = [c for made in ran_for_model(state) for c in made.tool_calls]
    assert [c["name"] for c in calls] == ["write_file", "write_file", "bash", "bash"]
    assert "check_site.py /mnt/user-data/outputs" in calls[2]["args"]["command"]
    serve = calls[3]["args"]
    assert serve["background"] is True and "http.server 8000" in serve["command"] and OUT in serve["command"]
    [started] = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == calls[3]["id"]]
    assert "listening on port 8000" in started.text
    assert state["messages"][-1].text == "The page is live." and len(model.calls) == 4


async def test_a_page_written_as_a_file_named_like_the_skills_folder_is_moved_and_served(home: Path) -> None:
    """From the live-preview acceptance run (2026-12-05, defaults): the web page builder active,
    the model checked outputs/site before writing it, then wrote the whole page into a file named
    outputs/site, and refused. The harness moves it to outputs/site/index.html (what the skill's
    ``**/index.html`` finds) and serves that folder for the Preview tab."""
    sorry = "I'm sorry, but I can't assist with that request."
    check = "python3 /mnt/skills/public/web-page-builder/scripts/check_site.py /mnt/user-data/outputs/site"
    model, state = await run(
        home,
        "t-misnamed",
        "Build a one-page site that shows a counter with a button, serve it, and show it to me.",
        # as the model did: a refusal, the check, a refusal, the page written, then refusals to the end
        [sorry, call("bash", 1, command=check), sorry, call("write_file", 2, path=f"{OUT}/site", content=PAGE)]
        + [sorry] * 4,
        lead_extra={"run_shown_code": "on"},
    )
    outputs = home / "threads" / "t-misnamed" / "user-data" / "outputs"
    assert (outputs / "site" / "index.html").read_text() == PAGE and not (outputs / "site.herdsman-move").exists()
    rules = [f["rule"] for note in notes(state) for f in note.additional_kwargs[FINDINGS_KEY]]
    assert "skill.output_misnamed" in rules
    made = [c for m in ran_for_model(state) for c in m.tool_calls]
    assert made[0]["args"]["command"].startswith(f"mv {OUT}/site ")
    assert made[-1]["args"] == {
        "command": f"cd {OUT}/site && exec python3 -m http.server 8000 --bind 127.0.0.1",
        "background": True,
    }


def test_only_a_text_of_the_patterns_kind_written_without_a_name_is_moved() -> None:
    page = "<!doctype html><html><body>hi</body></html>"
    assert misnamed_target("**/index.html", f"{OUT}/site", page) == f"{OUT}/site/index.html"
    assert misnamed_target("**/*.svg", f"{OUT}/chart", '<?xml version="1.0"?>\n<svg></svg>') == f"{OUT}/chart.svg"
    assert misnamed_target("**/index.html", f"{OUT}/site", "just some notes") is None
    assert misnamed_target("**/index.html", f"{OUT}/site.txt", page) is None  # it has a name
    assert misnamed_target("**/*.pptx", f"{OUT}/deck", page) is None  # a kind told by no text head
    assert misnamed_target("**/*.html", f"{OUT}/page", None) is None
