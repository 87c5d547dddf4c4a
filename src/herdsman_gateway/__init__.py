"""Herdsman gateway: the FastAPI app serving the LangGraph API, REST under /api and /metrics.

``create_app(config)`` builds the app; ``serve(config)`` runs it with uvicorn (``herdsman serve``).
"""

from herdsman_gateway.app import create_app

__all__ = ["create_app"]
