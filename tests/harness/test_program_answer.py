"""A program answer: when the completion check finds that an answer's number is not backed, the
harness asks the model once, without the conversation, for a program that prints the answer (given
the question and how the named files begin), runs it as a bash call in the jail, and the model
answers from what it printed. Anything else is left to the model as before."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from herdsman.middleware.clean_page import program_of
from herdsman.middleware.completion.shown_code import RAN_SHOWN_CODE
from herdsman.middleware.program_answer import MAX_TOKENS, PROGRAM_KEY, VALUE_KEY
from herdsman.models.scripted import ScriptedChatModel
from tests.support import marked, page_run
from tests.support import tool_call as call

WS = "/mnt/user-data/workspace"
LOG = "".join(
    f'{ip} - - [12/Mar/2025:08:0{i}:00 +0000] "GET / HTTP/1.1" 200 {100 + i}\n'
    for i, ip in enumerate(["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.2", "10.0.0.4"])
)
QUESTION = f"How many distinct client IP addresses appear in {WS}/access.log?"
PROGRAM = (
    "Here it is:\n```python\n"
    f"print(len({{line.split()[0] for line in open('{WS}/access.log') if line.strip()}}))\n"
    "```\nIt prints the count."
)


FILES = {"access.log": LOG, "notes.txt": "nothing here\n"}


async def run(home: Path, thread: str, message: str, model: ScriptedChatModel, mode: str = "auto") -> list:
    return await page_run(
        home, thread, message, model, FILES, "program_answers", mode, value_answers="off", fresh_answers="off"
    )


def programs(messages: list) -> list[AIMessage]:
    return marked(messages, PROGRAM_KEY)


async def test_a_number_nothing_backs_is_computed_by_a_program_written_on_a_clean_page(home: Path) -> None:
    model = ScriptedChatModel(responses=[call("grep", pattern="client", path=f"{WS}/access.log"), "0", PROGRAM, "4"])
    messages = await run(home, "t-p1", QUESTION, model)
    assert messages[-1].text == "4"
    [ran] = programs(messages)
    assert ran.tool_calls[0]["name"] == "bash" and ran.additional_kwargs[RAN_SHOWN_CODE] in (
        "number.unsupported",
        "count.not_computed",
    )
    result = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == ran.tool_calls[0]["id"])
    assert result.text.strip() == "4"  # the program ran in the thread's jail and read the log
    page = model.calls[2]
    assert page.tools == [] and [type(m) for m in page.messages] == [SystemMessage, HumanMessage]
    assert page.kwargs["max_tokens"] == MAX_TOKENS
    brief = page.messages[-1].text
    assert QUESTION in brief and "10.0.0.1 - - [12/Mar/2025:08:00:00" in brief  # the question, the log's first lines
    assert "no matches" not in brief  # not the model's fruitless grep: it would count 'client' again
    assert len(model.calls) == 4


async def test_a_chinese_question_gets_its_program_too(home: Path) -> None:
    question = f"{WS}/access.log 中出现了多少个不同的客户端 IP 地址？"
    model = ScriptedChatModel(responses=[call("read_file", path=f"{WS}/access.log"), "有 6 个。", PROGRAM, "4 个。"])
    messages = await run(home, "t-p2", question, model)
    assert len(programs(messages)) == 1 and messages[-1].text == "4 个。"
    assert question in model.calls[2].messages[-1].text


async def test_a_reply_without_a_program_that_parses_leaves_the_model_to_answer(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            call("grep", pattern="client", path=f"{WS}/access.log"),
            "0",
            "```python\nprint(len(set(\n```",  # does not parse
            call("bash", command=f"cut -d' ' -f1 {WS}/access.log | sort -u | wc -l"),
            "4",
        ]
    )
    messages = await run(home, "t-p3", QUESTION, model)
    assert programs(messages) == [] and messages[-1].text == "4"
    assert model.calls[3].tools  # the model itself was asked, with its tools


async def test_an_answer_after_the_program_that_leaves_its_value_out_becomes_the_value(home: Path) -> None:
    model = ScriptedChatModel(
        responses=[call("grep", pattern="client", path=f"{WS}/access.log"), "0", PROGRAM, "There are 7."]
    )
    messages = await run(home, "t-p4", QUESTION, model)
    assert messages[-1].text == "4" and messages[-1].additional_kwargs[VALUE_KEY] == "There are 7."
    assert len(model.calls) == 4  # the check takes the computed value: no further round


async def test_a_name_nothing_backs_is_found_by_a_program_too(home: Path) -> None:
    planets = "name,au\nMercury,0.39\nEarth,1.0\nJupiter,5.2\nSaturn,9.54\n"
    question = f"Which planet in {WS}/planets.csv is farthest from the sun (largest au)? Reply with the name only."
    program = (
        "```python\nimport csv\n"
        f"rows = list(csv.DictReader(open('{WS}/planets.csv')))\n"
        "print(max(rows, key=lambda r: float(r['au']))['name'])\n```"
    )
    neptune = "The planet farthest from the sun is Neptune."  # what the model knew, not what the file says
    script = f"import csv\nprint(max(float(r['au']) for r in csv.DictReader(open('{WS}/planets.csv'))))"
    model = ScriptedChatModel(responses=[call("bash", command=f'python3 -c "{script}"'), neptune, program, neptune])
    files = {"planets.csv": planets}
    messages = await page_run(home, "t-p8", question, model, files, "program_answers", "auto", value_answers="off")
    [ran] = programs(messages)
    assert ran.additional_kwargs[RAN_SHOWN_CODE] == "name.unsupported"
    assert messages[-1].text == "Saturn" and messages[-1].additional_kwargs[VALUE_KEY] == neptune


async def test_an_answer_that_leaves_out_one_of_the_printed_values_becomes_the_values(home: Path) -> None:
    two = "```python\nprint(6)\nprint('10.0.0.1')\n```"
    question = f"How many lines does {WS}/access.log have, and which IP address shows up most in it?"
    model = ScriptedChatModel(responses=[call("read_file", path=f"{WS}/access.log"), "There are 9.", two, "10.0.0.1"])
    messages = await page_run(home, "t-p9", question, model, FILES, "program_answers", "auto", run_shown_code="off")
    assert messages[-1].text == "6\n10.0.0.1" and messages[-1].additional_kwargs[VALUE_KEY] == "10.0.0.1"


async def test_the_least_picked_by_eye_in_chinese_is_found_by_a_program(home: Path) -> None:
    stock = "name,qty\ntea,79\nrice,40\noil,1\nflour,12\n"
    question = f"{WS}/stock.csv 里库存（qty）最少的是哪个商品？只告诉我商品名。"
    program = f"```python\nimport csv\nrows = list(csv.DictReader(open('{WS}/stock.csv')))\nprint(min(rows, key=lambda r: int(r['qty']))['name'])\n```"
    model = ScriptedChatModel(responses=[call("read_file", path=f"{WS}/stock.csv"), "tea", program, "tea"])
    messages = await page_run(  # the harness's own table query off (test_shown_code): the model's program
        home, "t-p10", question, model, {"stock.csv": stock}, "program_answers", "auto", run_shown_code="off"
    )
    [ran] = programs(messages)
    assert ran.additional_kwargs[RAN_SHOWN_CODE] == "compare.not_made"
    assert messages[-1].text == "oil"


async def test_one_program_per_run_that_ran_and_off_means_none(home: Path) -> None:
    ran_fine = "```python\nfor i in range(5):\n    print(i)\n```"  # ran, but printed lines to read, no value
    count = call("bash", command=f"cut -d' ' -f1 {WS}/access.log | sort -u | wc -l")
    model = ScriptedChatModel(
        responses=[call("grep", pattern="client", path=f"{WS}/access.log"), "0", ran_fine, "7", count, "4"]
    )
    messages = await run(home, "t-p5", QUESTION, model)
    assert len(programs(messages)) == 1 and messages[-1].text == "4"
    assert model.calls[4].tools  # the second note went to the model, not to a second program

    model = ScriptedChatModel(responses=[call("grep", pattern="client", path=f"{WS}/access.log"), "0", count, "4"])
    messages = await run(home, "t-p6", QUESTION, model, mode="off")
    assert programs(messages) == [] and messages[-1].text == "4" and model.calls[2].tools


async def test_a_note_about_something_else_gets_no_program(home: Path) -> None:
    request = f"Save the distinct IP addresses of {WS}/access.log to /mnt/user-data/outputs/ips.txt."
    model = ScriptedChatModel(
        responses=[
            call("read_file", path=f"{WS}/access.log"),
            "Done.",
            call("write_file", path="/mnt/user-data/outputs/ips.txt", content="10.0.0.1\n"),
            "Saved.",
        ]
    )
    messages = await run(home, "t-p7", request, model)
    assert programs(messages) == []
    assert (home / "threads" / "t-p7" / "user-data" / "outputs" / "ips.txt").exists()


def test_the_program_is_the_first_python_block_that_parses_or_the_reply_itself() -> None:
    assert program_of(PROGRAM) == f"print(len({{line.split()[0] for line in open('{WS}/access.log') if line.strip()}}))"
    assert program_of("import os\nprint(os.getcwd())") == "import os\nprint(os.getcwd())"
    assert program_of("The answer is four.") is None
    assert program_of("```python\nprint('HERDSMAN_PROGRAM')\n```") is None  # would end the heredoc early
