"""Build the sandbox provider named by ``sandbox.provider`` in config.yaml.

``local`` keeps each thread's files in a host directory and jails commands with bubblewrap;
``docker`` runs each thread's commands in its own container; ``kubernetes`` in its own pod. All
three satisfy :class:`~herdsman.sandbox.base.SandboxProvider`. The docker and kubernetes modules
are imported only when chosen, so their client libraries stay optional.
"""

from __future__ import annotations

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox.base import SandboxProvider
from herdsman.sandbox.local import LocalSandboxProvider


def build_sandbox_provider(config: HerdsmanConfig) -> SandboxProvider:
    """The provider for ``config.sandbox.provider`` (local, docker or kubernetes)."""
    kind = config.sandbox.provider
    if kind == "local":
        return LocalSandboxProvider(config)
    if kind == "docker":
        from herdsman.sandbox.docker import DockerSandboxProvider

        return DockerSandboxProvider(config)
    if kind == "kubernetes":
        from herdsman.sandbox.kubernetes import KubernetesSandboxProvider

        return KubernetesSandboxProvider(config)
    raise ValueError(f"sandbox.provider: unknown provider {kind!r}; use local, docker or kubernetes")
