"""Replay logs in memory are bounded by bytes as well as by count."""

from __future__ import annotations

import asyncio

from herdsman.runtime.streaming.bounded_log import BoundedLog
from herdsman.runtime.streaming.protocol_events import ProtocolEvent
from herdsman.runtime.streaming.stream_bridge import MemoryStreamBridge
from herdsman.runtime.streaming.thread_events import EventFilter, ThreadEventLog


def test_the_oldest_entries_go_first_past_either_bound() -> None:
    log: BoundedLog[int] = BoundedLog(max_items=5, max_bytes=100)
    for n in range(10):
        log.append(n, 10)
    assert list(log) == [5, 6, 7, 8, 9] and log.bytes == 50
    log.append(10, 80)
    assert list(log) == [8, 9, 10] and log.bytes == 100
    log.append(11, 500)  # larger than the budget alone: the newest always stays
    assert list(log) == [11] and log[0] == 11 and len(log) == 1


async def test_a_threads_protocol_log_keeps_to_its_byte_budget() -> None:
    """A thread whose runs stream big state snapshots keeps only the newest events that fit;
    a reader from the start gets those, numbered as before."""
    log = ThreadEventLog("t", runs=None, bridge=MemoryStreamBridge(), max_bytes=2_000_000)  # type: ignore[arg-type]
    for n in range(100):
        log._append("run-1", [ProtocolEvent("values", (), {"n": n})], source_bytes=100_000)
    assert log.seq == 100 and 15 <= len(log.events) <= 20 and log.events.bytes <= 2_000_000

    async def first_event():
        async for event in log.read(0, EventFilter(channels=frozenset({"values"}))):
            return event

    event = await asyncio.wait_for(first_event(), 5)
    assert event["seq"] == 100 - len(log.events) + 1 and event["params"]["data"] == {"n": event["seq"] - 1}
