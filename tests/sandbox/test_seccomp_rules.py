"""The seccomp rules as data: the personality patterns, and the docker profile stating them all."""

from __future__ import annotations

import json
import random

from herdsman.sandbox import seccomp


def _refused(persona: int) -> bool:
    return any(persona & mask == value for mask, value in seccomp._personality_masks())


def test_personality_is_refused_for_every_value_but_dockers_five() -> None:
    rng = random.Random(30)
    samples = [rng.getrandbits(32) for _ in range(20000)]
    samples += [1 << bit for bit in range(32)] + [0xFFFFFFFF ^ (1 << bit) for bit in range(32)]
    samples += list(seccomp.PERSONALITY_ALLOWED) + [0x0040000, 0x0400000, 0x20009, 0x7FFFFFFF]
    wrong = [hex(v) for v in samples if _refused(v) == (v in seccomp.PERSONALITY_ALLOWED)]
    assert wrong == []


def test_the_docker_profile_states_every_rule() -> None:
    profile = json.loads(seccomp.docker_profile())
    stated = set()
    for entry in profile["syscalls"]:
        for name in entry["names"]:
            args = entry.get("args") or [{}]
            for arg in args:
                stated.add((name, entry["errnoRet"], arg.get("index"), arg.get("value"), arg.get("valueTwo")))
    expected = {(r.name, r.errno, *(r.arg or (None, None, None))) for r in seccomp.rules()}
    assert stated == expected
    assert ("fchmodat", 1, 2, 0o4000, 0o4000) in stated and ("openat2", 38, None, None, None) in stated
