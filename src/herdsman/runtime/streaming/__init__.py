"""Streaming: a run's events, published once and read by any number of subscribers (in memory or
through Redis), in LangGraph's SSE and thread-protocol shapes."""
