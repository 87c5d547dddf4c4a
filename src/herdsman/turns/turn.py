"""The current turn as the middlewares see it: the user's last message, what followed it, the
harness's own notes among the messages, the files a request names, the names of the tools a
request offers, the sandbox of the thread the run is on, the reply a limit wrote in place of the
model's, and the language of the request.

Several middlewares (completion check, tool selection, answer nudge, skill activation) read the
same things; they are written once here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.config import get_config

from herdsman import pools
from herdsman.language.detect import language_of
from herdsman.sandbox.base import HostBackedSandbox, SandboxProvider
from herdsman.sandbox.virtual_folders import virtual_folder_path

FILE_EXTENSIONS = (
    "txt|md|csv|tsv|json|jsonl|yaml|yml|xml|html|htm|css|js|ts|py|sh|sql|log|ini|toml|cfg|png|jpg|jpeg|svg|"
    "pdf|docx|xlsx|pptx|zip|tar|gz|r|ipynb|tex|rst|env|conf"
)
# ASCII bounds: a file name written right after or before Chinese or Japanese words (写入report.md中)
# is still a file name, and those scripts' characters count as word characters for \w.
_FILE = re.compile(
    rf"(?<![A-Za-z0-9_/.-])((?:/mnt/user-data/)?[\w][\w./-]*\.(?:{FILE_EXTENSIONS}))(?![A-Za-z0-9_])", re.IGNORECASE
)
_CJK_LEAD = re.compile(r"^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+(?=[A-Za-z_])")
_EXAMPLE = re.compile(r"\b(like|e\.g\.|such as|for example|for instance)[\s:,]*$", re.IGNORECASE)
USER_DATA_PREFIX = "/mnt/user-data/"
HARNESS_NAME = "harness"
"""The ``name`` of the messages the harness adds to a thread (notes, not the user's words)."""


def is_harness(message: Any) -> bool:
    """Whether ``message`` is a note of the harness rather than something the user wrote."""
    return isinstance(message, HumanMessage) and message.name == HARNESS_NAME


def this_run(messages: Sequence[AnyMessage]) -> tuple[HumanMessage | None, list[AnyMessage]]:
    """The user's last message and everything after it (harness notes are not the user's)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage) and not is_harness(messages[i]):
            return messages[i], list(messages[i + 1 :])  # type: ignore[return-value]  # every message of a thread is an AnyMessage; list() of a slice loses it
    return None, list(messages)


def request_text(messages: Sequence[AnyMessage]) -> str:
    """The text of the user's last message ("" when there is none)."""
    request, _ = this_run(messages)
    return request.text if request is not None else ""


def used_tools(messages: Sequence[AnyMessage]) -> set[str]:
    """Names of the tools called since the user's last message."""
    _, run = this_run(messages)
    return {call["name"] for m in run if isinstance(m, AIMessage) for call in m.tool_calls}


def named_files(request: str) -> list[str]:
    """File names and virtual paths the request mentions (URLs and examples excluded)."""
    text = re.sub(r"https?://\S+", " ", request)
    names: list[str] = []
    for match in _FILE.finditer(text):
        name = match.group(1).rstrip(".")
        if USER_DATA_PREFIX in name:
            name = name[name.index(USER_DATA_PREFIX) :]  # 写入/mnt/user-data/outputs/a.md: the path
        elif not name.startswith("/"):
            name = _CJK_LEAD.sub("", name)  # 读取data.csv: data.csv (报告.md stays whole)
            name = virtual_folder_path(name) or name  # outputs/pal.py: /mnt/user-data/outputs/pal.py
        if _EXAMPLE.search(text[max(0, match.start() - 16) : match.start()]):
            continue  # "its path (like a/b.py)": a shape, not a file
        if name not in names and not name.startswith(("www.", "e.g.", "i.e.")):
            names.append(name)
    # a bare name also written as a full path is the same file
    return [n for n in names if "/" in n or not any(o.endswith("/" + n) for o in names)]


EMPTY_VALUES = ("", "[]", "{}", '""', "null")
"""What a file may hold and still be empty: nothing to lose by overwriting it, nothing delivered."""


def holds_nothing(text: str) -> bool:
    """Whether ``text`` (a file's content) is empty: whitespace, [], {}, "" or null."""
    return text.strip() in EMPTY_VALUES


def tool_name(tool: Any) -> str:
    """The name of a tool as a request carries it: a LangChain tool or a dict."""
    return (tool.get("name", "") if isinstance(tool, dict) else getattr(tool, "name", "")) or ""


def tool_names(tools: Iterable[Any]) -> set[str]:
    """The names of ``tools``."""
    return {tool_name(t) for t in tools}


def run_user() -> str:
    """The user this run belongs to (:func:`herdsman.pools.user_of` its config), for the pools'
    per-user slots; the local user outside a run."""
    try:
        config = get_config()
    except RuntimeError:  # not inside a runnable (a direct call in a test)
        config = None
    return pools.user_of(config)


def run_sandbox(provider: SandboxProvider | None) -> HostBackedSandbox | None:
    """The sandbox of the thread this run is on (from the run config), when its files are on
    this host; None without a provider, a thread id, or host-side files."""
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    if provider is None or not thread_id:
        return None
    sandbox = provider.acquire(str(thread_id))
    return sandbox if isinstance(sandbox, HostBackedSandbox) else None


STOP_KEY = "herdsman_stopped_by"  # in a limit's reply's response_metadata: which limit wrote it


def stopped_reply(text: str, reason: str, **fields: Any) -> AIMessage:
    """The reply that ends an agent because of limit ``reason`` (e.g. ``max_steps``, ``token_budget``)."""
    return AIMessage(content=text, response_metadata={STOP_KEY: reason}, **fields)


def stop_reason(message: Any) -> str | None:
    """Which limit wrote ``message`` (see :func:`stopped_reply`), or None for a model's reply."""
    metadata = getattr(message, "response_metadata", None) or {}
    reason = metadata.get(STOP_KEY)
    return reason if isinstance(reason, str) else None


def turn_language(messages: Sequence[Any]) -> str:
    """The language of the user's last message among ``messages`` (message objects), ``en`` when
    there is none or it has no letters."""
    language = language_of(request_text(messages)[:4000])
    return "en" if language == "und" else language
