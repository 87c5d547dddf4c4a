"""The sandbox: a thread's files and shell behind virtual paths, and the tools that use them.

``build_sandbox_provider(config)`` gives the provider named by ``sandbox.provider`` (local,
docker or kubernetes); ``make_sandbox_tools(provider, config.sandbox)`` gives the LangChain tools
(bash, ls, read_file, write_file, str_replace, glob, grep) that find their thread's sandbox
through the run config's ``thread_id``. ``sandbox.limits`` (:class:`Limits`) bounds memory, CPU,
processes, file size and output for every provider.

The docker and kubernetes providers (and their client libraries) load only when one is chosen or
one of their names is imported from here.
"""

from typing import Any

from herdsman.sandbox.base import (
    OUTPUTS,
    SKILLS_ROOT,
    UPLOADS,
    USER_DATA_ROOT,
    WORKSPACE,
    CommandNotAllowedError,
    ExecResult,
    PathEscapeError,
    Sandbox,
    SandboxError,
    SandboxProvider,
)
from herdsman.sandbox.limits import Limits
from herdsman.sandbox.local import LocalSandbox, LocalSandboxProvider
from herdsman.sandbox.paths import InvalidThreadIdError, ThreadPaths, validate_thread_id
from herdsman.sandbox.provider import build_sandbox_provider
from herdsman.sandbox.tools import make_sandbox_tools

__all__ = [
    "OUTPUTS",
    "SKILLS_ROOT",
    "UPLOADS",
    "USER_DATA_ROOT",
    "WORKSPACE",
    "CommandNotAllowedError",
    "DockerEngineError",
    "DockerSandbox",
    "DockerSandboxProvider",
    "ExecResult",
    "InvalidThreadIdError",
    "KubernetesError",
    "KubernetesSandbox",
    "KubernetesSandboxProvider",
    "Limits",
    "LocalSandbox",
    "LocalSandboxProvider",
    "PathEscapeError",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "ThreadPaths",
    "build_sandbox_provider",
    "make_sandbox_tools",
    "validate_thread_id",
]

_LAZY = {
    "DockerEngineError": "herdsman.sandbox.docker",
    "DockerSandbox": "herdsman.sandbox.docker",
    "DockerSandboxProvider": "herdsman.sandbox.docker",
    "KubernetesError": "herdsman.sandbox.kubernetes",
    "KubernetesSandbox": "herdsman.sandbox.kubernetes",
    "KubernetesSandboxProvider": "herdsman.sandbox.kubernetes",
}


def __getattr__(name: str) -> Any:
    """The docker and kubernetes names, imported on first use (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'herdsman.sandbox' has no attribute {name!r}")
