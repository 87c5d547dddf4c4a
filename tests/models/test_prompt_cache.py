"""The saved system-prompt states (``herdsman.models.local.prompt_cache``) on a stand-in for
llama.cpp that records which tokens it processed: a new head that shares its start with a saved
one processes only the rest, even after another prompt took the KV cache; the KV cache then holds
exactly the new head. The real model answering the same from a restored state is tested in
``tests/integration/test_local_model.py``."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from herdsman.models.local.prompt_cache import PromptCache

pytest.importorskip("llama_cpp", reason="llama-cpp-python gives the state type the cache builds")

N_CTX = 4096


class FakeLlama:
    """What the cache uses of ``llama_cpp.Llama``: the evaluated tokens, ``eval``, ``reset`` and
    the state calls. Its "KV cache" is the list of tokens processed at each position."""

    def __init__(self) -> None:
        self.input_ids = np.zeros(N_CTX, dtype=np.intc)
        self.scores = np.zeros((N_CTX, 8), dtype=np.single)
        self.n_tokens = 0
        self.kv: list[int] = []
        self.processed = 0

    def eval(self, tokens: list[int]) -> None:
        self.kv = self.kv[: self.n_tokens] + list(tokens)  # llama.cpp drops the cache past n_tokens
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.processed += len(tokens)

    def reset(self) -> None:
        self.n_tokens = 0

    def save_state(self) -> Any:
        kv = struct.pack(f"<{self.n_tokens}i", *self.kv[: self.n_tokens])
        return type("State", (), {"llama_state": kv, "llama_state_size": len(kv)})()

    def load_state(self, state: Any) -> None:
        self.kv = list(struct.unpack(f"<{len(state.llama_state) // 4}i", state.llama_state))
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens
        assert self.kv == self.input_ids[: self.n_tokens].tolist()

    def other_prompt(self, tokens: list[int]) -> None:
        """Another completion (the skill pick, a title) takes the KV cache."""
        self.n_tokens = 0
        self.eval(tokens)


BASE = list(range(1000, 4000))  # the fixed system prompt and tools
SKILL_A = list(range(50_000, 50_300))  # an active skill's instructions, appended
SKILL_B = list(range(60_000, 60_200))
PICK = list(range(70_000, 70_400))


def _prepare(cache: PromptCache, llama: FakeLlama, head: list[int]) -> tuple[str, int]:
    before = llama.processed
    outcome = cache.prepare(llama, head)
    assert llama.kv[: llama.n_tokens] == head and llama.n_tokens == len(head)  # exactly the head
    assert outcome.computed == llama.processed - before
    return outcome.how, outcome.computed


def test_a_new_head_after_another_prompt_processes_only_what_the_saved_one_lacks(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, "model")
    llama = FakeLlama()
    assert _prepare(cache, llama, BASE) == ("saved", len(BASE))
    llama.other_prompt(PICK)
    assert _prepare(cache, llama, BASE + SKILL_A) == ("prefix", len(SKILL_A))
    llama.other_prompt(PICK)
    assert _prepare(cache, llama, BASE + SKILL_B) == ("prefix", len(SKILL_B))
    llama.other_prompt(PICK)
    assert _prepare(cache, llama, BASE + SKILL_A) == ("disk", 0)
    assert _prepare(cache, llama, BASE + SKILL_A) == ("memory", 0)
    # what memory already shares is not loaded again: only the new end is processed
    assert _prepare(cache, llama, BASE + SKILL_A + SKILL_B) == ("saved", len(SKILL_B))
    assert len(list(tmp_path.glob("*.kv"))) == 4


def test_a_damaged_or_foreign_file_is_never_a_prefix_and_nothing_fails(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, "model")
    llama = FakeLlama()
    cache.prepare(llama, BASE)
    saved = next(tmp_path.glob("*.kv"))
    (tmp_path / "junk.kv").write_bytes(b"not a state")
    saved.write_bytes(saved.read_bytes()[:-5])  # the header holds the tokens, the state is cut
    llama.other_prompt(PICK)
    assert _prepare(cache, llama, BASE + SKILL_A) == ("saved", len(BASE) + len(SKILL_A))  # recomputed
    assert not saved.exists()  # the unusable file is gone
    llama.other_prompt(PICK)
    assert _prepare(cache, llama, BASE + SKILL_B) == ("prefix", len(SKILL_B))  # from the new file


def test_another_models_states_in_the_same_folder_are_never_loaded_nor_removed(tmp_path: Path) -> None:
    """Two models (a 0.5B and a 1.5B Qwen share a tokenizer) may keep states in one folder: the
    prefix search reads only this model's, and leaves the other's files alone."""
    small, large = PromptCache(tmp_path, "qwen-0.5b:4096"), PromptCache(tmp_path, "qwen-1.5b:4096")
    other = FakeLlama()
    small.prepare(other, BASE)
    theirs = next(tmp_path.glob("*.kv"))
    llama = FakeLlama()
    assert _prepare(large, llama, BASE + SKILL_A) == ("saved", len(BASE) + len(SKILL_A))
    assert theirs.exists()
    hostile = tmp_path / "huge.kv"
    hostile.write_bytes(b"HERDSMAN-KV2\n" + large.model_tag + b"\xff\xff\xff\xff")  # claims 4 billion tokens
    llama.other_prompt(PICK)
    assert _prepare(large, llama, BASE + SKILL_B) == ("prefix", len(SKILL_B))


def test_pruning_keeps_to_its_own_models_states(tmp_path: Path) -> None:
    small, large = PromptCache(tmp_path, "qwen-0.5b:4096", keep=2), PromptCache(tmp_path, "qwen-1.5b:4096", keep=2)
    small.prepare(FakeLlama(), BASE)
    theirs = next(tmp_path.glob("*.kv"))
    llama = FakeLlama()
    for extra in (SKILL_A, SKILL_B, PICK):
        large.prepare(llama, BASE + extra)
    assert theirs.exists() and len(list(tmp_path.glob("*.kv"))) == 3  # two of the large model's, one of the small's
