"""The web UI's speed: bundle size, time to interactive, and rendering a 1,000-message thread.

Builds nothing: it measures ``web/dist`` as built by ``make web``. It serves the gateway (with a
scripted model) on a free loopback port in this process, fills a thread with ``--messages``
messages through the LangGraph API (``threads.update_state``), and drives Debian's Chromium
headless with Playwright (``playwright-core`` from ``web/node_modules``). Prints one JSON line::

    {"bundle_kb": ..., "time_to_interactive_ms": ..., "render_1000_messages_ms": ..., "messages": 1000}

``bundle_kb`` is the gzipped size of the JavaScript the page loads; ``time_to_interactive_ms`` is
from navigation start to the model picker filled in and the message box ready (median of
``--loads``); ``render_1000_messages_ms`` is from navigation start to the last message of the
thread on screen. Targets: under 400 KB, under 1 s, under 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WEB = REPO / "web"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

DRIVER = r"""
import { createRequire } from "node:module";
const [webPackage, url, threadId, count, loads] = process.argv.slice(1);
const { chromium } = createRequire(webPackage)("playwright-core");
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const tti = [];
  for (let i = 0; i < Number(loads); i++) {
    await page.goto(url, { waitUntil: "commit" });
    await page.waitForFunction(() => document.querySelector('[data-testid="model-picker"] option') && document.querySelector('[data-testid="input"]'), null, { polling: "raf", timeout: 30000 });
    tti.push(await page.evaluate(() => performance.now()));
  }
  await page.goto(`${url}/?thread=${threadId}`, { waitUntil: "commit" });
  const last = `message ${Number(count) - 1}`;
  await page.waitForFunction((text) => {
    const els = document.querySelectorAll('[data-testid^="message-"] .message-text');
    return els.length && els[els.length - 1].textContent === text;
  }, last, { polling: "raf", timeout: 60000 });
  const render = await page.evaluate(() => performance.now());
  const shown = await page.locator('[data-testid^="message-"]').count();
  tti.sort((a, b) => a - b);
  console.log(JSON.stringify({ tti: tti[Math.floor(tti.length / 2)], render, shown }));
} finally {
  await browser.close();
}
"""


def bundle_kb(dist: Path) -> float:
    """Gzipped size (KB) of the JavaScript files of the build."""
    total = sum(len(gzip.compress(p.read_bytes(), 9)) for p in (dist / "assets").glob("*.js"))
    return round(total / 1024, 1)


def serve(home: str) -> tuple[str, object, threading.Thread]:
    """The gateway (scripted model, memory checkpointer) on a free loopback port, in a thread."""
    import uvicorn
    import yaml

    from herdsman.config import parse_config
    from herdsman.models.scripted import ScriptedChatModel
    from herdsman_gateway.app import create_app

    config = parse_config(
        yaml.safe_dump(
            {
                "home": home,
                "checkpointer": {"type": "memory"},
                "lead": {"model_retries": 0},
                "logging": {"level": "ERROR"},
            }
        ),
        env={},
    )
    app = create_app(config, model=ScriptedChatModel(responses=["ok"], on_exhausted="repeat_last"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise SystemExit("the gateway did not start")
        time.sleep(0.02)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


async def long_thread(url: str, count: int) -> str:
    """A thread holding ``count`` messages (alternately the user's and the agent's)."""
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None)
    try:
        thread_id = (await client.threads.create())["thread_id"]
        messages = [
            {"type": "human" if i % 2 == 0 else "ai", "content": f"message {i}", "id": f"m{i}"} for i in range(count)
        ]
        await client.threads.update_state(thread_id, {"messages": messages, "title": "A long thread"}, as_node="model")
        return thread_id
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000, help="messages in the long thread")
    parser.add_argument("--loads", type=int, default=5, help="page loads for time to interactive (median)")
    args = parser.parse_args()
    dist = WEB / "dist"
    if not (dist / "index.html").is_file():
        raise SystemExit("web/dist is missing: run `make web` first")
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    with tempfile.TemporaryDirectory() as home:
        url, server, thread = serve(home)
        try:
            thread_id = asyncio.run(long_thread(url, args.messages))
            out = subprocess.run(
                [
                    "node",
                    "--input-type=module",
                    "-e",
                    DRIVER,
                    str(WEB / "package.json"),
                    url,
                    thread_id,
                    str(args.messages),
                    str(args.loads),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=REPO,
            )
        finally:
            server.should_exit = True  # type: ignore[attr-defined]
            thread.join(10)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"the browser driver failed (exit {out.returncode})")
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        json.dumps(
            {
                "bundle_kb": bundle_kb(dist),
                "time_to_interactive_ms": round(measured["tti"], 1),
                "render_1000_messages_ms": round(measured["render"], 1),
                "messages": args.messages,
                "messages_shown": measured["shown"],
            }
        )
    )


if __name__ == "__main__":
    main()
