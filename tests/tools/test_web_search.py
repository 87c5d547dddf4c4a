"""web_search against a local server speaking each provider's API: SearXNG, Tavily, Brave and
DuckDuckGo (through ddgs); rate limits, timeouts and bad keys give clear errors."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import ToolMessage

from herdsman.config.schema import WebSearchConfig
from herdsman.tools.untrusted import CLOSE, OPEN
from herdsman.tools.web_search import make_web_search_tool

KEYS = {"tavily": "tvly-test", "brave": "brave-test"}
PATHS = {"searxng": "/searxng", "tavily": "/tavily", "brave": "/brave", "duckduckgo": "/ddg/html/"}


def config(provider: str, base_url: str, **extra: object) -> WebSearchConfig:
    return WebSearchConfig.model_validate(
        {"provider": provider, "base_url": base_url, "api_key": KEYS.get(provider), "timeout_seconds": 2, **extra}
    )


async def search(cfg: WebSearchConfig, query: str = "goats") -> ToolMessage:
    tool = make_web_search_tool(cfg)
    return await tool.ainvoke({"type": "tool_call", "id": "s1", "name": "web_search", "args": {"query": query}})


@pytest.mark.parametrize("provider", ["searxng", "tavily", "brave", "duckduckgo"])
async def test_each_provider_returns_marked_results(web, provider: str) -> None:
    result = await search(config(provider, web.url(PATHS[provider])), "goat herding")
    assert result.status != "error", result.text
    text = result.text
    assert "1. Goats - a guide" in text and "https://example.org/goats" in text
    assert "Everything about goats" in text
    assert text.startswith(OPEN) and text.rstrip().endswith(CLOSE)
    assert f"web search ({provider}): goat herding" in text


async def test_requests_speak_each_api(web) -> None:
    await search(config("searxng", web.url("/searxng")), "q1")
    method, path, _, _ = web.requests[-1]
    assert method == "GET" and "q=q1" in path and "format=json" in path
    await search(config("tavily", web.url("/tavily"), max_results=3), "q2")
    method, path, headers, body = web.requests[-1]
    assert (method, path) == ("POST", "/tavily/search") and json.loads(body) == {"query": "q2", "max_results": 3}
    await search(config("brave", web.url("/brave")), "q3")
    method, path, headers, _ = web.requests[-1]
    assert path.startswith("/brave/web/search?") and "count=5" in path
    assert headers["X-Subscription-Token"] == "brave-test"
    await search(config("duckduckgo", web.url("/ddg/html/")), "q4")
    method, path, _, body = web.requests[-1]
    assert method == "POST" and b"q=q4" in body


async def test_max_results_is_honoured(web) -> None:
    text = (await search(config("searxng", web.url("/searxng"), max_results=1))).text
    assert "1. Goats" in text and "2." not in text


@pytest.mark.parametrize(
    "provider,base",
    [("searxng", "/limited"), ("tavily", "/limited"), ("brave", "/limited"), ("duckduckgo", "/ddg-limited/html/")],
)
async def test_rate_limit_gives_clear_error(web, provider: str, base: str) -> None:
    result = await search(config(provider, web.url(base)))
    assert result.status == "error"
    assert "rate limiting" in result.text and "429" in result.text


@pytest.mark.parametrize("provider,base", [("searxng", "/slow"), ("brave", "/slow"), ("duckduckgo", "/ddg-slow/html/")])
async def test_timeout_gives_clear_error(web, provider: str, base: str) -> None:
    result = await search(config(provider, web.url(base), timeout_seconds=1))
    assert result.status == "error"
    assert "did not answer within 1s" in result.text


async def test_bad_key_names_the_setting(web) -> None:
    result = await search(config("tavily", web.url("/tavily"), api_key="wrong"))
    assert result.status == "error" and "HTTP 401" in result.text and "web.search.api_key" in result.text


async def test_unreachable_provider_and_empty_query() -> None:
    from tests.tools.conftest import free_port

    result = await search(config("searxng", f"http://127.0.0.1:{free_port()}"))
    assert result.status == "error" and "cannot reach the searxng search provider" in result.text
    empty = await search(config("searxng", "http://127.0.0.1:9"), "  ")
    assert empty.status == "error" and "query is empty" in empty.text


def test_config_requires_key_or_base_url() -> None:
    with pytest.raises(ValueError, match="web.search.api_key is empty"):
        WebSearchConfig.model_validate({"provider": "brave"})
    with pytest.raises(ValueError, match="web.search.base_url is empty"):
        WebSearchConfig.model_validate({"provider": "searxng"})
