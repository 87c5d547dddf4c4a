"""Files a reply shows instead of writing them.

Asked to build a one-page site with a counter and serve it (the live-preview acceptance check,
web-page-builder active), the embedded 1.5B model answered with a tutorial: "Create a file named
`index.html` ... ```html ...```", "Create a file named `script.js` ... ```javascript ...```",
then the server command. The files were complete and would have worked; no tool was called.
The request names no file, so no other rule of the completion check saw a gap, and the run
ended with instructions for the user to follow.

A file name on the line before a fenced block, and the block as that file's whole text, is a
common shape for a model to show files in (it is the "whole file" edit format of Aider). So when
the final reply of a run that wrote no file shows such blocks for files that do not exist, the
check finds ``code.files_not_written`` with the files' paths, and where the harness may run
what a reply showed (``lead.run_shown_code``, the small profile), it writes them for the model:
one ``write_file`` call per file in one message in the model's name, marked, through the tools
node like any call (read before write, the sandbox, the file history all apply).

Where a file goes: a ``/mnt/user-data/...`` path the line names is used as it is; a bare name
goes under ``/mnt/user-data/outputs`` (in the outputs sub-folder the line names, if any), where
the user's Files and Preview tabs look, so files that link to each other by name stay together.

Language-neutral: file names and fences only, in a reply in any language. Not done for a block
copied from a tool result (quoted, not written: a prompt injection's file must not be made), a
name with ``..``, a name whose extension does not fit the block's language, more than
:data:`MAX_FILES` files or a block over :data:`MAX_CHARS`, nor for a file that exists (changing
a file is ``code.shown_not_written``'s). Hand-written: no library reads file names out of prose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

MAX_FILES = 6
"""The files one reply may have written for it."""
MAX_CHARS = 20_000
"""The largest block written as a file."""
WRITING_TOOLS = frozenset({"write_file", "str_replace"})
"""Tool calls that mean the run wrote a file itself."""
OUTPUTS = "/mnt/user-data/outputs"
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
_NAME = re.compile(r"(?<![\w/.-])((?:/mnt/user-data/)?[\w][\w./-]*\.([A-Za-z][A-Za-z0-9]{0,4}))(?![\w/-])")
_OUTPUT_FOLDER = re.compile(r"/mnt/user-data/outputs(?:/[\w.-]+)*(?![\w./-]*\.[A-Za-z])")
_EXTENSIONS = {
    "html": ("html", "htm"),
    "htm": ("html", "htm"),
    "css": ("css",),
    "javascript": ("js", "mjs", "cjs"),
    "js": ("js", "mjs", "cjs"),
    "typescript": ("ts",),
    "ts": ("ts",),
    "python": ("py",),
    "python3": ("py",),
    "py": ("py",),
    "json": ("json",),
    "yaml": ("yaml", "yml"),
    "yml": ("yaml", "yml"),
    "markdown": ("md", "markdown"),
    "md": ("md", "markdown"),
    "csv": ("csv",),
    "sql": ("sql",),
    "xml": ("xml", "svg"),
    "svg": ("svg",),
    "bash": ("sh",),
    "sh": ("sh",),
    "shell": ("sh",),
    "toml": ("toml",),
    "ini": ("ini", "cfg"),
    "text": ("txt", "md", "csv"),
    "txt": ("txt",),
    "plaintext": ("txt",),
}
_ANY_TEXT = frozenset(ext for exts in _EXTENSIONS.values() for ext in exts)


def shown_files(reply: str, run: Sequence[Any]) -> dict[str, str]:
    """Path -> text of each file the reply shows as a named block (see the module docstring),
    in the reply's order; {} when the run wrote a file itself or nothing fits."""
    if wrote_files(run):
        return {}
    results = [m.text for m in run if isinstance(m, ToolMessage)]
    files: dict[str, str] = {}
    start = 0
    for fence in _FENCE.finditer(reply):
        lead = [line for line in reply[start : fence.start()].splitlines() if line.strip()][-2:]
        start = fence.end()
        language, code = fence.group(1).lower(), fence.group(2)
        path = _named_path(lead, language)
        if path is None or not code.strip() or len(code) > MAX_CHARS or path in files:
            continue
        if any(code.strip() in result for result in results):
            continue  # quoted from a tool result, not written by the model
        files[path] = code if code.endswith("\n") else code + "\n"
    return files if len(files) <= MAX_FILES else {}


def wrote_files(run: Sequence[Any]) -> bool:
    """Whether the run made a file-writing call of its own."""
    return any(call["name"] in WRITING_TOOLS for m in run if isinstance(m, AIMessage) for call in (m.tool_calls or []))


def _named_path(lead: Sequence[str], language: str) -> str | None:
    """The virtual path the lines before a block name for it: the last name on them whose
    extension fits the block's language (any text extension when the block has none)."""
    fits = _EXTENSIONS.get(language, () if language else tuple(_ANY_TEXT))
    for line in reversed(lead):
        names = [m for m in _NAME.finditer(line) if m.group(2).lower() in fits]
        if not names:
            continue
        name = names[-1].group(1)
        if ".." in name.split("/"):
            return None
        if name.startswith("/mnt/user-data/"):
            return name
        folder = _OUTPUT_FOLDER.search(line)
        base = folder.group(0).rstrip("/") if folder else OUTPUTS
        return f"{base}/{name.lstrip('./')}"
    return None


def files_evidence(files: Mapping[str, str]) -> dict[str, Any]:
    """The finding's evidence: the paths (the texts are read again from the reply when the
    harness writes them)."""
    return {"paths": list(files)}
