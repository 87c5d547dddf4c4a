"""A server started in the background and then not used, or asked for a file it does not serve.

The bash tool says which folder a ``python3 -m http.server`` serves; the completion check finds a
server no later command fetched from (``server.not_used``) and a fetch that got the server's 404
page while the file sits in a folder the request names (``server.not_found``), and the harness
fetches the right URL in the model's name. The servers run for real in the jail."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from herdsman.middleware.completion.findings_text import render
from herdsman.middleware.completion.servers import server_unused, url_paths
from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE
from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.file_servers import served_folder
from tests.support import small_model_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"
STARTED = (
    "Started in the background (job 1); listening on port 8123 inside the sandbox. The user sees it live in the "
    "Preview tab (port 8123). Later bash commands reach it at http://127.0.0.1:8123/ (curl -s http://127.0.0.1:8123/...)."
)


def started(command: str, text: str = STARTED) -> list:
    return [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command, "background": True}, "id": "s"}]),
        ToolMessage(text, tool_call_id="s", name="bash", artifact={"background": 1, "ports": [8123]}),
    ]


def fetched(command: str, output: str) -> list:
    return [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": command}, "id": "f"}]),
        ToolMessage(output, tool_call_id="f", name="bash"),
    ]


def test_the_folder_a_file_server_serves_is_read_from_its_command() -> None:
    assert served_folder("python3 -m http.server 8123 --bind 127.0.0.1 &") == WS  # bash starts in the workspace
    assert served_folder(f"cd {WS}/site && python3 -m http.server 8123") == f"{WS}/site"
    assert served_folder("python3 -m http.server 9091 --directory api") == f"{WS}/api"
    assert served_folder("cd site; python -m http.server --directory=/tmp/x 80") == "/tmp/x"
    assert served_folder("python3 -m http.server 80 -d 'my site'") == f"{WS}/my site"
    assert served_folder("python3 app.py 8000") is None and served_folder("python3 -m http.server 'x") is None


def test_the_url_paths_a_request_names_in_any_language() -> None:
    zh = f"在后台用 python3 -m http.server 9091 提供 {WS}/api 目录，然后通过它下载 /status.json，告诉我 version 的值。"
    assert url_paths(zh, 9091) == ["/status.json"]
    assert url_paths("Ask http://127.0.0.1:8391/low-stock and localhost:8000/x for the count", 8391) == ["/low-stock"]
    assert url_paths(f"Serve {WS}/site on port 8123", 8123) == []  # sandbox paths are not URL paths


def test_a_server_no_command_used_gets_the_fetch_of_the_path_the_request_names() -> None:
    request = f"Serve {WS}/site with python3 -m http.server on port 8123 in the background and save /hello.txt as /mnt/user-data/outputs/got.txt."
    files = {f"{WS}/site/hello.txt"}
    found = server_unused(request, started("python3 -m http.server 8123 &"), files.__contains__, lambda p: None)
    assert found is not None and found.rule == "server.not_used" and found.next_tools == ("bash",)
    # the server serves the workspace: /hello.txt of site is /site/hello.txt there
    assert found.evidence["command"] == "curl -s http://127.0.0.1:8123/site/hello.txt"
    text = render(found)
    assert "listens on port 8123, but no command used it yet" in text and f"--directory {WS}/site" in text
    # served where the request says: the request's own path
    right = server_unused(request, started(f"cd {WS}/site && python3 -m http.server 8123"), files.__contains__, str)
    assert right is not None and right.evidence["command"] == "curl -s http://127.0.0.1:8123/hello.txt"
    assert "--directory" not in render(right)


def test_a_404_from_the_wrong_folder_gets_the_url_that_reaches_the_file() -> None:
    request = f"Serve {WS}/site with python3 -m http.server 8123 in the background, fetch /hello.txt and save it as /mnt/user-data/outputs/got.txt."
    files = {f"{WS}/site/hello.txt"}
    page = "<html><head><title>Error response</title></head><body><p>Error code: 404</p><p>Message: File not found.</p>"
    run = started("python3 -m http.server 8123") + fetched(
        "curl -s -o /mnt/user-data/outputs/got.txt localhost:8123/hello.txt", ""
    )
    saved = {"/mnt/user-data/outputs/got.txt": page}
    found = server_unused(request, run, files.__contains__, saved.get)
    assert found is not None and found.rule == "server.not_found"
    assert found.evidence["command"] == "curl -s http://127.0.0.1:8123/site/hello.txt"
    assert render(found).startswith("/hello.txt is not found on the server on port 8123 (404).")
    # a fetch that worked, a server that is not a file server, a job other commands cannot reach: nothing
    assert server_unused(request, run, files.__contains__, {"/mnt/user-data/outputs/got.txt": "hi"}.get) is None
    assert server_unused(request, started("python3 app.py") + run[2:], files.__contains__, saved.get) is None
    alone = STARTED.replace("Later bash commands reach it", "Other bash commands cannot reach it")
    assert server_unused(request, started("python3 -m http.server 8123", alone), files.__contains__, saved.get) is None


async def test_the_harness_fetches_from_the_server_the_model_left_unused(home: Path) -> None:
    """The model starts the server in the workspace, then repeats the tool's notice as its answer;
    the harness fetches the file through the real server, at the URL that reaches it, and the
    model answers from what it printed."""
    thread = "t-bg-unused"
    site = home / "threads" / thread / "user-data" / "workspace" / "site"
    site.mkdir(parents=True)
    (site / "hello.txt").write_text("hello from the herd\n")
    request = (
        f"在后台用 python3 -m http.server 8127 提供 {WS}/site 目录，然后通过它下载 /hello.txt，告诉我里面写了什么。"
    )
    model = ScriptedChatModel(
        responses=[
            call("bash", command="python3 -m http.server 8127", background=True),
            "服务器已在后台运行。",
            "文件内容是：hello from the herd",
        ]
    )
    messages = await small_model_run(home, thread, request, model, {}, {"verify_rounds": 2})
    notice = next(m for m in messages if isinstance(m, ToolMessage))
    assert f"It serves the files of {WS}" in notice.text, notice.text
    note = next(m for m in messages if isinstance(m, HumanMessage) and m.name == "harness")
    assert "port 8127, but no command used it yet" in note.text
    harness = next(m for m in messages if isinstance(m, AIMessage) and m.additional_kwargs.get(RAN_SHOWN_CODE))
    assert harness.tool_calls[0]["args"]["command"] == "curl -s http://127.0.0.1:8127/site/hello.txt"
    result = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == harness.tool_calls[0]["id"])
    assert "hello from the herd" in result.text
    assert messages[-1].text == "文件内容是：hello from the herd"
