"""The embedded local model: the default chat model when config.yaml names none.

Qwen2.5-Coder (GGUF) run in-process by llama.cpp through llama-cpp-python, so Herdsman works on
one machine with no API key. The modules:

* :mod:`.weights` - fetch the weights from the package index, join, verify and cache them,
* :mod:`.chat` - :class:`ChatLocalLlama`, the LangChain chat model with tool calling,
* :mod:`.toolcalls` - recovering tool calls from the text the model writes.

llama-cpp-python is an optional dependency (the ``local`` extra) and is imported only when the
model is built or first called.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from herdsman.config.schema import LocalModelConfig
from herdsman.models.local.chat import TOOL_USE_HINT, ChatLocalLlama, ContextWindowError
from herdsman.models.local.toolcalls import ParsedReply, parse_tool_calls

__all__ = [
    "TOOL_USE_HINT",
    "VARIANTS",
    "ChatLocalLlama",
    "ContextWindowError",
    "LocalModelUnavailable",
    "ParsedReply",
    "WeightsError",
    "build_local_model",
    "ensure_weights",
    "llama_cpp_available",
    "parse_tool_calls",
]


_FROM_WEIGHTS = {"VARIANTS", "WeightsError", "ensure_weights"}


def __getattr__(name: str) -> Any:
    # The weights names load on first use, so ``python -m herdsman.models.local.weights`` does
    # not find its module already imported by this package (runpy warns about that).
    if name in _FROM_WEIGHTS:
        from herdsman.models.local import weights

        return getattr(weights, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class LocalModelUnavailable(RuntimeError):
    """The embedded model cannot run here; the message says what to install or configure."""


def llama_cpp_available() -> bool:
    """True if llama-cpp-python can be imported (without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def _require_llama_cpp() -> None:
    if not llama_cpp_available():
        raise LocalModelUnavailable(
            "the embedded local model needs llama-cpp-python, which is not installed; install the "
            "local extra (pip install 'herdsman[local]', which `make run` does), or name a model "
            "under models: in config.yaml"
        )
    try:
        import llama_cpp  # noqa: F401 - imported only to learn whether llama-cpp-python is installed
    except Exception as exc:  # noqa: BLE001 - a broken native build is reported the same way
        raise LocalModelUnavailable(
            f"llama-cpp-python is installed but cannot be loaded ({exc}); reinstall it "
            "(pip install --force-reinstall 'herdsman[local]')"
        ) from exc


def build_local_model(config: LocalModelConfig, progress: bool = True) -> BaseChatModel:
    """The embedded chat model described by ``config`` (the ``local_model:`` section).

    Uses ``config.path`` when set, else the packaged weights for ``config.variant``, fetched into
    the cache on first use (with progress on stderr when ``progress``). The model itself is loaded
    on its first call and shared by every model built with the same path and ``n_ctx``.
    """
    _require_llama_cpp()
    if config.path is not None:
        path = Path(config.path).expanduser()
        if not path.is_file():
            raise LocalModelUnavailable(
                f"local_model.path: {path} is not a file; point it at a GGUF model file "
                "or remove it to use the packaged weights"
            )
        name = path.stem
    else:
        from herdsman.models.local.weights import ensure_weights

        path = ensure_weights(config.variant, config.cache_dir, progress=progress)
        name = f"{config.variant}-instruct"
    return ChatLocalLlama(
        model_path=str(path),
        model_name=name,
        n_ctx=config.n_ctx,
        n_threads=config.n_threads,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        prompt_cache=config.prompt_cache,
        prompt_cache_dir=str(config.prompt_cache_dir) if config.prompt_cache_dir else None,
        repair_tool_calls=config.repair_tool_calls,
        constrained_tool_calls=config.constrained_decoding,
        stop_repetition=config.stop_repetition,
        retry_repeat_penalty=config.retry_repeat_penalty,
        retry_frequency_penalty=config.retry_frequency_penalty,
    )
