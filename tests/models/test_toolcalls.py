"""The tool-call parser for the embedded model: pure functions, no model needed."""

from __future__ import annotations

import json
import random

import pytest

from herdsman.models.local.toolcalls import new_call_id, parse_tool_calls, repeated_call_start, streamable_prefix

TOOLS = {"read_file", "write_file", "get_weather"}


def _calls(text: str, tools=TOOLS):
    parsed = parse_tool_calls(text, tools)
    return parsed.content, [(c["name"], c["args"]) for c in parsed.tool_calls]


# --- tagged blocks ------------------------------------------------------------------------------


def test_single_tagged_call():
    content, calls = _calls('<tool_call>\n{"name": "read_file", "arguments": {"path": "/a.txt"}}\n</tool_call>')
    assert calls == [("read_file", {"path": "/a.txt"})]
    assert content == ""


def test_several_tagged_calls_keep_order():
    text = (
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "b", "content": "x"}}\n</tool_call>'
    )
    _, calls = _calls(text)
    assert calls == [("read_file", {"path": "a"}), ("write_file", {"path": "b", "content": "x"})]


def test_tagged_call_without_whitespace_and_with_surrounding_text():
    text = 'Let me look.<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call> Done soon.'
    content, calls = _calls(text)
    assert calls == [("get_weather", {"city": "Paris"})]
    assert content.startswith("Let me look.")
    assert "Done soon." in content
    assert "tool_call" not in content


def test_missing_closing_tag():
    content, calls = _calls('<tool_call>\n{"name": "read_file", "arguments": {"path": "x"}}')
    assert calls == [("read_file", {"path": "x"})]
    assert content == ""


def test_missing_closing_tag_between_two_calls():
    text = (
        '<tool_call>{"name": "read_file", "arguments": {"path": "1"}}\n'
        '<tool_call>{"name": "read_file", "arguments": {"path": "2"}}</tool_call>'
    )
    _, calls = _calls(text)
    assert calls == [("read_file", {"path": "1"}), ("read_file", {"path": "2"})]


def test_trailing_text_inside_tag_is_ignored():
    _, calls = _calls('<tool_call>{"name": "read_file", "arguments": {"path": "x"}} extra words</tool_call>')
    assert calls == [("read_file", {"path": "x"})]


def test_fenced_json_inside_tag():
    text = '<tool_call>\n```json\n{"name": "read_file", "arguments": {"path": "x"}}\n```\n</tool_call>'
    content, calls = _calls(text)
    assert calls == [("read_file", {"path": "x"})]
    assert content == ""


def test_list_of_calls_in_one_tag():
    text = (
        '<tool_call>[{"name": "read_file", "arguments": {"path": "a"}}, '
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}]</tool_call>'
    )
    _, calls = _calls(text)
    assert calls == [("read_file", {"path": "a"}), ("get_weather", {"city": "Oslo"})]


def test_missing_final_brace_is_repaired():
    content, calls = _calls('<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}\n</tool_call>')
    assert calls == [("read_file", {"path": "a"})]
    assert content == ""


def test_missing_two_braces_in_bare_json():
    _, calls = _calls('{"name": "write_file", "arguments": {"path": "a", "content": "x"')
    assert calls == [("write_file", {"path": "a", "content": "x"})]


# --- argument spellings ---------------------------------------------------------------------------


def test_parameters_instead_of_arguments():
    _, calls = _calls('<tool_call>{"name": "read_file", "parameters": {"path": "p"}}</tool_call>')
    assert calls == [("read_file", {"path": "p"})]


def test_arguments_as_json_string():
    args = json.dumps({"path": "/x", "content": 'say "hi"'})
    _, calls = _calls(json.dumps({"name": "write_file", "arguments": args}))
    assert calls == [("write_file", {"path": "/x", "content": 'say "hi"'})]


def test_missing_arguments_mean_no_arguments():
    _, calls = _calls('<tool_call>{"name": "get_weather"}</tool_call>')
    assert calls == [("get_weather", {})]


def test_empty_string_arguments_mean_no_arguments():
    _, calls = _calls('{"name": "get_weather", "arguments": ""}')
    assert calls == [("get_weather", {})]


def test_openai_function_shape():
    text = '{"type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": \\"q\\"}"}}'
    _, calls = _calls(text)
    assert calls == [("read_file", {"path": "q"})]


def test_functions_prefix_on_name():
    _, calls = _calls('<tool_call>{"name": "functions.read_file", "arguments": {"path": "x"}}</tool_call>')
    assert calls == [("read_file", {"path": "x"})]


def test_unicode_arguments_survive():
    text = '<tool_call>{"name": "write_file", "arguments": {"path": "é.txt", "content": "日本"}}</tool_call>'
    _, calls = _calls(text)
    assert calls == [("write_file", {"path": "é.txt", "content": "日本"})]


# --- bare and fenced JSON -------------------------------------------------------------------------


def test_bare_json():
    content, calls = _calls('  {"name": "get_weather", "arguments": {"city": "Rome"}}  ')
    assert calls == [("get_weather", {"city": "Rome"})]
    assert content == ""


def test_bare_json_with_trailing_text():
    content, calls = _calls('{"name": "get_weather", "arguments": {"city": "Rome"}}\nI will report back.')
    assert calls == [("get_weather", {"city": "Rome"})]
    assert content == "I will report back."


def test_several_bare_objects():
    text = '{"name": "read_file", "arguments": {"path": "a"}}\n{"name": "read_file", "arguments": {"path": "b"}}'
    _, calls = _calls(text)
    assert calls == [("read_file", {"path": "a"}), ("read_file", {"path": "b"})]


def test_bare_list_of_calls():
    _, calls = _calls('[{"name": "read_file", "arguments": {"path": "a"}}]')
    assert calls == [("read_file", {"path": "a"})]


def test_fenced_json_call():
    content, calls = _calls('```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```')
    assert calls == [("read_file", {"path": "a"})]
    assert content == ""


def test_fenced_call_after_prose():
    content, calls = _calls('I will read it:\n```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```\n')
    assert calls == [("read_file", {"path": "a"})]
    assert content == "I will read it:"


def test_fence_without_language_and_unclosed():
    _, calls = _calls('```\n{"name": "read_file", "arguments": {"path": "a"}}')
    assert calls == [("read_file", {"path": "a"})]


# --- what stays content ---------------------------------------------------------------------------


def test_plain_text_is_content():
    content, calls = _calls("  The answer is 42.\n")
    assert calls == []
    assert content == "The answer is 42."


def test_unknown_tool_name_stays_content():
    text = '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>'
    content, calls = _calls(text)
    assert calls == []
    assert content == text


def test_unknown_name_among_known_keeps_the_known_call():
    text = (
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
    )
    content, calls = _calls(text)
    assert calls == [("read_file", {"path": "a"})]
    assert "rm_rf" in content


def test_no_tools_bound_means_no_calls():
    text = '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
    content, calls = _calls(text, tools=set())
    assert calls == []
    assert content == text


def test_invalid_json_stays_content():
    text = '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>'
    content, calls = _calls(text)
    assert calls == []
    assert content == text


def test_arguments_that_are_not_an_object_stay_content():
    content, calls = _calls('{"name": "read_file", "arguments": "not json"}')
    assert calls == []
    assert content.startswith("{")


def test_json_answer_that_is_not_a_call_stays_content():
    text = '{"city": "Rome", "temperature": 21}'
    content, calls = _calls(text)
    assert calls == []
    assert content == text


def test_python_code_fence_stays_content():
    text = "Here:\n```python\nprint({'name': 'read_file'})\n```"
    content, calls = _calls(text)
    assert calls == []
    assert content == text


def test_json_mentioned_mid_text_is_not_a_call():
    text = 'Call it like {"name": "read_file", "arguments": {"path": "a"}} when needed.'
    content, calls = _calls(text)
    assert calls == []
    assert content == text


def test_empty_text():
    assert parse_tool_calls("", TOOLS).content == ""


# --- ids ------------------------------------------------------------------------------------------


def test_ids_are_unique_and_openai_shaped():
    one = '<tool_call>{"name": "read_file", "arguments": {}}</tool_call>'
    parsed = parse_tool_calls(one + one, TOOLS)
    ids = [c["id"] for c in parsed.tool_calls]
    assert len(set(ids)) == 2
    assert all(i.startswith("call_") and len(i) == 29 for i in ids)
    assert all(c["type"] == "tool_call" for c in parsed.tool_calls)
    assert new_call_id() != new_call_id()


# --- streaming: what may be passed on early -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello world", 11),
        ("Hello world  \n", 11),
        ("   ", 0),
        ('{"name"', 0),
        ("  [", 0),
        ("<", 0),
        ("<tool", 0),
        ("<tool_call>", 0),
        ("Sure. <tool_call>{", 5),
        ("Sure. <tool", 5),
        ("a < b", 5),
        ("a <", 1),
        ("Look: `", 5),
        ("Look: ``", 5),
        ("Look: ```json\n{", 5),
        ("x ```python\nprint(1)\n``` y", 26),
        ('x ```json\n{"name": "read_file", "arguments": {}}\n``` y', 1),
        ('x ```json\n{"a": 1}\n``` y', 24),
        ("Let me check.\n<tool_call>", 13),
        ("Hi \n\n```", 2),
    ],
)
def test_streamable_prefix(text, expected):
    assert streamable_prefix(text, TOOLS) == expected


def test_streamable_prefix_without_tools_streams_everything():
    assert streamable_prefix("<tool_call>{", set()) == len("<tool_call>{")


REPLIES = [
    "The weather in Paris is sunny.",
    '  Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    '{"name": "read_file", "arguments": {"path": "a"}}',
    "Here is code:\n```python\nx = {'a': 1}\n```\nand text after < and ` marks.",
    'Reading:\n```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```\nthen more',
    'a <tool_c> b <tool_call>{"name": "nope", "arguments": {}}</tool_call> end',
    "Plain with trailing spaces   \n\n",
]


@pytest.mark.parametrize("reply", REPLIES)
def test_streamed_prefix_is_always_a_prefix_of_the_parsed_content(reply):
    """Simulate a stream in random pieces: what goes out early is never taken back."""
    rng = random.Random(reply)
    for _ in range(20):
        text, sent, lead, out = "", None, 0, ""
        pos = 0
        while pos < len(reply):
            step = rng.randint(1, 6)
            text += reply[pos : pos + step]
            pos += step
            safe = streamable_prefix(text, TOOLS)
            if safe <= 0:
                continue
            if sent is None:
                sent = lead = len(text) - len(text.lstrip())
            assert safe >= sent, "the streamable prefix moved backwards"
            out += text[sent:safe]
            sent = safe
        final = parse_tool_calls(reply, TOOLS).content
        assert final.startswith(out)
        assert out == reply[lead : sent or 0] if sent is not None else out == ""


# --- JSON that almost parses (mended by json-repair) -----------------------------------------------


def test_invalid_escape_in_a_fenced_call_from_a_real_transcript():
    """The 1.5B model wrote this; the invalid \\. escape made the whole call unreadable."""
    text = (
        "```json\n"
        '{"name": "bash", "arguments": {"command": "cd /mnt/user-data/workspace && '
        "rename 's/\\.txt$/.md/' *.txt\"}}\n```"
    )
    content, calls = _calls(text, tools={"bash"})
    assert calls == [("bash", {"command": "cd /mnt/user-data/workspace && rename 's/\\.txt$/.md/' *.txt"})]
    assert content == ""


def test_single_quotes_and_python_literals_in_a_tagged_call():
    text = "<tool_call>{'name': 'write_file', 'arguments': {'path': 'a.json', 'content': 'x', 'append': False}}</tool_call>"
    assert _calls(text)[1] == [("write_file", {"path": "a.json", "content": "x", "append": False})]


def test_repaired_json_that_is_not_a_call_stays_content():
    text = "{'city': 'Rome', 'temperature': 21"
    content, calls = _calls(text)
    assert calls == [] and content == text


def test_a_reply_cut_off_inside_a_value_is_not_a_call():
    for text in (
        '<tool_call>{"name": "write_file", "arguments": {"path": "a.py", "content": "def f():\\n    ret',
        '```json\n{"name": "write_file", "arguments": {"path": "a.py", "content": "x = {}',
    ):
        assert _calls(text)[1] == [], text


def test_xml_style_calls_from_a_transcript_are_calls() -> None:
    """Seen from Qwen2.5-Coder-1.5B on the rename task: the call as an XML element, with quotes
    inside the value left unescaped. A reply of nothing but such elements is a call."""
    reply = '<tools>\n  <bash command="for f in /mnt/user-data/workspace/notes/*.txt; do mv "$f" "${f%.txt}.md"; done"/>\n</tools>'
    parsed = parse_tool_calls(reply, ["bash", "write_file"])
    assert parsed.content == ""
    assert [(c["name"], c["args"]) for c in parsed.tool_calls] == [
        ("bash", {"command": 'for f in /mnt/user-data/workspace/notes/*.txt; do mv "$f" "${f%.txt}.md"; done'})
    ]
    two = parse_tool_calls(
        '<write_file path="a.txt" content="x &amp; y"/>\n<bash command="cat a.txt"></bash>', ["bash", "write_file"]
    )
    assert [c["args"] for c in two.tool_calls] == [{"path": "a.txt", "content": "x & y"}, {"command": "cat a.txt"}]


def test_xml_that_is_not_only_calls_stays_text() -> None:
    for text in (
        'Use <b x="1"/> here',
        "<html><body/></html>",
        '<bash command="ls"/> and then I will answer',
        '<rm path="x"/>',
    ):
        parsed = parse_tool_calls(text, ["bash", "b"])
        assert parsed.tool_calls == [] and parsed.content == text.strip(), text
    assert parse_tool_calls('<bash command="ls"/>', ["bash"], repair=False).tool_calls == []
    assert streamable_prefix('<bash command="ls', ["bash"]) == 0


def test_a_function_element_with_json_arguments_is_a_call() -> None:
    """From the benchmark (the bar chart task), twice in one run, with a stray brace or paren."""
    for reply in (
        '<tools>\n<function name="bash" arguments={"command": "pip3 install matplotlib"})\n</tools>',
        '<tools>\n<function name="bash" arguments={"command": "ls -la"}}\n</tools>',
        '<function name="bash" arguments={"command": "ls -la"}></function>',
    ):
        [call] = parse_tool_calls(reply, {"bash": "command"}).tool_calls
        assert call["name"] == "bash" and set(call["args"]) == {"command"}, reply
    for text in (
        '<function name="bash" arguments={"command": "ls"}} and then I will explain',
        '<function name="rm" arguments={"path": "x"}}',
        '<function name="bash" description="Run a bash command">',  # the tools list echoed back
    ):
        assert parse_tool_calls(text, {"bash": "command"}).tool_calls == [], text


def test_unescaped_quotes_in_a_value_are_read_by_the_argument_names() -> None:
    """From the benchmark (two sums by sub-agents): the task's description quoted the JSON it
    wanted, quotes unescaped, so the call did not parse and json-repair mangled it."""
    reply = (
        '<tool_call>\n{"name": "task", "arguments": {"description": "Sum a.txt; save as {"a": <sum>, "b": <sum>}.", '
        '"prompt": "Sum the numbers in a.txt.\\nSave as {"a": <sum>}.", "subagent_type": "general-purpose"}}'
    )
    params = {"task": ["description", "prompt", "subagent_type"], "write_file": ["path", "content", "append"]}
    [call] = parse_tool_calls(reply, {"task": None, "write_file": None}, params=params).tool_calls
    assert call["args"] == {
        "description": 'Sum a.txt; save as {"a": <sum>, "b": <sum>}.',
        "prompt": 'Sum the numbers in a.txt.\nSave as {"a": <sum>}.',
        "subagent_type": "general-purpose",
    }
    written = '<tool_call>{"name": "write_file", "arguments": {"path": "a.json", "content": "{"x": 1}", "append": false}}</tool_call>'
    [call] = parse_tool_calls(written, {"write_file": None}, params=params).tool_calls
    assert call["args"] == {"path": "a.json", "content": '{"x": 1}', "append": False}
    cut = '<tool_call>{"name": "task", "arguments": {"description": "a "b" c", "prompt": "x'  # cut off: no call
    assert parse_tool_calls(cut, {"task": None}, params=params).tool_calls == []
    assert parse_tool_calls(reply, {"task": None}).tool_calls == []  # without the names: no guess


def test_a_value_in_single_quotes_and_a_wrong_closing_tag_still_make_the_call() -> None:
    """From the benchmark (two sums by sub-agents): the sub-agent and then the lead wrote the file's
    JSON content in single quotes and closed the block with </tool_response>; the call was shown
    as text twice and the file never written."""
    reply = (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "/mnt/user-data/outputs/sums.json", '
        '"content": \'{"a": 296, "b": 603}\'}}\n</tool_response>'
    )
    params = {"write_file": ["path", "content", "append"]}
    parsed = parse_tool_calls(reply, {"write_file": None, "bash": "command"}, params=params)
    assert [c["args"] for c in parsed.tool_calls] == [
        {"path": "/mnt/user-data/outputs/sums.json", "content": '{"a": 296, "b": 603}'}
    ]
    assert parsed.content == ""
    stray = (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "/mnt/user-data/outputs/by_region.json", '
        '"content": \'{"north": 1427.25, "west": 2099.68}\'}"}}'
    )  # from the benchmark: }" after the value
    [call] = parse_tool_calls(stray, {"write_file": None}, params=params).tool_calls
    assert call["args"]["content"] == '{"north": 1427.25, "west": 2099.68}'
    mixed = '<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": \'it\'s "x"\'}}'
    [call] = parse_tool_calls(mixed, {"write_file": None}, params=params).tool_calls
    assert call["args"]["content"] == 'it\'s "x"'


def test_arguments_written_beside_the_name_are_the_arguments() -> None:
    """Arguments written beside the name instead of under "arguments" are the arguments. (Made
    when the benchmark's task calls arrived with no arguments, three times in a row; the raw
    text was not kept, so that this was the cause is not confirmed: a forced call that ended
    right after its prefill was, and is fixed in the prefill.)"""
    reply = '<tool_call>\n{"name": "task", "description": "Sort names", "prompt": "Sort team.txt", "subagent_type": "bash"}\n</tool_call>'
    [call] = parse_tool_calls(reply, ["task"]).tool_calls
    assert call["args"] == {"description": "Sort names", "prompt": "Sort team.txt", "subagent_type": "bash"}
    [bare] = parse_tool_calls('<tool_call>{"name": "ls"}</tool_call>', ["ls"]).tool_calls
    assert bare["args"] == {}


def test_an_unknown_name_with_one_tools_only_argument_is_that_tool() -> None:
    """From the benchmark: the model named the interpreter instead of the tool. Arguments that
    are exactly the one required argument of one bound tool say which tool; anything else, or
    two tools with the same argument, stays text."""
    names = {"bash": "command", "read_file": "path", "glob": "pattern", "grep": "pattern", "write_file": None}
    reply = '<tool_call>\n{"name": "python3", "arguments": {"command": "python3 -c \\"print(1)\\""}}'
    assert [(c["name"], c["args"]) for c in parse_tool_calls(reply, names).tool_calls] == [
        ("bash", {"command": 'python3 -c "print(1)"'})
    ]
    for text in (
        '<tool_call>{"name": "find", "arguments": {"pattern": "*.py"}}</tool_call>',  # glob or grep
        '<tool_call>{"name": "copy", "arguments": {"source": "a", "destination": "b"}}</tool_call>',
        '<tool_call>{"name": "python3", "arguments": {"command": "ls", "cwd": "/"}}</tool_call>',
    ):
        assert parse_tool_calls(text, names).tool_calls == [], text
    assert parse_tool_calls(reply, ["bash"]).tool_calls == []  # names only: no guess


def test_xml_element_text_is_the_only_required_argument() -> None:
    """From the benchmark (create a file with three lines): the command as the element's text,
    indented, with \\n escapes meant for Python. Child elements name the arguments; a tool with
    several arguments gets no guess from bare text."""
    reply = (
        "<tools>\n  <bash>\n    python3 -c \"with open('/mnt/user-data/workspace/todo.txt', 'w') as f: "
        "f.write('buy milk\\ncall mom\\n')\"\n  </bash>\n</tools>"
    )
    names = {"bash": "command", "write_file": None}
    parsed = parse_tool_calls(reply, names)
    assert parsed.content == ""
    assert [(c["name"], c["args"]) for c in parsed.tool_calls] == [
        (
            "bash",
            {
                "command": "python3 -c \"with open('/mnt/user-data/workspace/todo.txt', 'w') as f: f.write('buy milk\\ncall mom\\n')\""
            },
        )
    ]
    children = parse_tool_calls(
        "<write_file>\n  <path>a.txt</path>\n  <content>x &lt; y</content>\n</write_file>", names
    )
    assert [c["args"] for c in children.tool_calls] == [{"path": "a.txt", "content": "x < y"}]
    for text in (
        "<write_file>notes</write_file>",
        "<bash>ls</bash> then I answer",
        "<bash>ls",
        '<bash command="x">ls</bash>',
    ):
        assert parse_tool_calls(text, names).tool_calls == [], text
    assert parse_tool_calls("<bash>ls</bash>", ["bash"]).tool_calls == []  # names only: no guess


def test_a_bare_string_is_the_only_required_argument() -> None:
    """From a transcript: '"arguments": "python3 -c ..."' for bash, whose one required argument
    is command; a tool with several arguments gets no such guess."""
    reply = '<tool_call>\n{"name": "bash", "arguments": "python3 -c \\"print(1)\\""}\n</tool_call>'
    parsed = parse_tool_calls(reply, {"bash": "command", "write_file": None})
    assert [(c["name"], c["args"]) for c in parsed.tool_calls] == [("bash", {"command": 'python3 -c "print(1)"'})]
    other = '<tool_call>{"name": "write_file", "arguments": "notes.txt"}</tool_call>'
    assert parse_tool_calls(other, {"bash": "command", "write_file": None}).tool_calls == []
    assert parse_tool_calls(reply, ["bash"]).tool_calls == []  # names only: no guess


@pytest.mark.parametrize(
    "cut",
    [
        '<tool_call>\n{"name": "add", "arguments": {"a": 1',
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}',
        '{"name": "add", "arguments": {"a": 1, "b": 2}',
        '```json\n{"name": "add", "arguments": {"a": 1}',
    ],
)
def test_under_the_grammar_a_call_cut_off_by_max_tokens_is_text_not_a_half_call(cut):
    """The grammar closes every call it starts, so an open one was cut off: it must not run with
    the arguments written so far (``a=1`` of a sum the model meant as ``a=12, b=30``)."""
    names = {"add": None}
    reply = parse_tool_calls(cut, names, strict=True)
    assert reply.tool_calls == [] and reply.content == cut.strip()
    whole = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
    reply = parse_tool_calls(whole + cut, names, strict=True)
    assert [c["args"] for c in reply.tool_calls] == [{"a": 1, "b": 2}] and reply.content == cut.strip()


def test_a_call_written_again_with_other_spaces_or_a_comment_is_a_repeat_in_one_reply() -> None:
    def call(command: str) -> str:
        return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "\n</tool_call>\n"

    first = call("grep -c ERROR app.log")
    again = first + call("grep  -c ERROR app.log   # count the errors")
    assert repeated_call_start(again) == len(first)
    other = first + call("grep -c WARN app.log") + call("grep -c '# ERROR' app.log")
    assert repeated_call_start(other) is None
