"""The processed system prompt, kept: llama.cpp's KV state of a prompt's fixed head, saved to disk.

Every new thread starts with the same few thousand tokens (the system prompt and the tools), and
on two cores processing them from scratch took 70-112 s before the first token. llama.cpp keeps
the KV state of the last prompt in memory and reuses its longest common prefix, but a new process,
or any other prompt in between (a title, a sub-agent, another thread's memory), loses it.

So the head of each prompt (up to the end of its system message) is processed once per *prompt
version* and its state saved to a file named by a hash of the model, the context size and the
head's tokens; a later prompt with the same head (a new thread, a new process) restores the file
instead of recomputing it. Files are written atomically and the oldest are removed beyond
``keep``.

A head seen for the first time usually shares most of its tokens with a saved one: the harness
appends what changes (an active skill's instructions, the skills offered, a user's own skills) at
the end of the system message, after thousands of fixed tokens. When the KV cache in memory holds
another prompt (the model's skill pick, a title, another thread), the saved state that shares the
longest prefix with the new head is restored and cut to that prefix (a causal model's KV entries
for a prefix do not depend on what follows), and only the rest is processed: a few hundred tokens
instead of the whole head.

Why hand-written: llama-cpp-python's ``LlamaDiskCache`` saves the state after *every*
completion, keyed by the whole prompt plus the reply (hundreds of MB per call, and the key of a
new thread never matches), and stores the full logits table with each state. What is needed is
one state per system prompt, which the public ``Llama.eval``/``save_state``/``load_state`` give.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from herdsman.logs import get_logger

log = get_logger(__name__)

MAGIC = b"HERDSMAN-KV2\n"
"""Version 2 files carry their model id's digest (a version 1 file is recomputed and replaced)."""
TAG_BYTES = 16
"""The model digest's length in a header."""
MAX_HEAD = 1 << 20
"""More tokens than any context holds: a header claiming more is damaged."""
DEFAULT_KEEP = 8
MIN_TOKENS = 128
"""A head shorter than this is quicker to recompute than to load from disk."""


def default_cache_dir() -> Path:
    """``$HERDSMAN_PROMPT_CACHE``, else ``~/.cache/herdsman/prompt-cache``."""
    env = os.environ.get("HERDSMAN_PROMPT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "herdsman" / "prompt-cache"


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class Outcome:
    """What :meth:`PromptCache.prepare` did: ``memory`` (already in the KV cache), ``disk``
    (restored from a file), ``prefix`` (a saved state sharing its start restored, the rest
    processed, the whole written), ``saved`` (processed now and written), ``skipped`` (too short);
    ``tokens`` in the head, ``computed`` of them processed now."""

    how: str
    tokens: int
    computed: int = 0


class PromptCache:
    """Saved KV states of prompt heads for one model file, in ``directory``."""

    def __init__(self, directory: Path, model_id: str, keep: int = DEFAULT_KEEP, min_tokens: int = MIN_TOKENS) -> None:
        """``model_id`` names the weights and settings a state belongs to (path, size, n_ctx)."""
        self.directory = Path(directory)
        self.model_id = model_id
        self.model_tag = hashlib.sha256(model_id.encode()).digest()[:TAG_BYTES]
        self.keep = keep
        self.min_tokens = min_tokens

    def key(self, head: Sequence[int]) -> str:
        """The file name of ``head``'s state: a hash of the model id and the tokens."""
        digest = hashlib.sha256(self.model_id.encode())
        digest.update(struct.pack(f"<{len(head)}i", *head))
        return digest.hexdigest()[:32] + ".kv"

    def prepare(self, llama: Any, head: Sequence[int]) -> Outcome:
        """Put ``head``'s KV state into ``llama`` (call with the generation lock held).

        After this, ``llama``'s evaluated tokens start with ``head``, so a completion whose
        prompt starts with it only processes the rest.
        """
        head = list(head)
        if len(head) < self.min_tokens:
            return Outcome("skipped", len(head))
        if _in_memory(llama, head) == len(head):
            return Outcome("memory", len(head))
        path = self.directory / self.key(head)
        if self._restore(llama, path, head):
            return Outcome("disk", len(head))
        how = "saved"
        best = self._longest_shared(head, exclude=path)
        if best is not None and best[1] >= _in_memory(llama, head) + self.min_tokens:
            if self._restore(llama, best[0], None):
                how = "prefix"
        shared = _in_memory(llama, head)
        llama.n_tokens = shared  # eval() drops the KV cache past n_tokens, then extends it
        llama.eval(head[shared:])
        self._save(llama, path, head)
        return Outcome(how, len(head), len(head) - shared)

    def _longest_shared(self, head: list[int], exclude: Path) -> tuple[Path, int] | None:
        """The saved state whose tokens share the longest start with ``head``, and how many."""
        best: tuple[Path, int] | None = None
        for path in self.directory.glob("*.kv"):
            tokens = _saved_tokens(path, self.model_tag) if path != exclude else None
            shared = common_prefix(tokens, head) if tokens else 0
            if shared and (best is None or shared > best[1]):
                best = (path, shared)
        return best

    def _restore(self, llama: Any, path: Path, head: list[int] | None) -> bool:
        """Load ``path``'s state into ``llama``; ``head``: the tokens it must hold (None: any)."""
        try:
            data = path.read_bytes()
        except OSError:
            return False
        try:
            tokens, state = _decode(data, self.model_tag)
            if head is not None and tokens != head:
                raise ValueError("tokens differ from the file's name")
            llama.load_state(_as_llama_state(llama, tokens, state))
        except Exception as exc:  # noqa: BLE001 - a bad file is recomputed, never fatal
            log.warning("prompt_cache_unusable", file=path.name, error=str(exc), action="recomputing")
            llama.reset()
            _unlink(path)
            return False
        _touch(path)
        return True

    def _save(self, llama: Any, path: Path, head: list[int]) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            state = llama.save_state()
            payload = _encode(self.model_tag, head, state.llama_state[: state.llama_state_size])
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".kv-")
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            os.replace(tmp, path)
            self._prune(keep=path)
        except OSError as exc:  # a read-only or full disk only costs speed
            log.warning("prompt_cache_not_saved", error=str(exc))

    def _prune(self, keep: Path) -> None:
        """Remove this model's oldest states beyond ``keep`` (another model's are its own to prune;
        a file of no model, an older format's, counts as this model's)."""
        files = sorted(
            (p for p in self.directory.glob("*.kv") if _tag_of(p) in (self.model_tag, None)),
            key=lambda p: _mtime(p),
            reverse=True,
        )
        for old in [p for p in files if p != keep][max(0, self.keep - 1) :]:
            _unlink(old)


def _encode(tag: bytes, tokens: list[int], state: bytes) -> bytes:
    header = MAGIC + tag + struct.pack("<I", len(tokens))
    return header + struct.pack(f"<{len(tokens)}i", *tokens) + bytes(state)


def _in_memory(llama: Any, head: Sequence[int]) -> int:
    """How many of ``head``'s first tokens ``llama``'s KV cache holds now."""
    return common_prefix(llama.input_ids[: llama.n_tokens].tolist(), head)


HEADER = len(MAGIC) + TAG_BYTES + 4
"""A saved state's header before its tokens: the magic, the model digest, the token count."""


def _header(data: bytes) -> tuple[bytes, int] | None:
    """The model digest and token count at the start of ``data`` (None: not this format, or a
    count beyond any context)."""
    if len(data) < HEADER or not data.startswith(MAGIC):
        return None
    (count,) = struct.unpack_from("<I", data, HEADER - 4)
    return (data[len(MAGIC) : HEADER - 4], count) if count <= MAX_HEAD else None


def _read_header(path: Path) -> tuple[bytes, int] | None:
    try:
        with path.open("rb") as f:
            return _header(f.read(HEADER))
    except OSError:
        return None


def _tag_of(path: Path) -> bytes | None:
    """The model digest in a saved state's header (None: an older format, or unreadable)."""
    header = _read_header(path)
    return header[0] if header else None


def _saved_tokens(path: Path, tag: bytes) -> list[int] | None:
    """The tokens a saved state of the model ``tag`` names holds, read from its header only
    (None: another model's, an older format, or no readable header)."""
    try:
        with path.open("rb") as f:
            header = _header(f.read(HEADER))
            if header is None or header[0] != tag:
                return None
            raw = f.read(4 * header[1])
    except OSError:
        return None
    return list(struct.unpack(f"<{header[1]}i", raw)) if len(raw) == 4 * header[1] else None


def _decode(data: bytes, tag: bytes) -> tuple[list[int], bytes]:
    header = _header(data)
    if header is None:
        raise ValueError("not a prompt cache file of this version")
    if header[0] != tag:
        raise ValueError("a state of another model")
    count = header[1]
    tokens = list(struct.unpack_from(f"<{count}i", data, HEADER))
    return tokens, data[HEADER + 4 * count :]


def _as_llama_state(llama: Any, tokens: list[int], state: bytes) -> Any:
    """A ``LlamaState`` for ``load_state``: the tokens, the KV bytes, and a one-row score table
    (it broadcasts; the scores are recomputed by the next evaluation anyway)."""
    import numpy as np
    from llama_cpp import LlamaState

    input_ids = np.zeros(llama.input_ids.shape, dtype=llama.input_ids.dtype)
    input_ids[: len(tokens)] = tokens
    return LlamaState(
        input_ids=input_ids,
        scores=np.zeros((1, llama.scores.shape[1]), dtype=llama.scores.dtype),
        n_tokens=len(tokens),
        llama_state=state,
        llama_state_size=len(state),
        seed=getattr(llama, "_seed", 0),
    )


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
