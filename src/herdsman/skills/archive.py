"""``.skill`` archives: a zip of one skill folder, unpacked under limits and packed back.

Unpacking an archive someone sent is the classic bomb and zip-slip target, so every member is
checked before a byte of it is written: a plain relative name (no absolute path, drive letter,
backslash or ``..``), a regular file or folder (no symlink, device or fifo), not encrypted, not a
duplicate; at most :attr:`PackageLimits.max_files` members, each at most ``max_file_bytes`` and
all together at most ``max_total_bytes`` as declared *and* as actually read (the data is
streamed in chunks and counted, so a header that lies does not help), and no member inflating
more than ``max_ratio`` times. :func:`unpack_limited` runs the unpacking in a child process
(this file run as a script, ``python -I -S``: it imports only the standard library, so the child
starts in milliseconds) that limits its own memory, CPU time and file size first (as
:mod:`herdsman.tools.documents` does for documents): a bug in a decompressor costs the child,
never the gateway.

Written by hand: :mod:`zipfile` and :mod:`shutil.unpack_archive` extract without any of these
checks, and no maintained library applies them while streaming.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import IO

SKILL_FILE = "SKILL.md"  # herdsman.skills.model.SKILL_FILE; not imported: the child imports only the standard library
ARCHIVE_SUFFIX = ".skill"
CHUNK = 64 * 1024
CHILD_MEMORY_MB = 512
CHILD_CPU_SECONDS = 60
CHILD_SECONDS = 90.0


@dataclass(frozen=True)
class PackageLimits:
    """What a skill package may hold (archive, folder or Git checkout alike)."""

    max_total_bytes: int = 50 * 1024 * 1024
    max_file_bytes: int = 20 * 1024 * 1024
    max_files: int = 500
    max_ratio: int = 100  # uncompressed / compressed size of one archive member
    ratio_floor_bytes: int = 1024 * 1024  # members smaller than this may compress as well as they like
    max_archive_bytes: int = 30 * 1024 * 1024  # under the gateway's default request bound (32 MiB)


class PackageError(ValueError):
    """A package that cannot be installed: says what is wrong with it and what to do."""


class Budget:
    """Files and bytes of one package counted against its limits; PackageError past one."""

    def __init__(self, limits: PackageLimits) -> None:
        """Start counting from nothing."""
        self.limits = limits
        self.files = 0
        self.total = 0

    def file(self) -> None:
        """Count one more file."""
        self.files += 1
        if self.files > self.limits.max_files:
            raise PackageError(
                f"more than {self.limits.max_files} files; a skill may hold at most {self.limits.max_files}"
            )

    def grow(self, name: str, size: int, added: int) -> None:
        """``name`` has ``size`` bytes so far, ``added`` of them new."""
        self.total += added
        if size > self.limits.max_file_bytes:
            raise PackageError(
                f"{name!r} is larger than {self.limits.max_file_bytes} bytes; one file may be at most "
                f"{self.limits.max_file_bytes}"
            )
        if self.total > self.limits.max_total_bytes:
            raise PackageError(f"the files add up to more than {self.limits.max_total_bytes} bytes; refused")

    def copy(
        self, name: str, src: IO[bytes], out: IO[bytes], declared: int | None = None, compressed: int | None = None
    ) -> None:
        """Copy ``src`` to ``out`` in chunks, counting each; a member that outgrows its ``declared``
        size, or inflates past the ratio from its ``compressed`` size, is a bomb."""
        size = 0
        for chunk in iter(lambda: src.read(CHUNK), b""):
            size += len(chunk)
            if declared is not None and size > declared:
                raise PackageError(f"{name!r} holds more data than its header says: an archive bomb; refused")
            self.grow(name, size, len(chunk))
            if compressed is not None:
                _check_ratio(name, size, compressed, self.limits)
            out.write(chunk)


def check_member_name(name: str) -> PurePosixPath:
    """``name`` as a relative path that stays inside the skill folder; raises PackageError."""
    if not name or "\\" in name or "\x00" in name:
        raise PackageError(f"{name!r}: member names must be plain relative paths with '/' separators")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise PackageError(f"{name!r}: absolute paths are refused; zip the skill folder's contents with relative names")
    path = PurePosixPath(name)
    if any(part == ".." for part in path.parts):
        raise PackageError(f"{name!r}: '..' would write outside the skill folder; refused")
    if any(part in ("", ".") for part in name.rstrip("/").split("/")):
        raise PackageError(f"{name!r}: empty or '.' path parts are refused")
    return path


def _kind(info: zipfile.ZipInfo) -> str:
    """'dir', 'file', or what else the member claims to be (from its Unix mode, if any)."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if info.is_dir() and kind in (0, stat.S_IFDIR):
        return "dir"
    if kind in (0, stat.S_IFREG):
        return "file"
    return {
        stat.S_IFLNK: "symlink",
        stat.S_IFCHR: "device",
        stat.S_IFBLK: "device",
        stat.S_IFIFO: "fifo",
        stat.S_IFSOCK: "socket",
        stat.S_IFDIR: "dir",
    }.get(kind, "special file")


def _prefix(names: list[str]) -> str:
    """The folder every member sits in when the archive holds one top folder with the SKILL.md
    ("" when SKILL.md is at the top); raises PackageError when there is no SKILL.md."""
    if SKILL_FILE in names:
        return ""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1:
        top = tops.pop()
        if f"{top}/{SKILL_FILE}" in names:
            return top + "/"
    raise PackageError(
        f"no {SKILL_FILE} at the top of the archive or of its one folder; zip the skill folder "
        "(herdsman skills export NAME writes one)"
    )


def check_members(infos: list[zipfile.ZipInfo], limits: PackageLimits) -> str:
    """Check every member of an archive before anything is written; returns the folder prefix
    to strip. Raises PackageError naming the first member at fault."""
    budget = Budget(limits)
    seen: set[str] = set()
    for info in infos:
        check_member_name(info.filename)
        kind = _kind(info)
        if kind not in ("file", "dir"):
            raise PackageError(f"{info.filename!r} is a {kind}; only regular files and folders are installed")
        if info.flag_bits & 0x1:
            raise PackageError(f"{info.filename!r} is encrypted; send an archive without a password")
        key = info.filename.rstrip("/")
        if key in seen:
            raise PackageError(f"{info.filename!r} appears twice in the archive; refused")
        seen.add(key)
        if kind == "file":
            budget.file()
            budget.grow(info.filename, info.file_size, info.file_size)
            _check_ratio(info.filename, info.file_size, info.compress_size, limits)
    return _prefix([i.filename.rstrip("/") for i in infos])


def _check_ratio(name: str, size: int, compressed: int, limits: PackageLimits) -> None:
    if size > limits.ratio_floor_bytes and size > limits.max_ratio * max(compressed, 1):
        raise PackageError(
            f"{name!r} inflates {size // max(compressed, 1)} times (limit {limits.max_ratio}): an archive bomb; refused"
        )


def unpack(archive: Path, dest: Path, limits: PackageLimits = PackageLimits()) -> int:
    """Extract the skill folder of ``archive`` into the empty folder ``dest`` (checked as the
    module docstring says); returns the number of files written."""
    try:
        handle = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise PackageError(f"not a zip archive ({exc}); a .skill file is a zip of the skill folder") from None
    with handle:
        infos = handle.infolist()
        prefix = check_members(infos, limits)
        budget = Budget(limits)
        for info in infos:
            name = info.filename[len(prefix) :] if info.filename.startswith(prefix) else info.filename
            if not name.rstrip("/"):
                continue
            target = dest.joinpath(*PurePosixPath(name).parts)
            if _kind(info) == "dir":
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            budget.file()
            with handle.open(info) as src, open(target, "xb") as out:  # x: never through a link
                budget.copy(info.filename, src, out, info.file_size, info.compress_size)
            os.chmod(target, 0o755 if (info.external_attr >> 16) & 0o111 else 0o644)
        return budget.files


def unpack_limited(archive: Path, dest: Path, limits: PackageLimits = PackageLimits()) -> int:
    """:func:`unpack` in a child process under memory, CPU, file-size and wall-time limits."""
    with tempfile.TemporaryDirectory(prefix="herdsman-unpack-") as tmp:
        answer_file = Path(tmp) / "answer.json"
        argv = [
            sys.executable,
            "-I",
            "-S",
            __file__,
            str(archive),
            str(dest),
            str(answer_file),
            json.dumps(asdict(limits)),
        ]
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=CHILD_SECONDS,
                env={"PYTHONDONTWRITEBYTECODE": "1"},
            )
        except subprocess.TimeoutExpired:
            raise PackageError(f"unpacking took longer than {CHILD_SECONDS:g} s; refused") from None
        if not answer_file.exists():
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            raise PackageError(f"the archive could not be unpacked ({tail[0][:200]}); refused")
        answer = json.loads(answer_file.read_text(encoding="utf-8"))
    if "error" in answer:
        raise PackageError(answer["error"])
    return int(answer["files"])


def walk_files(folder: Path) -> Iterator[tuple[PurePosixPath, Path]]:
    """Every regular file under ``folder`` as (relative name, path), sorted, never following a
    link; a symlink or special file raises PackageError. ``.git`` at the top and
    ``__pycache__`` folders are left out."""
    stack = [(PurePosixPath(), folder)]
    while stack:
        rel, here = stack.pop()
        with os.scandir(here) as entries:
            items = sorted(entries, key=lambda e: e.name)
        for entry in reversed(items):
            name = rel / entry.name
            if (rel == PurePosixPath() and entry.name == ".git") or entry.name == "__pycache__":
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise PackageError(f"{str(name)!r} is a symbolic link; links are refused (copy the file in instead)")
            if stat.S_ISDIR(st.st_mode):
                stack.append((name, Path(entry.path)))
            elif stat.S_ISREG(st.st_mode):
                yield name, Path(entry.path)
            else:
                raise PackageError(f"{str(name)!r} is a special file (device, fifo or socket); refused")


def pack(folder: Path, archive: Path) -> int:
    """Write ``folder`` as a ``.skill`` archive (members under ``<folder name>/``, modes kept);
    returns the number of files. Links and special files raise PackageError."""
    count = 0
    tmp = archive.with_name(archive.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for rel, path in sorted(walk_files(folder)):
            info = zipfile.ZipInfo(f"{folder.name}/{rel}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | (0o755 if os.access(path, os.X_OK) else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as src, out.open(info, "w") as dst:
                for chunk in iter(lambda: src.read(CHUNK), b""):
                    dst.write(chunk)
            count += 1
    os.replace(tmp, archive)
    return count


def _child(archive: str, dest: str, answer_file: str, limits_json: str) -> int:
    """The child's work: limit this process, unpack, write the answer as JSON."""
    limits = PackageLimits(**json.loads(limits_json))
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_MB * 1024 * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes + CHUNK,) * 2)
    try:
        answer: dict[str, object] = {"files": unpack(Path(archive), Path(dest), limits)}
    except PackageError as exc:
        answer = {"error": str(exc)}
    except OSError as exc:  # e.g. a member that is a file and a folder at once
        answer = {"error": f"the archive could not be unpacked ({exc.strerror or exc}); refused"}
    except MemoryError:
        answer = {"error": f"unpacking needed more than {CHILD_MEMORY_MB} MB of memory; refused"}
    with open(answer_file, "w", encoding="utf-8") as fh:
        json.dump(answer, fh)
    return 0


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:5]))
