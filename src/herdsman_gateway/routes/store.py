"""The LangGraph Store API: ``PUT/GET/DELETE /store/items``, ``POST /store/items/search``,
``POST /store/namespaces``, on the BaseStore that holds long-term memory.

Each user sees only their own items (the API key's user; ``memory.user_id`` when auth is off):
:class:`~herdsman.memory.user_store.UserStore` keeps them in a slice of the store no other
user's namespaces reach, and a fact the agent saved is the item ``("memory", "facts")`` /
its id. Status codes and shapes are the reference server's: a put or delete answers 204, a
missing item is ``null`` (200), a missing ``key`` 400, a bad namespace 422. ``ttl`` (minutes) is
honoured: expired items are swept every minute. ``index`` is accepted; a ``query`` ranks items
by meaning with ``memory.embedding_model``, else by shared keywords, and the response header
``X-Herdsman-Ranking`` says which.

The store works with ``memory.enabled: false`` too (the same SQLite file or Postgres database).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field

from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.memory.backend import open_store
from herdsman.memory.user_store import StoreRequestError, UserStore
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.routes.memory import memory_user
from herdsman_gateway.schemas import StorableBody

log = get_logger(__name__)

router = APIRouter(tags=["store"], dependencies=[Depends(memory_user)])  # 401 before anything
SWEEP_SECONDS = 60.0
RANKING_HEADER = "X-Herdsman-Ranking"


class StorePut(StorableBody):
    """``PUT /store/items``."""

    namespace: list[str] = Field(..., description='The namespace path, e.g. ["notes", "work"].')
    key: str = Field(..., description="The item's key within the namespace.")
    value: dict[str, Any] = Field(..., description="The item: a JSON object.")
    index: Literal[False] | list[str] | None = Field(None, description="Accepted; ranking reads the value's text.")
    ttl: float | None = Field(None, gt=0, description="Minutes the item lives; null: for ever.")


class StoreDelete(StorableBody):
    """``DELETE /store/items``."""

    namespace: list[str] | None = None
    key: str


class StoreSearch(StorableBody):
    """``POST /store/items/search``."""

    namespace_prefix: list[str] | None = Field(None, description="Items in this namespace or below; null: all yours.")
    filter: dict[str, Any] | None = Field(None, description='Value fields to match, e.g. {"category": "preference"}.')
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    query: str | None = Field(None, description="Rank by relevance to this text (meaning with an embedding model).")
    refresh_ttl: bool | None = None


class StoreListNamespaces(StorableBody):
    """``POST /store/namespaces``."""

    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(None, ge=1)
    limit: int = Field(100, ge=0, le=1000)
    offset: int = Field(0, ge=0)


class StoreItem(BaseModel):
    """An item, as the LangGraph API shows it."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


class StoreSearchItem(StoreItem):
    """A search result: ``score`` when a ``query`` ranked it."""

    score: float | None = None


class StoreSearchResult(BaseModel):
    """``POST /store/items/search``'s answer."""

    items: list[StoreSearchItem]


class StoreNamespaces(BaseModel):
    """``POST /store/namespaces``'s answer."""

    namespaces: list[list[str]]


def open_item_store(config: HerdsmanConfig) -> BaseStore | None:
    """The memory BaseStore for the Store API when memory itself is off; None (logged) when it cannot open."""
    try:
        return open_store(config)
    except Exception as exc:  # noqa: BLE001 - the rest of the gateway works without it
        log.warning("store_unavailable", error=str(exc))
        return None


async def sweep_expired_items(store: BaseStore, every: float = SWEEP_SECONDS) -> None:
    """Delete items whose ``ttl`` has run out, every ``every`` seconds (until cancelled)."""
    sweep = getattr(store, "sweep_ttl", None)
    if not callable(sweep):
        return
    while True:
        await asyncio.sleep(every)
        try:
            removed = await asyncio.to_thread(sweep)
        except Exception as exc:  # noqa: BLE001 - try again next time
            log.warning("store_sweep_failed", error=str(exc))
            continue
        if removed:
            log.info("store_items_expired", count=removed)


def user_store(gw: Gateway = Depends(get_gateway), user: str = Depends(memory_user)) -> UserStore:
    """The caller's items, or 503 when the store could not be opened."""
    if gw.store is None:
        raise HTTPException(
            503,
            "The store could not be opened; check memory.path (or memory.store and memory.url) in config.yaml "
            "and the gateway log, then restart the gateway",
        )
    return UserStore(gw.store, user, gw.config.memory.embedding_model)


def invalid(exc: StoreRequestError) -> HTTPException:
    """The 422 for a request the store cannot take."""
    return HTTPException(422, f"Invalid request: {exc}")


@router.put("/store/items", status_code=204, response_class=Response, summary="Store or update an item")
def put_item(body: StorePut, items: UserStore = Depends(user_store)) -> Response:
    """Write ``value`` at ``(namespace, key)``. Under ``["memory", "facts"]`` it must be a fact
    (``content``, optional ``category``, ``confidence``, ``source_thread``)."""
    try:
        items.put(body.namespace, body.key, body.value, ttl=body.ttl)
    except StoreRequestError as exc:
        raise invalid(exc) from None
    log.info("store_item_put", user_id=items.user_id, namespace=body.namespace, key=body.key)
    return Response(status_code=204)


@router.get("/store/items", response_model=StoreItem | None, summary="Retrieve an item")
def get_item(
    key: str | None = Query(None, description="The item's key."),
    namespace: str | None = Query(None, description="The namespace's labels joined with '.', e.g. notes.work"),
    refresh_ttl: bool | None = Query(None),
    items: UserStore = Depends(user_store),
) -> Any:
    """The item, or ``null`` when there is none."""
    if not key:
        raise HTTPException(400, "Invalid request: key is required; send ?key=...&namespace=a.b")
    try:
        return items.get((namespace or "").split(".") if namespace else [], key, refresh_ttl=refresh_ttl)
    except StoreRequestError as exc:
        raise invalid(exc) from None


@router.delete("/store/items", status_code=204, response_class=Response, summary="Delete an item")
def delete_item(body: StoreDelete, items: UserStore = Depends(user_store)) -> Response:
    """Remove the item at ``(namespace, key)`` (204 also when there was none, as in LangGraph)."""
    try:
        items.delete(body.namespace or [], body.key)
    except StoreRequestError as exc:
        raise invalid(exc) from None
    log.info("store_item_deleted", user_id=items.user_id, namespace=body.namespace, key=body.key)
    return Response(status_code=204)


@router.post("/store/items/search", response_model=StoreSearchResult, summary="Search items")
def search_items(body: StoreSearch, response: Response, items: UserStore = Depends(user_store)) -> Any:
    """Your items under ``namespace_prefix`` that match ``filter``: newest first, or with a
    ``query`` most relevant first, each with its ``score``."""
    try:
        found, ranking = items.search(
            body.namespace_prefix or [],
            filter=body.filter,
            limit=body.limit,
            offset=body.offset,
            query=body.query,
            refresh_ttl=body.refresh_ttl,
        )
    except StoreRequestError as exc:
        raise invalid(exc) from None
    if ranking:
        response.headers[RANKING_HEADER] = ranking
    return {"items": found}


@router.post("/store/namespaces", response_model=StoreNamespaces, summary="List namespaces")
def list_namespaces(body: StoreListNamespaces, items: UserStore = Depends(user_store)) -> Any:
    """Your namespaces starting with ``prefix`` and ending with ``suffix``, cut to ``max_depth``."""
    try:
        spaces = items.list_namespaces(
            prefix=body.prefix,
            suffix=body.suffix,
            max_depth=body.max_depth,
            limit=body.limit,
            offset=body.offset,
        )
    except StoreRequestError as exc:
        raise invalid(exc) from None
    return {"namespaces": spaces}
