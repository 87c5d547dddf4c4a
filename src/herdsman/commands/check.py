"""Deeper checks than validation, for ``herdsman config check``.

Validation (``loader.py``) proves the YAML has the right shape. These checks try what a run
would do first: import each model class, build it (catching a missing API key), and reach each
``base_url``. Each problem names its YAML path and the fix.
"""

from __future__ import annotations

import importlib.util
import socket
from urllib.parse import urlparse

from herdsman.config.loader import ConfigProblem
from herdsman.config.schema import EMBEDDED_MODEL_NAME, HerdsmanConfig
from herdsman.models.factory import ModelConfigError, build_model
from herdsman.sandbox import netns


def check_base_url(url: str, timeout: float = 2.0) -> str | None:
    """``None`` when a TCP connection to ``url``'s host and port succeeds, else why not."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"{url!r} is not an http(s) URL; write for example https://api.example.com/v1"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"cannot reach {parsed.hostname}:{port} ({exc.strerror or exc}); check the URL and the network"


def check_models(config: HerdsmanConfig, probe_network: bool = True) -> list[ConfigProblem]:
    """Problems with the ``models:`` entries and the embedded model."""
    problems: list[ConfigProblem] = []
    for index, entry in enumerate(config.models):
        where = f"models.{index}"
        try:
            build_model(entry, where)
        except ModelConfigError as exc:
            problems.append(ConfigProblem(where, str(exc).removeprefix(f"{where} ").lstrip(": ")))
        if entry.base_url and probe_network:
            reason = check_base_url(entry.base_url)
            if reason:
                problems.append(ConfigProblem(f"{where}.base_url", reason))
    uses_embedded = EMBEDDED_MODEL_NAME in {config.lead_model_name(), *(n for _, n in config.model_references())}
    if uses_embedded and importlib.util.find_spec("llama_cpp") is None:
        problems.append(
            ConfigProblem(
                "models",
                "no model is configured, so the embedded local model is used, but llama-cpp-python is "
                "not installed; run 'make run' or pip install 'herdsman[local]', or add a model under models:",
            )
        )
    return problems


def check_sandbox(config: HerdsmanConfig) -> list[ConfigProblem]:
    """Problems with ``sandbox:``: a local jail asked for network that cannot have its own."""
    sandbox = config.sandbox
    if sandbox.provider != "local" or not sandbox.network or sandbox.isolation == "none":
        return []
    stack = netns.stack_status()
    return [] if stack.available else [ConfigProblem("sandbox.network", netns.refusal(stack))]


def unenforced_sandbox_limits(config: HerdsmanConfig) -> list[str]:
    """The ``sandbox.limits`` this host cannot enforce for the local provider (warnings, not
    problems: commands still run, under rlimits); empty for docker and kubernetes."""
    if config.sandbox.provider != "local":
        return []
    from herdsman.sandbox.bwrap import bwrap_status, supports_tmpfs_size
    from herdsman.sandbox.limits import Limits, host_groups, unenforced_limits

    found = unenforced_limits(Limits.from_config(config.sandbox), host_groups())
    status = bwrap_status()
    if config.sandbox.limits.tmp_mb and status.available and status.path and not supports_tmpfs_size(status.path):
        found.append("sandbox.limits.tmp_mb is not enforced: this bubblewrap has no --size (0.8 or later needed)")
    return found


def check_config(config: HerdsmanConfig, probe_network: bool = True) -> list[ConfigProblem]:
    """Every problem found beyond validation (empty when the config is ready to run)."""
    return check_models(config, probe_network) + check_sandbox(config)
