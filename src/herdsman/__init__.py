"""Herdsman: a super agent harness."""

from herdsman.logs import route_to_stdlib

__version__ = "0.1.0"

route_to_stdlib()
