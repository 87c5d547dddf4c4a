"""New requests first: runs wait between steps while requests wait for their first answer."""

from __future__ import annotations

import asyncio

from herdsman_gateway.pacing import CountRequests, RequestsFirst


async def _spin(times: int = 20) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


async def test_pause_returns_at_once_without_waiting_requests() -> None:
    tracker = RequestsFirst(max_pause=60)
    await asyncio.wait_for(tracker.pause(), 5)


async def test_pause_waits_until_the_waiting_request_is_answered() -> None:
    tracker = RequestsFirst(max_pause=60)
    tracker.started()
    pause = asyncio.create_task(tracker.pause())
    await _spin()
    assert not pause.done()  # a request is waiting: the run steps aside
    tracker.answered()
    await asyncio.wait_for(pause, 5)


async def test_pause_is_bounded_by_max_pause() -> None:
    tracker = RequestsFirst(max_pause=0.01)
    tracker.started()  # never answered
    await asyncio.wait_for(tracker.pause(), 5)  # returns anyway: runs are slowed, never stopped


async def test_the_middleware_counts_a_request_until_its_first_body_bytes() -> None:
    tracker = RequestsFirst(max_pause=60)
    seen: list[int] = []
    release = asyncio.Event()

    async def app(scope, receive, send):
        seen.append(tracker.waiting)  # counted while the handler works
        await send({"type": "http.response.start", "status": 200, "headers": []})
        seen.append(tracker.waiting)  # headers alone are no answer yet
        await send({"type": "http.response.body", "body": b"event: metadata\n\n", "more_body": True})
        seen.append(tracker.waiting)  # the first event went out
        await release.wait()  # a stream that stays open
        await send({"type": "http.response.body", "body": b""})

    async def send(message):
        pass

    request = asyncio.create_task(CountRequests(app, tracker)({"type": "http"}, None, send))
    await _spin()
    assert seen == [1, 1, 0] and tracker.waiting == 0
    release.set()
    await request
    assert tracker.waiting == 0


async def test_a_request_that_waits_on_purpose_stops_counting_after_max_pause() -> None:
    tracker = RequestsFirst(max_pause=0.2)
    finish = asyncio.Event()

    async def app(scope, receive, send):  # like runs/wait: answers only when the run ends
        await finish.wait()

    async def send(message):
        pass

    request = asyncio.create_task(CountRequests(app, tracker)({"type": "http"}, None, send))
    await _spin()
    assert tracker.waiting == 1
    for _ in range(500):
        if tracker.waiting == 0:
            break
        await asyncio.sleep(0.01)
    assert tracker.waiting == 0  # runs are no longer held back by it
    finish.set()
    await request
    assert tracker.waiting == 0  # and it is not uncounted twice


async def test_non_http_scopes_pass_through() -> None:
    tracker = RequestsFirst(max_pause=60)
    called = []

    async def app(scope, receive, send):
        called.append(scope["type"])

    await CountRequests(app, tracker)({"type": "lifespan"}, None, None)
    assert called == ["lifespan"] and tracker.waiting == 0


async def test_pause_waits_for_a_quiet_gap_after_the_last_arrival() -> None:
    tracker = RequestsFirst(max_pause=60, quiet=60)
    tracker.started()
    tracker.answered()  # answered, but the next request of a burst may be on its way
    pause = asyncio.create_task(tracker.pause())
    await _spin()
    assert not pause.done()
    pause.cancel()


async def test_pause_returns_once_arrivals_have_stopped() -> None:
    tracker = RequestsFirst(max_pause=60, quiet=0.01)
    tracker.started()
    tracker.answered()
    await asyncio.wait_for(tracker.pause(), 5)  # 10 ms without an arrival: the run goes on


async def test_a_quiet_gap_is_bounded_by_max_pause() -> None:
    tracker = RequestsFirst(max_pause=0.01, quiet=60)
    tracker.started()
    tracker.answered()
    await asyncio.wait_for(tracker.pause(), 5)  # requests keep coming: runs are slowed, never stopped


async def test_without_quiet_an_answered_burst_holds_nothing_back() -> None:
    tracker = RequestsFirst(max_pause=60)
    tracker.started()
    tracker.answered()
    await asyncio.wait_for(tracker.pause(), 5)


def test_only_a_process_that_serves_and_executes_runs_paces_them(tmp_path) -> None:
    """Pacing is there only where runs and requests share a loop (a gateway with in-process
    workers, the default); an accept-only gateway (``runs.workers: 0``) and ``herdsman worker``
    have none: nothing of theirs waits on the other."""
    from herdsman_gateway.app import create_app
    from tests.gateway.gateway_support import scripted_model
    from tests.support import make_config

    def paced(app) -> bool:
        return any(m.cls is CountRequests for m in app.user_middleware)

    assert paced(create_app(make_config(tmp_path), model=scripted_model()))
    accept_only = make_config(
        tmp_path,
        runs={"workers": 0},
        checkpointer={"type": "sqlite"},
        gateway={"stream_bridge": "redis", "redis_url": "redis://127.0.0.1:1"},
    )  # not opened here
    assert not paced(create_app(accept_only, model=scripted_model()))
    assert not paced(create_app(make_config(tmp_path), model=scripted_model(), serve_requests=False))
    assert not paced(create_app(make_config(tmp_path, gateway={"requests_first_ms": 0}), model=scripted_model()))
