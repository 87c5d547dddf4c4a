"""Runs to learn skills from, for the skill-learning tests: a turn's messages as the lead writes
them (tool calls, and the results the sandbox tools give), and a scripted agent that does the work."""

from __future__ import annotations

from itertools import count
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage

CSV_SCRIPT = '''"""Sum a column of a CSV into a JSON summary."""
import csv
import json

rows = list(csv.DictReader(open('/mnt/user-data/uploads/sales.csv', encoding='utf-8')))
total = sum(float(r['amount']) for r in rows)
with open('/mnt/user-data/outputs/summary.json', 'w', encoding='utf-8') as out:
    json.dump({'rows': len(rows), 'total': total}, out)
print('total', total)
'''
CSV_REQUEST = (
    "Summarize /mnt/user-data/uploads/sales.csv: the sum of the column 'amount' as JSON in "
    "/mnt/user-data/outputs/summary.json"
)
CSV_CALLS: list[tuple[str, dict[str, Any], int]] = [
    ("bash", {"command": "head -3 /mnt/user-data/uploads/sales.csv"}, 0),
    ("write_file", {"path": "/mnt/user-data/workspace/summarize.py", "content": CSV_SCRIPT}, 0),
    ("bash", {"command": "python3 /mnt/user-data/workspace/summarize.py"}, 0),
]


def turn(request: str, calls: list[tuple[str, dict[str, Any], int]], answer: str = "Done.") -> list[AnyMessage]:
    """The messages of one turn: ``request``, then each call ``(tool, args, exit code)`` with its
    result (bash's artifact holds the exit code, as the sandbox tool gives it), then ``answer``."""
    ids = count()
    messages: list[AnyMessage] = [HumanMessage(request, id="user-1")]
    for name, args, code in calls:
        call_id = f"call-{next(ids)}"
        messages.append(AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}]))
        artifact = {"command": args.get("command"), "exit_code": code, "files_changed": []} if name == "bash" else None
        text = "ok" if code == 0 else f"failed\n[exit code {code}]"
        messages.append(ToolMessage(text, tool_call_id=call_id, name=name, artifact=artifact))
    messages.append(AIMessage(answer))
    return messages


def scripted_work(calls: list[tuple[str, dict[str, Any]]], answer: str = "Done.") -> Any:
    """A scripted model's ``respond``: after the user's message, each of ``calls`` in turn (one per
    model call), then ``answer``; a message starting with ``/`` (a skill named) is answered at once."""

    def respond(messages: list[BaseMessage]) -> Any:
        start = max(i for i, m in enumerate(messages) if m.type == "human")
        if messages[start].text.startswith("/"):
            return f"followed {messages[start].text.split()[0]}"
        done = sum(1 for m in messages[start:] if m.type == "tool")
        if done < len(calls):
            name, args = calls[done]
            return {"tool_calls": [{"name": name, "args": args}]}
        return answer

    return respond
