"""Pick the stream bridge named by ``gateway.stream_bridge``: ``memory`` or ``redis``."""

from __future__ import annotations

from herdsman.config.schema import HerdsmanConfig
from herdsman.runtime.streaming.stream_bridge import MemoryStreamBridge, StreamBridge


def build_stream_bridge(config: HerdsmanConfig) -> StreamBridge:
    """The configured bridge, with the replay limits from ``gateway:``."""
    gw = config.gateway
    if gw.stream_bridge == "redis":
        from herdsman.runtime.streaming.stream_bridge_redis import RedisStreamBridge

        return RedisStreamBridge(
            gw.redis_url or "", max_events=gw.replay_events, retention_seconds=gw.replay_retention_seconds
        )
    return MemoryStreamBridge(
        max_events=gw.replay_events, retention_seconds=gw.replay_retention_seconds, max_bytes=gw.replay_max_bytes
    )
