"""A server the run started in the background and then did not use, or asked for a file it does
not serve.

Asked to start a server in the background and fetch something through it, the embedded 1.5B
model starts the server, then answers with the bash tool's own notice ("The server is running
in the background...") or apologizes: the second half of the request, the fetch, never happens,
in English or in Chinese. Or it fetches ``/hello.txt`` from a ``python3 -m http.server`` started
in the workspace while the file is in ``workspace/site``, and saves the server's 404 page as the
file. Both are found from the calls and files alone, whatever the request's language:

- ``server.not_used``: a background job of the run is listening (the tool said later commands
  reach it) and no later call's command names its port. The finding carries the read-only
  ``curl`` of the URL path the request names (``/status.json``; ``/`` when it names none), which
  the harness runs in the model's name like its other queries (``shown_code.QUERY_RULES``).
- ``server.not_found``: the last fetch from a static file server's port printed a 404, or left
  a 404 page in a file the request asks for under outputs, and the path the request names is a
  file in a folder the request names below the served folder: the finding gives the URL that
  reaches it there (``/site/hello.txt``) and says how to serve that folder itself.

The served folder comes from :func:`~herdsman.sandbox.file_servers.served_folder`. Hand-written:
no library reads a run's calls; the URL paths are a regular expression over the request.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolCall

from herdsman.middleware.completion.findings import COMMAND, Finding
from herdsman.middleware.completion.rules import request_folders, request_paths, tool_results
from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE
from herdsman.sandbox.base import OUTPUTS
from herdsman.sandbox.file_servers import served_folder

_STARTED = re.compile(r"^Started in the background \(job (\d+)\)")
_REACHABLE = "Later bash commands reach it"
_PORT = re.compile(r"\bport (\d+)")
_URL_PATH = re.compile(r"(?<![\w/.:~%-])/(?!mnt/)[\w.~%-]+(?:/[\w.~%-]+)*")
_LOCAL_URL = r"(?:https?://)?(?:127\.0\.0\.1|localhost|0\.0\.0\.0):{port}(/[\w./~%-]*)?"
_NOT_FOUND = re.compile(r"\b404\b.{0,80}(?:not found|error)|(?:not found|error).{0,80}\b404\b", re.I | re.S)


@dataclass(frozen=True)
class Server:
    """A background job of the run that listens: its number, port, the folder it serves (a static
    file server; None for another program) and the index in the run of the message that started it."""

    job: int
    port: int
    folder: str | None
    at: int


def _calls(run: Sequence[Any]) -> list[tuple[int, ToolCall]]:
    """The run's bash calls with the index of their message."""
    return [(i, c) for i, m in enumerate(run) if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] == "bash"]


def started_servers(run: Sequence[Any]) -> list[Server]:
    """The background jobs the run's bash calls started that listen and that later commands reach."""
    results = tool_results(run)
    servers = []
    for at, call in _calls(run):
        result = results.get(call.get("id") or "")
        args = call.get("args") or {}
        if result is None or not args.get("background") or _REACHABLE not in result.text:
            continue
        started = _STARTED.match(result.text)
        ports = (result.artifact or {}).get("ports") if isinstance(result.artifact, dict) else None
        port = ports[0] if ports else (m := _PORT.search(result.text)) and int(m.group(1))
        if started and port:
            servers.append(Server(int(started.group(1)), int(port), served_folder(str(args.get("command", ""))), at))
    return servers


def url_paths(request: str, port: int) -> list[str]:
    """The URL paths the request names for ``port``: of its URLs on this machine with that port,
    else its words that begin with ``/`` outside the sandbox's folders (``/status.json``)."""
    full = [m.group(1) or "/" for m in re.finditer(_LOCAL_URL.format(port=port), request)]
    return full or _URL_PATH.findall(request)


def reaching(path: str, server: Server, request: str, exists: Callable[[str], bool]) -> str:
    """The URL path that reaches the file the request means by ``path`` on ``server``: ``path``
    itself when the served folder has it, else the same file in a folder the request names below
    the served folder (``/site/hello.txt`` for ``/hello.txt`` of ``workspace/site``)."""
    root = server.folder
    if root is None or exists(root.rstrip("/") + path):
        return path
    for folder in request_folders(request):
        if folder.startswith(root.rstrip("/") + "/") and exists(folder.rstrip("/") + path):
            return folder.rstrip("/")[len(root.rstrip("/")) :] + path
    return path


def server_unused(
    request: str, run: Sequence[Any], exists: Callable[[str], bool], text_of: Callable[[str], str | None]
) -> Finding | None:
    """``server.not_used`` or ``server.not_found`` for the first server of the run that has one
    (``exists``: whether a virtual path is a file; ``text_of``: a small file's text)."""
    results = tool_results(run)
    for server in started_servers(run):
        if run[server.at].additional_kwargs.get(RAN_SHOWN_CODE) == "skill.not_served":
            continue  # the harness served a skill's output for the Preview tab: no command need use it
        address = re.compile(_LOCAL_URL.format(port=server.port))
        fetches = [
            (call, results.get(call.get("id") or ""))
            for at, call in _calls(run)
            if at > server.at and address.search(str((call.get("args") or {}).get("command", "")))
        ]
        wanted = url_paths(request, server.port) or ["/"]
        urls = {path: reaching(path, server, request, exists) for path in wanted}
        evidence: dict[str, Any] = {"job": server.job, "port": server.port, "folder": server.folder}
        if not fetches:
            url = urls[wanted[0]]
            evidence |= {"path": wanted[0], "url": url, "command": _curl(server.port, url)}
            return Finding("server.not_used", evidence, ("bash",), COMMAND)
        last = fetches[-1][1]
        saved = [text_of(p) or "" for p in request_paths(request) if p.startswith(OUTPUTS + "/")]
        if not any(_NOT_FOUND.search(text) for text in [last.text if last else "", *saved]):
            continue
        moved = next(((path, url) for path, url in urls.items() if url != path), None)
        if moved is not None:
            evidence |= {"path": moved[0], "url": moved[1], "command": _curl(server.port, moved[1])}
            return Finding("server.not_found", evidence, ("bash",), COMMAND)
    return None


def _curl(port: int, url: str) -> str:
    """The read-only fetch of ``url`` from the server on ``port``."""
    return f"curl -s {shlex.quote(f'http://127.0.0.1:{port}{url}')}"
