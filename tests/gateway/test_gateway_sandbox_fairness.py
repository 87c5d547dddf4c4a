"""One user's stuck sandbox never delays another user's requests.

A sandbox's first acquire can wait long (a jail made, a folder placed on the quota volume under
its lock, a container or pod started). The gateway acquires on the user's slots of the file pool
(``herdsman.pools``), never on its event loop: while ana's acquires are held, bo's requests are
answered, and ana's stuck requests hold no more than her share of the pool's threads.

The provider is the real local one, whose acquire of ana's threads waits for the test to let it
go. Everything is checked by order of events, never by time: bo's answers arrive while ana's
acquires are still held. A watchdog lets the held acquires go after :data:`WATCHDOG` seconds so
that a gateway whose event loop is blocked fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import httpx
from langgraph_sdk import get_client

from herdsman.config import HerdsmanConfig
from herdsman.sandbox.local import LocalSandbox, LocalSandboxProvider
from tests.gateway.gateway_support import HeldModel, running_gateway
from tests.support import make_config

WATCHDOG = 60.0  # seconds after which held acquires are let go all the same (a blocked gateway's test fails, not hangs)
TIMEOUT = 180.0  # of each HTTP request: longer than the watchdog, so a blocked gateway shows as a late answer


class HeldProvider(LocalSandboxProvider):
    """The local provider; acquiring a thread in :attr:`held` waits until :meth:`let_go`."""

    def __init__(self, config: HerdsmanConfig) -> None:
        super().__init__(config)
        self.held: set[str] = set()
        self.gate = threading.Event()
        self.changed = threading.Condition()
        self.waiting = 0  # acquires waiting at the gate now
        self.peak = 0  # the most that ever waited at once

    def acquire(self, thread_id: str) -> LocalSandbox:
        """The thread's sandbox, once the gate is open when the thread is held."""
        if thread_id in self.held and not self.gate.is_set():
            with self.changed:
                self.waiting += 1
                self.peak = max(self.peak, self.waiting)
                self.changed.notify_all()
            try:
                self.gate.wait()
            finally:
                with self.changed:
                    self.waiting -= 1
                    self.changed.notify_all()
        return super().acquire(thread_id)

    def let_go(self) -> None:
        """Let the held acquires (and every later one) go on."""
        self.gate.set()

    @property
    def released(self) -> bool:
        """Whether the held acquires were let go."""
        return self.gate.is_set()

    async def until(self, test: Callable[[], bool], what: str) -> None:
        """Wait (off the test's loop) until ``test()`` holds; fail saying ``what`` did not happen."""

        def wait() -> bool:
            with self.changed:
                return self.changed.wait_for(test, WATCHDOG)

        assert await asyncio.to_thread(wait), f"{what} (held acquires: {self.waiting})"


async def test_a_users_stuck_sandbox_never_delays_another_users_requests(home, model: HeldModel) -> None:
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]})
    share = config.pools.files_per_user
    provider = HeldProvider(config)
    watchdog = threading.Timer(WATCHDOG, provider.let_go)
    try:
        with running_gateway(config, model=model, sandbox_provider=provider) as served:
            ana = httpx.AsyncClient(base_url=served.url, timeout=TIMEOUT, headers={"x-api-key": "key-ana"})
            bo = httpx.AsyncClient(base_url=served.url, timeout=TIMEOUT, headers={"x-api-key": "key-bo"})
            bo_sdk = get_client(url=served.url, api_key="key-bo", timeout=TIMEOUT)
            try:
                ana_thread, ana_gone = [(await ana.post("/threads", json={})).json()["thread_id"] for _ in range(2)]
                bo_thread = (await bo_sdk.threads.create())["thread_id"]
                bo_gone = (await bo_sdk.threads.create())["thread_id"]
                assert (await bo.get(f"/api/threads/{bo_thread}/files")).status_code == 200  # bo's sandbox exists
                provider.held = {ana_thread, ana_gone}
                watchdog.start()

                # ana deletes a thread (its files' versions need its sandbox), then asks for her
                # other thread's files five ways: more requests than her share of the file pool
                deleting = asyncio.create_task(ana.delete(f"/threads/{ana_gone}"))
                await provider.until(lambda: provider.waiting >= 1, "ana's delete never reached her sandbox")
                paths = ["files", "uploads", "preview", "artifacts/outputs/report.txt", "archive"]
                asking = [asyncio.create_task(ana.get(f"/api/threads/{ana_thread}/{path}")) for path in paths]

                # bo is answered while ana's acquires are held: his thread, his files, health, a delete
                seen: dict[str, bool] = {}
                assert (await bo_sdk.threads.get(bo_thread))["thread_id"] == bo_thread
                seen["GET /threads/{id} (langgraph-sdk)"] = provider.released
                assert (await bo.get(f"/api/threads/{bo_thread}/files")).status_code == 200
                seen["GET /api/threads/{id}/files"] = provider.released
                assert (await bo.get("/ok")).status_code == 200
                seen["GET /ok"] = provider.released
                await bo_sdk.threads.delete(bo_gone)
                seen["DELETE /threads/{id} (langgraph-sdk)"] = provider.released
                late = [request for request, released in seen.items() if released]
                assert not late, f"bo was answered only after ana's sandbox was let go: {late}"

                # ana's stuck requests hold her share of the file pool's threads, and no more
                await provider.until(
                    lambda: provider.waiting == share, f"ana's requests did not take her {share} slots"
                )
                assert (await bo.get(f"/api/threads/{bo_thread}/uploads")).status_code == 200
                assert not provider.released
                assert provider.peak == share, f"{provider.peak} of ana's acquires held threads at once (share {share})"
                assert not deleting.done() and not any(task.done() for task in asking)

                provider.let_go()  # ana's requests go on, and are answered as usual
                assert (await deleting).status_code == 204
                answers = [(await task).status_code for task in asking]
                assert answers == [200, 200, 200, 404, 200], dict(zip(paths, answers, strict=True))
                assert (await ana.get(f"/threads/{ana_gone}")).status_code == 404
                assert (await bo.get(f"/threads/{bo_gone}")).status_code == 404
            finally:
                provider.let_go()
                await ana.aclose()
                await bo.aclose()
                await bo_sdk.aclose()
                model.release()
    finally:
        watchdog.cancel()
        provider.close()
