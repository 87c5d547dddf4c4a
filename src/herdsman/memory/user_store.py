"""One user's view of the memory BaseStore, as the LangGraph Store API shows it.

Every user has a private slice of the store that holds long-term memory. A namespace a client
names, ``(a, b, ...)``, is kept as ``(a, <user>, b, ...)`` (``<user>`` is
:func:`~herdsman.memory.store.user_label`), and the user label never shows in what is answered.
So the client's ``("memory", "facts")`` is exactly the user's facts and ``("memory",
"profile")`` their context summary, with no migration of what memory already keeps; and no
namespace a client can name reaches another user's. A search or listing without a prefix visits
the store's first labels one by one, each scoped to the user.

Writes under ``memory`` must keep memory working: ``("memory", "facts")`` takes facts
(``content`` and optionally ``category``, ``confidence``, ``source_thread``; the rest is filled
in), ``("memory", "profile")`` only the key ``summary`` with ``text``; other namespaces under
``memory`` (the graph, the audit trail, the off switch) are refused. Every write or delete under
``memory`` leaves an audit record (origin ``store``).

``query`` ranks by meaning when ``memory.embedding_model`` is set (and loads), else by shared
keywords (:func:`~herdsman.memory.injection.relevance`), over the first :data:`SCAN_LIMIT`
items under the prefix. LangGraph's stores rank by meaning only with a vector index, which
the memory store does not have (it would need sqlite-vec or pgvector): that ranking is why
this module is written by hand.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson
from langgraph.store.base import BaseStore, Item, SearchItem

from herdsman.memory.audit import Origin
from herdsman.memory.audit import record as audit
from herdsman.memory.facts import CATEGORIES, Fact, now_iso
from herdsman.memory.injection import relevance
from herdsman.memory.store import LIST_LIMIT, ROOT, user_label

MAX_LABELS = 16
MAX_LABEL_CHARS = 256
MAX_KEY_CHARS = 1024
MAX_VALUE_BYTES = 256 * 1024
SCAN_LIMIT = 2000
STORE = Origin("store")
FACT_FIELDS = ("content", "category", "confidence", "source_thread", "created_at", "updated_at", "sources")


class StoreRequestError(ValueError):
    """A request the store cannot take: ``field`` names the part, the message says what to send."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def check_text(field: str, text: str) -> str:
    """``text`` when every store keeps it as it is: valid Unicode, no NUL (PostgreSQL refuses both)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreRequestError(
            field, "contains text that is not valid Unicode (a lone surrogate); send UTF-8"
        ) from None
    if "\x00" in text:
        raise StoreRequestError(field, "contains a NUL character; remove it")
    return text


def check_json_object(field: str, value: Any, limit: int) -> dict[str, Any]:
    """``value`` when it is a JSON object every store keeps, of at most ``limit`` bytes as JSON."""
    if not isinstance(value, Mapping):
        raise StoreRequestError(field, 'must be a JSON object, e.g. {"text": "..."}')
    try:
        encoded = orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise StoreRequestError(
            field, f"cannot be stored as JSON ({exc}); send valid UTF-8 text and 64-bit numbers"
        ) from None
    if b"\\u0000" in encoded and any("\x00" in text for text in strings(value, keys=True)):
        raise StoreRequestError(field, "contains a NUL character (\\u0000); remove it")
    if len(encoded) > limit:
        raise StoreRequestError(
            field, f"is {len(encoded):,} bytes as JSON; an item holds at most {limit:,}: split it into several items"
        )
    return dict(value)


def check_namespace(field: str, namespace: Sequence[str], *, empty_ok: bool = False) -> tuple[str, ...]:
    """``namespace`` as a tuple when every label is a non-empty string without "." (else 422-worthy)."""
    labels = tuple(namespace)
    if not labels and not empty_ok:
        raise StoreRequestError(field, 'is empty; name at least one label, e.g. ["notes"]')
    if len(labels) > MAX_LABELS:
        raise StoreRequestError(field, f"has {len(labels)} labels; use at most {MAX_LABELS}")
    for label in labels:
        if not isinstance(label, str) or not label or "." in label:
            raise StoreRequestError(
                field, f"label {label!r} must be a non-empty string without periods (the SDK joins labels with '.')"
            )
        if len(label) > MAX_LABEL_CHARS:
            raise StoreRequestError(field, f"label {label[:40]!r}... is longer than {MAX_LABEL_CHARS} characters")
        check_text(field, label)
    return labels


def check_key(key: str) -> str:
    """``key`` when it can name an item."""
    if not key:
        raise StoreRequestError("key", "is empty; send the item's key")
    if len(key) > MAX_KEY_CHARS:
        raise StoreRequestError("key", f"is longer than {MAX_KEY_CHARS} characters")
    return check_text("key", key)


def check_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` when it is a JSON object of at most :data:`MAX_VALUE_BYTES`."""
    return check_json_object("value", value, MAX_VALUE_BYTES)


def fact_value(value: Mapping[str, Any], existing: Item | None) -> dict[str, Any]:
    """The record memory keeps for a fact written through the store (its fields checked, the rest filled in)."""
    unknown = sorted(set(value) - set(FACT_FIELDS))
    if unknown:
        raise StoreRequestError("value", f"a fact has no field {', '.join(unknown)}; use {', '.join(FACT_FIELDS)}")
    content = value.get("content")
    if not isinstance(content, str) or len(" ".join(content.split())) < 3:
        raise StoreRequestError("value.content", "a fact needs its text in content (a string of 3 characters or more)")
    category = value.get("category", "other")
    if category not in CATEGORIES:
        raise StoreRequestError("value.category", f"{category!r} is unknown; use one of {', '.join(CATEGORIES)}")
    confidence = value.get("confidence", 0.8)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise StoreRequestError("value.confidence", "must be a number from 0 to 1")
    source = value.get("source_thread")
    if source is not None and not isinstance(source, str):
        raise StoreRequestError("value.source_thread", "must be a thread id (a string) or null")
    fact = Fact.new(content, category, confidence, source)
    created = existing.value.get("created_at") if existing is not None else None
    return replace(fact, created_at=str(created or value.get("created_at") or fact.created_at)).to_value()


def profile_value(key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """The record memory keeps for the user's context summary."""
    if key != "summary":
        raise StoreRequestError("key", 'the profile holds one item, "summary"; put it with key "summary"')
    text = value.get("text")
    unknown = sorted(set(value) - {"text", "updated_at"})
    if unknown or not isinstance(text, str):
        raise StoreRequestError("value", 'the summary is {"text": "..."}: send text (a string) and nothing else')
    return {"text": text.strip(), "updated_at": now_iso()}


def item_text(value: Mapping[str, Any]) -> str:
    """The text a query is ranked against: ``content`` or ``text`` when present, else every string in the value."""
    for name in ("content", "text"):
        text = value.get(name)
        if isinstance(text, str):
            return text
    return " ".join(strings(value))


def strings(node: Any, *, keys: bool = False) -> Iterator[str]:
    """Every string in a JSON value (object keys too when ``keys``), depth first."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, Mapping):
        for name, inner in node.items():
            if keys:
                yield str(name)
            yield from strings(inner, keys=keys)
    elif isinstance(node, list):
        for inner in node:
            yield from strings(inner, keys=keys)


@dataclass(frozen=True)
class UserStore:
    """The items of one user in ``store``, under the namespaces the user names."""

    store: BaseStore
    user_id: str
    embedding_model: str | None = None

    # -- namespaces -------------------------------------------------------------------------

    def scoped(self, namespace: Sequence[str]) -> tuple[str, ...]:
        """Where the client's ``namespace`` is kept in the store."""
        return (namespace[0], user_label(self.user_id), *namespace[1:])

    def public(self, namespace: Sequence[str]) -> tuple[str, ...]:
        """The client's name of a stored namespace (the user label left out)."""
        return (namespace[0], *namespace[2:])

    def _mine(self, namespace: Sequence[str]) -> bool:
        return len(namespace) >= 2 and namespace[1] == user_label(self.user_id)

    def _namespaces(self, prefix: Sequence[str]) -> list[tuple[str, ...]]:
        """The user's stored namespaces under the client's ``prefix`` (all of them for an empty one),
        in one query: LangGraph's stores read ``*`` in a listing prefix as any one label."""
        scoped = self.scoped(prefix) if prefix else ("*", user_label(self.user_id))
        return [ns for ns in self.store.list_namespaces(prefix=scoped, limit=LIST_LIMIT) if self._mine(ns)]

    def _roots(self, prefix: Sequence[str]) -> list[str]:
        """The first labels to search for ``prefix``: its own, or those of the user's namespaces."""
        return [prefix[0]] if prefix else sorted({ns[0] for ns in self._namespaces(())})

    def public_item(self, item: Item) -> dict[str, Any]:
        """An item as the LangGraph API answers it (``score`` too for a search result)."""
        data = item.dict()
        data["namespace"] = list(self.public(item.namespace))
        for name in ("created_at", "updated_at"):  # SQLite keeps UTC without saying so
            stamp = getattr(item, name)
            if stamp.tzinfo is None:
                data[name] = stamp.replace(tzinfo=dt.UTC).isoformat()
        return data

    # -- items ------------------------------------------------------------------------------

    def put(
        self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *, ttl: float | None = None
    ) -> dict[str, Any]:
        """Store ``value`` at ``(namespace, key)``; what was kept (memory records are completed)."""
        space = check_namespace("namespace", namespace)
        key = check_key(key)
        record = check_value(value)
        if space[0] == ROOT:
            record = self._memory_record(space, key, record)
        self.store.put(self.scoped(space), key, record, ttl=ttl)
        self._audit("put", space, key)
        return record

    def _audit(self, action: str, space: tuple[str, ...], key: str) -> None:
        """An audit record for a write to memory (other namespaces are the client's own items)."""
        if space[0] == ROOT and len(space) > 1 and space[1] in ("facts", "profile"):
            kind = "fact" if space[1] == "facts" else "summary"
            audit(self.store, user_label(self.user_id), action, kind, key, STORE)

    def _memory_record(self, space: tuple[str, ...], key: str, value: dict[str, Any]) -> dict[str, Any]:
        if space == (ROOT, "facts"):
            return fact_value(value, self.store.get(self.scoped(space), key))
        if space == (ROOT, "profile"):
            return profile_value(key, value)
        raise StoreRequestError(
            "namespace",
            f'under "{ROOT}" only ["{ROOT}", "facts"] (facts) and ["{ROOT}", "profile"] (the summary) '
            "are kept; choose another first label for your own items",
        )

    def get(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool | None = None) -> dict[str, Any] | None:
        """The item at ``(namespace, key)``, or None."""
        space = check_namespace("namespace", namespace)
        item = self.store.get(self.scoped(space), check_key(key), refresh_ttl=refresh_ttl)
        return self.public_item(item) if item is not None else None

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Remove the item at ``(namespace, key)`` (nothing happens when there is none)."""
        space = check_namespace("namespace", namespace)
        self.store.delete(self.scoped(space), check_key(key))
        self._audit("delete", space, key)

    def search(
        self,
        prefix: Sequence[str],
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        query: str | None = None,
        refresh_ttl: bool | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Items under ``prefix`` matching ``filter``, newest first, or most relevant to ``query``
        first (with a ``score``); and how they were ranked (None, "meaning" or "keywords")."""
        space = check_namespace("namespace_prefix", prefix, empty_ok=True)
        if filter is not None:
            check_json_object("filter", filter, MAX_VALUE_BYTES)
        if query is not None:
            check_text("query", query)
        wanted = SCAN_LIMIT if query else offset + limit
        found: list[SearchItem] = []
        for root in self._roots(space):
            scoped = self.scoped((root, *space[1:]))
            try:
                items = self.store.search(scoped, filter=filter, limit=wanted, refresh_ttl=refresh_ttl)
            except ValueError as exc:  # the store refuses a filter key or operator
                raise StoreRequestError(
                    "filter", f'{exc}; filter on value fields, e.g. {{"category": "preference"}}'
                ) from None
            found += [item for item in items if self._mine(item.namespace)]
        found.sort(key=lambda item: item.updated_at, reverse=True)
        method = None
        if query:
            found = found[:SCAN_LIMIT]
            scores, method = relevance(query, [item_text(item.value) for item in found], self.embedding_model)
            for item, score in zip(found, scores, strict=False):
                item.score = float(score)
            found.sort(key=lambda item: item.score or 0.0, reverse=True)  # stable: newest first among equals
        return [self.public_item(item) for item in found[offset : offset + limit]], method

    def list_namespaces(
        self,
        *,
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[list[str]]:
        """The user's namespaces that start with ``prefix`` and end with ``suffix``, cut to
        ``max_depth`` labels, sorted, without repeats."""
        start = check_namespace("prefix", prefix or (), empty_ok=True)
        end = check_namespace("suffix", suffix or (), empty_ok=True)
        names: set[tuple[str, ...]] = set()
        for space in self._namespaces(start):
            public = self.public(space)
            if public[: len(start)] != start or (end and public[-len(end) :] != end):
                continue  # a literal "*" in the prefix, or another suffix
            names.add(public[:max_depth] if max_depth else public)
        return [list(ns) for ns in sorted(names)[offset : offset + limit]]
