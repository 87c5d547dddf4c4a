"""Herdsman gateway: the FastAPI app (built in a later issue)."""
