"""Herdsman: a super agent harness."""
__version__ = "0.1.0"
