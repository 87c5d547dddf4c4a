"""Build the sandbox provider named by ``sandbox.provider`` in config.yaml.

Only ``local`` exists today; docker and kubernetes providers will be added here, behind the
same :class:`~herdsman.sandbox.base.SandboxProvider` protocol.
"""

from __future__ import annotations

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.local import LocalSandboxProvider


def build_sandbox_provider(config: HerdsmanConfig) -> SandboxProvider:
    """The provider for ``config.sandbox.provider`` (``local``: per-thread host directories)."""
    kind = config.sandbox.provider
    if kind == "local":
        return LocalSandboxProvider(config)
    raise ValueError(f"sandbox.provider: unknown provider {kind!r}; use local")
