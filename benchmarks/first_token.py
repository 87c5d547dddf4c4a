"""First token of a new thread with the embedded model: cold, and with the saved system prompt.

Each measurement runs in a fresh process (as after a restart of `make run`), with the default
config (embedded model, local sandbox) in a temporary home, and times from sending the first
message of a new thread to the model's first generated token (a text or a tool call: the moment
the prompt has been processed). The model is loaded before the clock starts (its load time is
reported on its own).

* ``cold``: an empty prompt cache (what every new thread cost before the cache existed);
* ``new_process``: a new process and a new thread, the cache written by the cold run;
* ``same_process``: a second new thread in that process, after an unrelated generation replaced
  the model's in-memory state (a title, another thread).

Prints one JSON line: cold_s, new_process_s, same_process_s, prompt_tokens, head_tokens,
load_s, target_s (15). Target: new_process_s and same_process_s under 15 s on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S = 15.0
MESSAGE = "What files are in my workspace?"


async def _one_thread(client: Any, model: Any, marks: dict[str, float]) -> float:
    """Seconds from sending ``MESSAGE`` on a new thread to the first generated token."""
    marks.clear()
    started = time.monotonic()
    async for _event in client.stream(MESSAGE):
        if "first" in marks:
            break
    return marks.get("first", time.monotonic()) - started


def child(runs: int) -> dict[str, Any]:
    """Measure in this process: the first new thread, then (``runs`` > 1) another one after an
    unrelated generation."""
    from langchain_core.messages import HumanMessage

    from herdsman.client import HerdsmanClient
    from herdsman.config.schema import HerdsmanConfig
    from herdsman.models.local import build_local_model

    home = tempfile.mkdtemp(prefix="first-token-")
    config = HerdsmanConfig.model_validate({"home": home, "title": {"enabled": False}})
    model = build_local_model(config.local_model, progress=False)
    started = time.monotonic()
    model.load()
    load_s = time.monotonic() - started
    marks: dict[str, float] = {}
    completion = model._completion  # noqa: SLF001 - the benchmark times the first generated piece

    def timed(request: Any, stream: bool) -> Any:
        marks["head_tokens"] = request.head
        marks["prompt_tokens"] = len(request.tokens)
        result = completion(request, stream)
        if not stream:
            marks.setdefault("first", time.monotonic())
            return result

        def pieces() -> Any:
            for piece in result:
                marks.setdefault("first", time.monotonic())
                yield piece

        return pieces()

    object.__setattr__(model, "_completion", timed)

    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {"load_s": round(load_s, 2)}
        async with HerdsmanClient(config, model=model) as client:
            out["first_s"] = round(await _one_thread(client, model, marks), 2)
            out["prompt_tokens"] = int(marks.get("prompt_tokens", 0))
            out["head_tokens"] = int(marks.get("head_tokens", 0))
            if runs > 1:
                model.invoke([HumanMessage(content="Name one color.")])  # replaces the in-memory state
                out["again_s"] = round(await _one_thread(client, model, marks), 2)
        return out

    return asyncio.run(go())


def _spawn(cache_dir: str, runs: int) -> dict[str, Any]:
    env = dict(os.environ, HERDSMAN_PROMPT_CACHE=cache_dir)
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--runs", str(runs)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"the measuring process failed (exit {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Parse arguments; as the parent, run the cold and warm processes and print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.runs)))
        return
    with tempfile.TemporaryDirectory(prefix="prompt-cache-") as cache_dir:
        print("cold: a new process, an empty prompt cache ...", file=sys.stderr)
        cold = _spawn(cache_dir, 1)
        print(f"  {cold['first_s']} s; warm: a new process, the saved prompt ...", file=sys.stderr)
        warm = _spawn(cache_dir, 2)
        saved = sum(f.stat().st_size for f in Path(cache_dir).glob("*.kv"))
    print(
        json.dumps(
            {
                "cold_s": cold["first_s"],
                "new_process_s": warm["first_s"],
                "same_process_s": warm.get("again_s"),
                "prompt_tokens": warm["prompt_tokens"],
                "head_tokens": warm["head_tokens"],
                "cache_mb": round(saved / 2**20, 1),
                "load_s": warm["load_s"],
                "target_s": TARGET_S,
                "speedup": round(cold["first_s"] / max(warm["first_s"], 0.01), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
