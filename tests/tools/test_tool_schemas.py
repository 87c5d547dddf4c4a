"""herdsman.tool_schemas: a tool's argument schema is built once per function code, and is the
schema LangChain would have built."""

from __future__ import annotations

from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool

from herdsman.tool_schemas import structured_tool


def make_tool(suffix: str):
    """A closure, made again for each tool (as the sandbox and task tools are, per agent)."""

    def lookup(word: Annotated[str, "The word to look up."], limit: int = 3) -> str:
        return f"{word}{suffix}" * limit

    return lookup


def test_the_schema_is_langchains_and_is_built_once_per_code() -> None:
    first = structured_tool(name="lookup", description="Look a word up.", func=make_tool("!"))
    second = structured_tool(name="lookup", description="Look a word up.", func=make_tool("?"))
    plain = StructuredTool.from_function(func=make_tool("."), name="lookup", description="Look a word up.")

    assert first.tool_call_schema.model_json_schema() == plain.tool_call_schema.model_json_schema()
    assert second.args_schema is first.args_schema
    assert second.invoke({"word": "a", "limit": 2}) == "a?a?"  # each tool calls its own closure
    assert first.invoke({"word": "a"}) == "a!a!a!"


def test_another_name_gets_its_own_schema() -> None:
    one = structured_tool(name="lookup_one", description="One.", func=make_tool(""))
    other = structured_tool(name="lookup_other", description="Other.", func=make_tool(""))

    assert one.args_schema is not other.args_schema
    assert other.tool_call_schema.model_json_schema()["title"] == "lookup_other"


def test_annotations_become_types_once_and_the_config_is_still_passed() -> None:
    def probe(word: str, config: RunnableConfig) -> str:
        return f"{word} for {config['configurable']['who']}"

    assert isinstance(probe.__annotations__["config"], str)  # this module's annotations are strings
    tool = structured_tool(name="probe", description="Probe.", func=probe)

    assert probe.__annotations__["config"] is RunnableConfig  # LangChain no longer parses them at each call
    assert "config" not in tool.tool_call_schema.model_json_schema()["properties"]
    assert tool.invoke({"word": "a"}, {"configurable": {"who": "me"}}) == "a for me"
