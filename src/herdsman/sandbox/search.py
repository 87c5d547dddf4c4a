"""Patterns the model gives the search tools, compiled so that no pattern can hold a core.

- Glob patterns are matched by ``wcmatch`` (``**`` spans folders, hidden files match ``*``)
  against paths relative to the searched folder, while :meth:`ThreadFiles.walk` bounds the
  walk itself (no symlinked folder entered, a cap on entries and time). A pattern without
  ``**`` tells the walk how deep it needs to go.
- Regular expressions run on RE2 (``google-re2``), whose matching time is linear in the text:
  ``(a+)+$`` on a long line costs what a plain search does. RE2 has no backreferences or
  lookaround; a pattern that needs them is refused with a hint to use ``grep -P`` in bash,
  which runs inside the jail under its limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2
from wcmatch import glob as wcglob

from herdsman.sandbox.base import SandboxError

_GLOB_FLAGS = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.BRACE
UNBOUNDED_DEPTH = 1 << 30


@dataclass(frozen=True)
class GlobMatcher:
    """A compiled glob pattern; ``depth`` is how many folder levels a match can lie below the base."""

    pattern: str
    depth: int
    _compiled: Any

    def match(self, relative: str) -> bool:
        """Whether ``relative`` (a path below the searched folder, no leading ``/``) matches."""
        return bool(self._compiled.match(relative))


def compile_glob(pattern: str) -> GlobMatcher:
    """Compile ``pattern`` (relative to the searched folder); refuses ``..`` and empty patterns."""
    pattern = pattern.strip().lstrip("./") if pattern.startswith("./") else pattern.strip()
    if not pattern:
        raise SandboxError("empty glob pattern; use for example **/*.py")
    parts = [p for p in pattern.split("/") if p]
    if ".." in parts:
        raise SandboxError(f"glob pattern {pattern!r} climbs out with '..'; give the folder to search as path instead")
    depth = UNBOUNDED_DEPTH if any("**" in p for p in parts) else len(parts)
    try:
        compiled = wcglob.compile("/".join(parts), flags=_GLOB_FLAGS)
    except Exception as exc:  # noqa: BLE001 - wcmatch raises several kinds for a bad pattern
        raise SandboxError(f"invalid glob pattern {pattern!r}: {exc}") from None
    return GlobMatcher(pattern, depth, compiled)


def compile_regex(pattern: str, ignore_case: bool = False) -> Any:
    """``pattern`` compiled by RE2 (linear-time matching); a clear error when RE2 cannot take it."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise SandboxError(
            "the regular expression holds characters that are not valid text (lone surrogates); use plain UTF-8"
        ) from None
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise SandboxError(
            f"invalid regular expression {pattern!r}: {exc}. This search uses RE2 syntax (no "
            "backreferences or lookaround); for those, run grep -P in bash"
        ) from None
