"""What a finished run's values say about its outcome: failed, stopped by a limit, a deliverable missing."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from herdsman.middleware.step_limit import stop_message
from herdsman.runtime.runs.run_outcome import run_outcome
from herdsman.turns.turn import stopped_reply


def test_a_run_with_an_answer_and_nothing_left_is_done() -> None:
    assert run_outcome({"messages": [HumanMessage("hi"), AIMessage("Hello!")], "completion_unresolved": []}).ok


def test_a_run_stopped_by_its_step_limit_is_not_done() -> None:
    values = {"messages": [HumanMessage("go"), stopped_reply(stop_message(3), "max_steps")]}
    outcome = run_outcome(values)
    assert not outcome.ok and "max_steps" in outcome.problems[0]


def test_only_a_missing_deliverable_or_failed_work_is_a_problem_among_the_findings_left() -> None:
    left = [
        {"rule": "number.unsupported", "evidence": {"numbers": ["7"]}},
        {"rule": "path.missing", "evidence": {"path": "/mnt/user-data/outputs/a.png"}, "text": "Create it."},
    ]
    outcome = run_outcome({"messages": [AIMessage("Done.")], "completion_unresolved": left})
    assert len(outcome.problems) == 1 and "/mnt/user-data/outputs/a.png" in outcome.problems[0]


def test_a_command_that_failed_and_was_not_run_again_fails_the_run() -> None:
    """The README's example: the script imported a package that is not installed, its run failed,
    the model said it was done and the check's rounds ran out: not done (herdsman run exits 1)."""
    from herdsman.middleware.completion.findings import RULES
    from herdsman.runtime.runs.run_outcome import WORK_FAILED

    assert WORK_FAILED <= set(RULES)
    left = [
        {
            "rule": "command.failed_not_retried",
            "evidence": {"tool": "bash"},
            "text": "The last command failed: ModuleNotFoundError: No module named 'sympy'.",
        }
    ]
    outcome = run_outcome(
        {"messages": [HumanMessage("write primes.py and run it"), AIMessage("Done.")], "completion_unresolved": left}
    )
    assert (
        len(outcome.problems) == 1 and "last tool call failed" in outcome.problems[0] and "sympy" in outcome.problems[0]
    )
    broken = run_outcome(
        {"messages": [AIMessage("Done.")], "completion_unresolved": [{"rule": "script.does_not_parse"}]}
    )
    assert broken.problems == [
        "a Python or JSON file the run wrote does not parse (compiled, never run) (script.does_not_parse)"
    ]


def test_a_note_the_model_ignored_counts_as_left_but_an_explanation_or_a_new_run_does_not() -> None:
    """A rule that speaks once stays quiet after its note, so nothing is left when the rounds end:
    a final reply that only says again what the note was sent back for (nothing ran since) leaves
    the note's findings unresolved; a reply that explains, or a command run after the note, does not."""
    from langchain_core.messages import ToolMessage

    from herdsman.middleware.completion.findings import FINDINGS_KEY
    from herdsman.turns.turn import HARNESS_NAME

    found = {"rule": "command.failed_not_retried", "evidence": {"tool": "bash"}, "text": "No module named 'x'."}
    note = HumanMessage("[harness check] Not done yet", name=HARNESS_NAME, additional_kwargs={FINDINGS_KEY: [found]})
    run = [
        HumanMessage("write primes.py and run it"),
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 primes.py"}, "id": "c1"}]),
        ToolMessage("ModuleNotFoundError: No module named 'x'\n[exit code 1]", tool_call_id="c1", name="bash"),
        AIMessage("Here are the primes: 2, 3, 5."),
        note,
    ]
    ignored = run_outcome({"messages": [*run, AIMessage("Here are  the primes: 2, 3, 5.\n")]})
    assert (
        not ignored.ok and "last tool call failed" in ignored.problems[0] and "No module named" in ignored.problems[0]
    )
    assert run_outcome({"messages": [*run, AIMessage("It failed: the package x is not installed here.")]}).ok
    again = [
        AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "python3 primes2.py"}, "id": "c2"}]),
        ToolMessage("2 3 5", tool_call_id="c2", name="bash"),
        AIMessage("Here are the primes: 2, 3, 5."),
    ]
    assert run_outcome({"messages": [*run, *again]}).ok


def test_the_problems_are_in_the_language_of_the_request() -> None:
    """A Chinese request reads the heading and each line in Chinese; the English note written for
    the model is left out, the finding's evidence (the path, the command's error) is kept."""
    left = [
        {"rule": "path.missing", "evidence": {"path": "/mnt/user-data/outputs/a.png"}, "text": "Create it."},
        {
            "rule": "command.failed_not_retried",
            "evidence": {"tool": "bash", "detail": "No module named 'sympy'"},
            "text": "The last command failed: ModuleNotFoundError.",
        },
    ]
    outcome = run_outcome(
        {"messages": [HumanMessage("画一张图保存到 outputs/a.png"), AIMessage("好了。")], "completion_unresolved": left}
    )
    assert outcome.language == "zh" and outcome.heading == "未完成："
    assert outcome.problems == [
        "要求的 /mnt/user-data/outputs/a.png 没有交付（path.missing）",
        "最后一个工具调用失败了（command.failed_not_retried）：No module named 'sympy'",
    ]
    english = run_outcome({"messages": [HumanMessage("draw it"), AIMessage("Done.")], "completion_unresolved": left})
    assert english.heading == "Not done:" and english.problems[0].endswith("(path.missing): Create it.")
