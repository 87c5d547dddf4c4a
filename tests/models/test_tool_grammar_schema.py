"""The JSON schema a constrained tool call must follow (no model needed)."""

from __future__ import annotations

import json

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'herdsman[local]')")

from herdsman.models.local.grammar import call_schema, gbnf  # noqa: E402


class Step(BaseModel):
    """One step."""

    step: str
    path: str | None = None


class make_plan(BaseModel):  # noqa: N801 - a tool's name
    """Plan the work."""

    steps: list[Step]


def ls(path: str = "/mnt/user-data") -> str:
    """List a folder."""
    return path


def test_arguments_are_closed_and_nested_models_inlined():
    schema = call_schema([convert_to_openai_tool(make_plan), convert_to_openai_tool(ls)])
    plan, listing = schema["oneOf"]
    assert plan["properties"]["name"] == {"const": "make_plan"}
    item = plan["properties"]["arguments"]["properties"]["steps"]["items"]
    assert item["additionalProperties"] is False and set(item["properties"]) == {"step", "path"}
    assert "$ref" not in json.dumps(schema) and "$defs" not in json.dumps(schema)
    assert listing["properties"]["arguments"]["additionalProperties"] is False


def test_the_grammar_names_every_tool_and_allows_pretty_printed_json():
    text = gbnf([convert_to_openai_tool(make_plan), convert_to_openai_tool(ls)])
    assert '"\\"make_plan\\""' in text and '"\\"ls\\""' in text
    assert "space ::= [ \\t\\n\\r]{0,24}" in text
