"""Ask the memory model what a conversation taught about the user; read its JSON reply safely.

The model sees the user's current facts (with ids) and the new turns, and answers with JSON:
``{"summary": "...", "facts": [{"content", "category", "confidence", "quote"}], "forget": ["<id>"],
"entities": [...], "relations": [...]}`` (the graph part's schema is
:mod:`herdsman.memory.graph_schema`). It is asked as the forced call of one tool,
:data:`REPLY_TOOL`, whose JSON schema (:class:`Reply`) requires each fact's ``quote``: the user's
own words that say it, which :mod:`herdsman.memory.support` checks (the embedded model decodes
the call under a grammar of that schema, so the field is always there); a model that cannot
call tools answers the same JSON as text.
A reply that is not such JSON raises :class:`MemoryModelError` (the update is retried later,
then dropped); candidate facts that are vague, low-confidence, log-like or one-off
(:mod:`herdsman.memory.worth`: the prompt asks, the filter makes sure) are filtered out, and a
duplicate of a known fact in other words (:mod:`herdsman.memory.duplicates`) refreshes that fact.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

import json_repair
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from herdsman.logs import get_logger
from herdsman.memory.duplicates import same_fact
from herdsman.memory.facts import CATEGORIES, Fact, normalize
from herdsman.memory.graph_schema import (
    KINDS,
    PROMPT_PART,
    EndedRelation,
    ExtractedEntity,
    ExtractedRelation,
    parse_items,
)
from herdsman.memory.worth import refusal

log = get_logger(__name__)

MAX_TURN_CHARS = 4_000
MAX_PROMPT_MESSAGES = 40
MIN_FACT_CHARS = 8
MAX_FACT_CHARS = 500

PROMPT = """\
You keep the long-term memory of an assistant about one user. Read the new conversation and
update what is worth remembering across conversations. Keep only what will still be true and
useful in a later conversation:
- preferences and how the user likes things done ("prefers tabs", "wants short answers");
- who the user is (name, role, employer, city, languages);
- facts about their projects (language, hosting, repositories, services, schedules);
- decisions they made ("moved to GCP", "chose pnpm").
Store only what the user said, never what you guess from it: "my project deploys to GCP" says
where the project deploys, not who the user works for; a school, a commute or a child's age says
nothing of the user's city or age. Each fact carries "quote": the user's own words that say it,
copied exactly from a user message (join two places with " … "). No quote, no fact. Write the
fact in the language of the quote, about "the user" ("the user lives in Lyon", "用户住在上海").
Never store: what was run or when ("ran ls at 10:32"), how one task ended ("the build passed",
"tests failed"), greetings and thanks, file listings or command output, errors seen once,
one-off requests ("asked to rename a file"), or anything true only today. Skip what is already
known.

Current summary of the user's context:
{summary}

Current facts (id: [category] content):
{facts}

New conversation:
{conversation}

{graph}

Answer with JSON only, no prose, in this form:
{{"summary": "<the updated context summary, at most 3 sentences>",
  "facts": [{{"quote": "<the user's words that say it, copied>", "content": "<one self-contained fact>",
             "category": "<one of {categories}>", "confidence": <0 to 1>}}],
  "forget": ["<id of a current fact that is now wrong>"],
  "entities": [...], "relations": [...], "ended": [...]}}
Use an empty list when there is nothing new."""


class ReplyFact(BaseModel):
    """One fact of the memory model's reply, with the user's words that say it. The quote comes
    first: a model decoding under this schema copies the user's words, then states the fact."""

    quote: str = Field(description="The user's own words that say this fact, copied exactly from a user message.")
    content: str = Field(description="One self-contained fact about the user, in the language of the quote.")
    category: Literal[CATEGORIES] = "other"  # type: ignore[valid-type]  # a Literal of a tuple built at import: valid at run time, mypy wants literals
    confidence: float = Field(0.8, ge=0, le=1)


class ReplyEntity(BaseModel):
    """An entity of the reply (the graph part, see :mod:`herdsman.memory.graph_schema`)."""

    name: str
    kind: Literal[KINDS] = "other"  # type: ignore[valid-type]  # a Literal of a tuple built at import: valid at run time, mypy wants literals
    aliases: list[str] = Field(default_factory=list)


class ReplyRelation(BaseModel):
    """A relation of the reply: ``subject predicate object``."""

    subject: str
    predicate: str
    object: str
    valid_from: str | None = None
    confidence: float = Field(0.8, ge=0, le=1)


class ReplyEnded(ReplyRelation):
    """A relation that stopped being true (or was wrong), until ``valid_to``."""

    valid_to: str | None = None


class Reply(BaseModel):
    """What the memory model answers: the JSON schema of :data:`REPLY_TOOL`'s arguments."""

    summary: str = Field(description="The updated context summary, at most 3 sentences.")
    facts: list[ReplyFact] = Field(description="What the user said that is worth remembering; empty when nothing.")
    forget: list[str] = Field(default_factory=list, description="Ids of current facts that are now wrong.")
    entities: list[ReplyEntity] = Field(default_factory=list)
    relations: list[ReplyRelation] = Field(default_factory=list)
    ended: list[ReplyEnded] = Field(default_factory=list)


REPLY_TOOL_NAME = "update_memory"
REPLY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": REPLY_TOOL_NAME,
        "description": "Write what the conversation taught about the user.",
        "parameters": Reply.model_json_schema(),
    },
}


def structured(model: BaseChatModel) -> Any:
    """``model`` held to :data:`REPLY_TOOL` (a forced call), or ``model`` itself when it cannot
    bind tools (it then answers the JSON as text)."""
    try:
        return model.bind_tools([REPLY_TOOL], tool_choice=REPLY_TOOL_NAME)
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return model


def reply_text(message: BaseMessage) -> str:
    """The reply as JSON text: the arguments of the :data:`REPLY_TOOL` call, else the message's text."""
    call = next((c for c in getattr(message, "tool_calls", None) or [] if c["name"] == REPLY_TOOL_NAME), None)
    return json.dumps(call["args"], ensure_ascii=False) if call is not None else message.text


class MemoryModelError(ValueError):
    """The memory model's reply is not the JSON asked for."""


@dataclass
class MemoryUpdate:
    """What the memory model decided: new facts, facts to forget, an updated summary."""

    facts: list[Fact] = field(default_factory=list)
    forget: list[str] = field(default_factory=list)
    summary: str | None = None
    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)
    ended: list[EndedRelation] = field(default_factory=list)
    quotes: dict[str, str] = field(default_factory=dict)
    """The user's words the model quoted for each fact, by fact id ('' or absent: none)."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def build_prompt(summary: str, facts: list[Fact], conversation: list[dict[str, Any]]) -> str:
    """The memory model's prompt for ``conversation`` (a list of ``{role, content}``)."""
    listed = "\n".join(f"{f.id}: [{f.category}] {f.content}" for f in facts) or "(none)"
    turns = "\n".join(
        f"{m.get('role', 'user')}: {_clip(str(m.get('content', '')), MAX_TURN_CHARS)}"
        for m in conversation[-MAX_PROMPT_MESSAGES:]
    )
    return PROMPT.format(
        summary=summary or "(none)",
        facts=listed,
        conversation=turns,
        categories=", ".join(CATEGORIES),
        graph=PROMPT_PART,
    )


def _json_object(text: str) -> dict[str, Any]:
    text = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        raise MemoryModelError(f"the memory model did not answer with a JSON object: {_clip(text, 200)!r}")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        # a small model's JSON often lacks a comma or a closing quote: json-repair mends what it can
        data = json_repair.loads(text[start : end + 1])
        if not isinstance(data, dict) or not data:
            raise MemoryModelError(f"the memory model's JSON is invalid ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise MemoryModelError("the memory model's JSON is not an object")
    return data


def parse_reply(text: str, source_thread: str | None = None) -> MemoryUpdate:
    """The update in the model's reply; raises MemoryModelError when it is not usable JSON."""
    data = _json_object(text)
    raw_facts = data.get("facts") or []
    if not isinstance(raw_facts, list):
        raise MemoryModelError("'facts' in the memory model's JSON is not a list")
    facts: list[Fact] = []
    quotes: dict[str, str] = {}
    for item in raw_facts:
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            continue
        try:
            confidence = float(item.get("confidence", 0.8))
        except (TypeError, ValueError):
            confidence = 0.5
        fact = Fact.new(item["content"], str(item.get("category", "other")), confidence, source_thread)
        facts.append(fact)
        quote = item.get("quote")
        if isinstance(quote, str) and quote.strip():
            quotes[fact.id] = " ".join(quote.split())
    forget = [str(x) for x in data.get("forget") or [] if isinstance(x, (str, int))]
    summary = data.get("summary")
    return MemoryUpdate(
        facts,
        forget,
        summary.strip() if isinstance(summary, str) and summary.strip() else None,
        parse_items(ExtractedEntity, data.get("entities")),
        parse_items(ExtractedRelation, data.get("relations")),
        parse_items(EndedRelation, data.get("ended")),
        quotes,
    )


def _width(text: str) -> int:
    """How wide ``text`` is: a wide character (Chinese, Japanese, Korean) counts as two, as a
    terminal shows it, so "用户叫李娜" is as long as an eight-letter fact."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def filter_facts(candidates: list[Fact], existing: list[Fact], min_confidence: float) -> list[Fact]:
    """Drop low-value candidates (unsure, too short or long, log-like or one-off) and duplicates.

    A candidate that says what an existing fact says takes that fact's id, so it refreshes it.
    """
    kept: list[Fact] = []
    for fact in candidates:
        if fact.confidence < min_confidence or not (MIN_FACT_CHARS <= _width(fact.content) <= MAX_FACT_CHARS):
            continue
        if len(normalize(fact.content).split()) < 2:
            continue
        reason = refusal(fact.content)
        if reason is not None:
            log.info("memory_fact_refused", reason=reason, fact_id=fact.id)
            continue
        if any(same_fact(fact.content, k.content) for k in kept):
            continue
        twin = next((e for e in existing if same_fact(fact.content, e.content)), None)
        if twin is not None:
            fact = Fact(
                twin.id,
                fact.content,
                fact.category,
                fact.confidence,
                fact.source_thread,
                twin.created_at,
                fact.updated_at,
            )
        kept.append(fact)
    return kept
