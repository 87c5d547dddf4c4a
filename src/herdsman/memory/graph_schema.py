"""What the memory model may say about entities and relations: the extraction schema, in one place.

The memory model answers JSON (see :mod:`herdsman.memory.extraction`); beside ``facts`` it may list
``entities``, ``relations`` and the relations that ``ended`` (stopped being true, or were wrong: a
multi-valued predicate such as ``uses`` is closed by nothing else). These pydantic models are that
part of the reply: each item is validated on its own, so one malformed entity or relation is
dropped, never the whole update. The same names, kinds and single-valued predicates are what
:mod:`herdsman.memory.graph` keeps.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

KINDS = ("person", "project", "repository", "service", "preference", "other")
# A subject holds at most one open relation with these predicates: a new object replaces the old
# one (the old relation gets its valid_to), so "deploys to AWS" then "moved to GCP" is a history.
SINGLE_VALUED = frozenset(
    {
        "deploys_to",
        "works_at",
        "prefers",
        "lives_in",
        "hosted_on",
        "written_in",
        "managed_by",
        "role",
        "uses_editor",
    }
)
MAX_NAME_CHARS = 120
_PREDICATE = re.compile(r"[^a-z0-9]+")


def predicate_name(text: str) -> str:
    """``text`` as a predicate: lowercase words joined by ``_`` ("Deploys to" -> ``deploys_to``)."""
    return _PREDICATE.sub("_", text.lower()).strip("_")


def since_date(value: Any) -> str | None:
    """An ISO date or date-time from the model, as ``YYYY-MM-DD...``; None when absent or unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text).isoformat(timespec="seconds")
    except ValueError:
        return None


class ExtractedEntity(BaseModel):
    """Someone or something the user's memory is about."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=2, max_length=MAX_NAME_CHARS)
    kind: str = "other"
    aliases: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> str:
        kind = str(value or "other").lower()
        return kind if kind in KINDS else "other"

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> list[str]:
        if not isinstance(value, list):
            return []
        return [" ".join(a.split()) for a in value if isinstance(a, str) and 2 <= len(a.strip()) <= MAX_NAME_CHARS]


class ExtractedRelation(BaseModel):
    """``subject predicate object``, true since ``valid_from`` (the learning time when not said)."""

    model_config = ConfigDict(extra="ignore")

    subject: str = Field(min_length=2, max_length=MAX_NAME_CHARS)
    predicate: str = Field(min_length=2, max_length=60)
    object: str = Field(min_length=2, max_length=MAX_NAME_CHARS)
    valid_from: str | None = None
    confidence: float = Field(0.8, ge=0, le=1)

    @field_validator("subject", "object")
    @classmethod
    def _name(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("predicate")
    @classmethod
    def _predicate(cls, value: str) -> str:
        name = predicate_name(value)
        if len(name) < 2:
            raise ValueError("a predicate needs words, e.g. deploys_to")
        return name

    @field_validator("valid_from", mode="before")
    @classmethod
    def _since(cls, value: Any) -> str | None:
        return since_date(value)


class EndedRelation(ExtractedRelation):
    """A relation the user said stopped being true, or was wrong: ``subject predicate object`` until ``valid_to``."""

    valid_to: str | None = None

    @field_validator("valid_to", mode="before")
    @classmethod
    def _until(cls, value: Any) -> str | None:
        return since_date(value)


def parse_items(model: type[BaseModel], raw: Any) -> list[Any]:
    """The items of ``raw`` (a JSON list) that ``model`` accepts; the others are dropped."""
    if not isinstance(raw, list):
        return []
    kept = []
    for item in raw:
        try:
            kept.append(model.model_validate(item))
        except ValidationError:
            continue
    return kept


PROMPT_PART = f"""\
Also list the people, projects, repositories, services and preferences the conversation is about,
and how they relate, when the user said so:
  "entities": [{{"name": "<name>", "kind": "<one of {", ".join(KINDS)}>", "aliases": ["<other name>"]}}],
  "relations": [{{"subject": "<entity name>", "predicate": "<verb_phrase, e.g. deploys_to, works_at, prefers, uses>",
                 "object": "<entity name>", "valid_from": "<YYYY-MM-DD when the user said when, else null>",
                 "confidence": <0 to 1>}}]
A new value of {", ".join(sorted(SINGLE_VALUED))} replaces the old one: just state the new relation.
When the user says another relation stopped being true or was wrong, list it too:
  "ended": [{{"subject": "<entity name>", "predicate": "<as before>", "object": "<entity name>",
              "valid_to": "<YYYY-MM-DD when the user said when, else null>"}}]"""
