"""Which tools the calls after a completion-check note must use: the note's problems, read by
their prefixes, become a plan of forced tools (``tool_choice``), so a small model told what is
missing acts on it instead of apologizing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.middleware.completion_files import (
    DOUBLE_EXTENSION, LINES_CUT, NOT_JUST_VALUE, NOT_SORTED, PRINTED_NOT_SAVED, ROWS_SHORT, RUN_SCRIPT, SKILL_OUTPUT,
    VALUE_NOT_SET,
)
from herdsman.middleware.completion_rules import (
    ANSWER_OFFER, CODE_NOT_RUN, CODE_NOT_WRITTEN, COMPARE_IT, FOLDER_EMPTY, MISSING_FILE, RUN_IT, SOURCE_SUFFIXES, change_targets,
    mention,
)
from herdsman.middleware.completion_search import SEARCH_AGAIN, SEARCH_FOR
from herdsman.middleware.turn import this_run


_BASH_NOTES = (CODE_NOT_RUN, RUN_IT, PRINTED_NOT_SAVED, ROWS_SHORT, LINES_CUT, RUN_SCRIPT, COMPARE_IT, NOT_SORTED, DOUBLE_EXTENSION)
"""Notes whose way out is a command: run the code shown, the script changed, the saving command..."""


def next_tools(problems: Sequence[str], state: Any) -> list[str]:
    """The tools the calls after a note must use, in order ("any": some tool).

    A file to fix that is unchanged: read it first when the run has not (read before write
    refuses an edit of an unread file), then write_file when the reply showed the new code
    (the model copies its own code), else str_replace. A missing file: write_file when it is
    the only problem or the reply was a value to copy into it, or a text file the model already tried to write another way (it knows
    the content, not the mechanics; an empty file counts as missing); bash when the note's way out is a
    command (code to run, output to save, a count or a comparison to make); grep when a search found
    nothing or never looked for the request's term. Else any tool."""
    request, run = this_run(state.get("messages") or [])
    calls = [c for m in run if isinstance(m, AIMessage) for c in m.tool_calls]
    targets = change_targets(request.text if request else "", list(state.get("preexisting_stat") or {}))
    read = any(
        (c["name"] == "read_file" or (c["name"] == "bash" and "cat " in str(c["args"])))
        and any(mention(str(c["args"]), t.rsplit("/", 1)[-1]) for t in targets)
        for c in calls
    )  # the file to change, not another one (the test beside it)
    if any("but it was not changed" in p for p in problems):
        edit = "write_file" if any(p.startswith(CODE_NOT_WRITTEN) for p in problems) else "str_replace"
        return [edit] if read else ["read_file", edit]
    if any(p.startswith(VALUE_NOT_SET) for p in problems):
        return ["str_replace"] if read else ["read_file", "str_replace"]
    if any(p.startswith(_BASH_NOTES) or " wc -" in p for p in problems):  # " wc -": a count to make with that command
        return ["bash"]
    if any(p.startswith((SEARCH_AGAIN, SEARCH_FOR)) for p in problems):
        return ["grep"]
    missing = [m.group(1) or m.group(2) for p in problems if (m := MISSING_FILE.search(p))]
    if missing and (len(problems) == 1 or any(p.startswith(ANSWER_OFFER) for p in problems)):
        return ["write_file"]
    if len(problems) == 1 and problems[0].startswith((FOLDER_EMPTY, NOT_JUST_VALUE, SKILL_OUTPUT)):
        return ["write_file"]
    tried = " ".join([str(c["args"]) for c in calls] + [m.text for m in run if isinstance(m, AIMessage)])
    if missing and all(name.lower().endswith(SOURCE_SUFFIXES) and name in tried for name in missing):
        return ["write_file"]
    return ["any"]
