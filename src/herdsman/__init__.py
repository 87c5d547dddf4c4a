"""Herdsman: a super agent harness.

Importing it configures nothing global (no structlog or logging set-up: see :mod:`herdsman.logs`).
"""

__version__ = "0.1.0"
