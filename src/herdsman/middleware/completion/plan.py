"""Which tools the calls after a completion-check note must use: the note's findings, by their
``next_tools`` and ``priority`` fields, become a plan of forced tools (``tool_choice``), so a
small model told what is missing acts on it instead of apologizing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from herdsman.middleware.completion.findings import FINDINGS_KEY, WRITE_IF_ALONE, Finding
from herdsman.turns.turn import is_harness


def read_first(unseen: Callable[[str], bool], paths: Sequence[str], edit: str) -> tuple[str, ...]:
    """The calls that edit one of ``paths`` with the tool ``edit``: read_file first when read
    before write would refuse the edit of one of them (``unseen``: from the state that
    middleware keeps, see ``read_before_write.edit_refused``), else the edit alone."""
    return ("read_file", edit) if any(unseen(p) for p in paths) else (edit,)


def next_tools(findings: Sequence[Finding], spent: Collection[tuple[str, ...]] = ()) -> list[str]:
    """The tools the calls after a note must use, in order ("any": some tool).

    The finding with next tools and the lowest priority decides: rewrite a file with the code
    the reply showed, edit a file to change (each read first when unread), run a command, search,
    write a file. A finding whose write applies only alone (``WRITE_IF_ALONE``: a missing file,
    an empty folder, a sentence for a value) decides only when every finding of the note is a
    write; else any tool. The findings whose way is in ``spent`` (forced last round, taken, and
    its finding is found again) are left out: the next way is tried."""
    first = deciding(findings, spent)
    return list(first.next_tools) if first is not None else ["any"]


def deciding(findings: Sequence[Finding], spent: Collection[tuple[str, ...]] = ()) -> Finding | None:
    """The finding whose way the calls after a note take (see :func:`next_tools`), or None when
    no finding decides (the model may use any tool)."""
    findings = [f for f in findings if f.next_tools not in spent]
    planned = sorted((f for f in findings if f.next_tools), key=lambda f: f.priority)
    if not planned:
        return None
    first = planned[0]
    if first.priority >= WRITE_IF_ALONE and any(f.next_tools != ("write_file",) for f in findings):
        return None
    return first


def spent_ways(run: Sequence[Any], findings: Sequence[Finding]) -> set[tuple[str, ...]]:
    """The way (tools) the run's last forcing note forced, when the model took it and the finding that
    decided it is found again: it did not help. A small model sent to run the code it showed
    runs it, then answers with the same text; sent to run it again it does the same. The next
    round leaves that way out and sends it the next one (write the file)."""
    at = next(
        (
            i
            for i in range(len(run) - 1, -1, -1)
            if is_harness(run[i]) and (run[i].additional_kwargs or {}).get("force_tools")
        ),
        None,
    )
    if at is None:
        return set()
    note = run[at].additional_kwargs
    way = list(note["force_tools"])
    deciding = {
        d.get("rule")
        for d in note.get(FINDINGS_KEY) or []
        if isinstance(d, dict) and list(d.get("next_tools") or []) == way
    }
    if way == ["any"] or not deciding & {f.rule for f in findings}:
        return set()
    taken = {c["name"] for m in run[at + 1 :] if isinstance(m, AIMessage) for c in m.tool_calls}
    return {tuple(way)} if set(way) <= taken else set()
