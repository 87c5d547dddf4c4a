"""Task programs: a file the request asks for that the model did not make is made by a program
it writes on a clean page.

Asked to start a script in the background, wait until it wrote three lines, then copy the first
line to outputs/first_tick.txt, the embedded 1.5B model started the script and answered with the
tool's message; told that first_tick.txt does not exist, it wrote an empty file; told it is
empty, it wrote "First tick". Each note moved it one tool call, and each call was a guess at what
the note wanted, not a step of the request. A small code model writes a short program for a
whole request far more reliably than it plans a chain of tool calls (the code-as-action finding
of CodeAct, Wang et al. 2024, and smolagents' code agents).

So when a note of the completion check says a deliverable the request asks for is missing
(:data:`TASK_RULES`: a file or folder under outputs the request names that does not exist, is
empty or is a folder, a file it asks to make that does not exist or is empty, an output the
active skill declares that is not there, the last command printed the result of a file still
missing, a file with another number of rows than the range the request gives), the model is asked
on a clean page instead (:mod:`~herdsman.middleware.clean_page`: once per run; the request, how the
files it names begin, what the note found without the commands it proposes) for one Python
program that does the request: it reads the files the request names and writes the ones it asks
for. A program that parses becomes the model's next
step: a ``bash`` call running it, in its name, marked (:data:`TASK_KEY`); the model then answers
from what it printed, and the completion check checks the files as any other.

Hand-written: see :mod:`~herdsman.middleware.clean_page`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage

from herdsman.middleware.clean_page import Page, ProgramPageMiddleware, found_text, named_looks
from herdsman.middleware.completion.findings import DELIVERABLE_MISSING
from herdsman.middleware.file_rewrite import CODE_SUFFIXES, target_of

TASK_KEY = "herdsman_task_program"
"""``additional_kwargs`` key of the AI message whose bash call runs a program that does the request."""
TASK_RULES = DELIVERABLE_MISSING | {"output.printed_not_saved", "rows.count_wrong"}
"""The completion check's rules that say a deliverable the request asks for is not there, or not
whole (a file with another number of rows than the range the request gives)."""
PROMPT = (
    "Write one Python 3 program that does the user's request: it reads the files the request names (below is how "
    "they begin) and writes the files the request asks for, at the exact paths it gives, creating their folders. "
    "Prefer the standard library. At the end, print one short line that says what it wrote. "
    "Reply with the program in one ```python block."
)
MAX_TOKENS = 1024
"""The program's length limit."""


class TaskProgramMiddleware(ProgramPageMiddleware):
    """Make a missing deliverable with a program written on a clean page (module docstring)."""

    RULES = TASK_RULES
    KEY = TASK_KEY
    MAX_TOKENS = MAX_TOKENS

    def page(self, question: str, run: Sequence[AnyMessage], finding: dict[str, Any], sandbox: Any) -> Page | None:
        """The request, how the files it names begin (read now) and what the note found; None for
        a missing script (a program that writes a program hard-codes the example: the file
        rewrite's page writes it, :mod:`~herdsman.middleware.file_rewrite`)."""
        target = target_of(finding)
        if target is not None and target.endswith(CODE_SUFFIXES):
            return None
        parts = [
            f"Request: {question[:2000]}",
            *named_looks(question, sandbox),
            f"Not done yet:\n{found_text(run, proposals=False)}",
        ]
        messages: list[AnyMessage] = [SystemMessage(PROMPT), HumanMessage("\n\n".join(parts))]
        return Page(messages, str(finding["rule"]))
