"""The built-in tools through the lead agent, with the scripted model: an MCP tool, web_fetch,
view_image for a vision model; a broken MCP server does not stop the agent."""

from __future__ import annotations

from pathlib import Path

from herdsman.client import HerdsmanClient, ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.tools.mcp import mcp_status
from tests.support import make_config
from tests.tools.conftest import stdio_server
from tests.tools.web_server import PNG_1PX

SCRIPTED = "herdsman.models.scripted:ScriptedChatModel"


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "args": args}]}


async def run(config, model: ScriptedChatModel, thread: str = "t") -> list:
    async with HerdsmanClient(config, model=model) as client:
        return [e async for e in client.stream("go", thread_id=thread)]


async def test_scripted_model_calls_mcp_tool_through_lead_agent(home: Path) -> None:
    config = make_config(
        home,
        mcp={"servers": [stdio_server("calc", tool_prefix="calc_", deny=["delete_*"]),
                         stdio_server("crashy", "crash")]},
    )  # fmt: skip
    model = ScriptedChatModel(responses=[call("calc_add", a=19, b=23), "19 + 23 is 42."])
    events = await run(config, model)
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.name == "calc_add" and not result.is_error
    assert "19 + 23 = 42" in result.content
    assert "19 + 23 = 42" in model.calls[1].messages[-1].text  # the model saw the result
    assert {"calc_add", "calc_echo"} <= set(model.calls[0].tools)
    assert "calc_delete_everything" not in model.calls[0].tools
    status = {s.name: s for s in mcp_status(config)}
    assert status["calc"].state == "ready" and status["crashy"].state == "failed"
    assert events[-1].answer == "19 + 23 is 42."


async def test_scripted_model_fetches_a_page(home: Path, web) -> None:
    config = make_config(home, web={"allow_networks": ["127.0.0.0/8"]})
    model = ScriptedChatModel(responses=[call("web_fetch", url=web.url("/article")), "Goats are browsers."])
    events = await run(config, model)
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert not result.is_error and "A herd of goats is called a trip" in result.content
    seen = model.calls[1].messages[-1].text
    assert seen.startswith("URL: ") and "<untrusted_content" in seen


async def test_web_tools_can_be_turned_off(home: Path) -> None:
    config = make_config(home, web={"fetch": {"enabled": False}}, tools={"disabled": ["web_search"]})
    model = ScriptedChatModel(responses=["ok"])
    await run(config, model)
    assert "web_fetch" not in model.calls[0].tools and "web_search" not in model.calls[0].tools


async def test_vision_model_views_an_uploaded_image(home: Path) -> None:
    config = make_config(home, models=[{"name": "eyes", "use": SCRIPTED, "supports_vision": True}])
    uploads = home / "threads" / "t-img" / "user-data" / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "pixel.png").write_bytes(PNG_1PX)
    (uploads / "notes.txt").write_text("not an image")
    (uploads / "huge.png").write_bytes(PNG_1PX + b"\0" * (9 * 1024 * 1024))
    model = ScriptedChatModel(
        responses=[
            call("view_image", path="/mnt/user-data/uploads/pixel.png"),
            call("view_image", path="/mnt/user-data/uploads/notes.txt"),
            call("view_image", path="/mnt/user-data/uploads/../../../../etc/passwd"),
            call("view_image", path="/mnt/user-data/uploads/huge.png"),
            "It is one pixel.",
        ]
    )
    events = await run(config, model, "t-img")
    results = [e for e in events if isinstance(e, ToolResult)]
    assert not results[0].is_error
    blocks = model.calls[1].messages[-1].content
    image = next(b for b in blocks if isinstance(b, dict) and b.get("type") == "image")
    assert image["mime_type"] == "image/png" and image["base64"].startswith("iVBORw0KGgo")
    assert results[1].is_error and "not a PNG, JPEG, GIF or WebP image" in results[1].content
    assert results[2].is_error
    assert str(home) not in results[2].content
    assert results[3].is_error and "make a smaller copy" in results[3].content


async def test_model_without_vision_has_no_view_image(home: Path) -> None:
    config = make_config(home, models=[{"name": "blind", "use": SCRIPTED}])
    model = ScriptedChatModel(responses=["ok"])
    await run(config, model)
    assert "view_image" not in model.calls[0].tools
