"""Install a skill from a ``.skill`` archive, a folder or a Git repository; export one.

Nothing lands in the skills folder before the whole package passed its checks: it is first
unpacked or copied into a hidden staging folder beside the target (``custom/.install-*``, which
discovery skips), under :class:`~herdsman.skills.archive.PackageLimits` and with no link or
special file let through; then its SKILL.md is parsed with the same checks as every skill, its
Python scripts are compiled (in a child process with limits), and only then is the folder
renamed into place (``custom/<name>`` for everyone, ``users/<user>/<name>`` for one user). A
name that is taken is refused unless ``replace``; a replaced skill is swapped out by a rename
too, so a reader sees the old skill or the new one, never a mix.

Git repositories are cloned with the ``git`` command (``--depth 1``, no submodules, no prompt,
only the protocols the caller allows) into a temporary folder outside the skills folder, then
copied in as a folder (without ``.git``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from herdsman.logs import get_logger
from herdsman.skills.archive import (
    CHILD_SECONDS,
    Budget,
    PackageError,
    PackageLimits,
    pack,
    unpack_limited,
    walk_files,
)
from herdsman.skills.catalog import load_skills, user_folder
from herdsman.skills.model import SKILL_FILE, Skill, SkillError
from herdsman.skills.parse import parse_skill_file, parse_skill_text

log = get_logger(__name__)

STAGING_PREFIX = ".install-"
GIT_SECONDS = 120.0
ALL_GIT_PROTOCOLS = ("file", "https", "http", "ssh", "git")
USER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")  # api_keys[].user, or user-<hash>
_URL_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


class SkillExistsError(PackageError):
    """The skill's name is taken (and ``replace`` was not asked for)."""


@dataclass(frozen=True)
class Installed:
    """What an install did: the skill as installed, whether it replaced one, its file count."""

    skill: Skill
    replaced: bool
    files: int


def install_base(root: Path, user: str | None) -> Path:
    """Where installs go: ``<root>/custom`` (everyone) or ``<root>/users/<user>`` (one user)."""
    if user is None:
        return root / "custom"
    if not USER_RE.fullmatch(user):
        raise PackageError(f"{user!r} cannot name a user's skills folder")
    return user_folder(root, user)


def is_git_url(source: str) -> bool:
    """Whether ``source`` is a URL (``file://``, ``https://``, ``user@host:path``...) rather than a path."""
    return bool(_URL_RE.match(source))


def install_skill(
    source: str | Path,
    root: Path,
    *,
    user: str | None = None,
    replace: bool = False,
    limits: PackageLimits = PackageLimits(),
    git_protocols: tuple[str, ...] = ALL_GIT_PROTOCOLS,
) -> Installed:
    """Install the skill at ``source`` (archive file, folder, or Git URL) under ``root``.

    ``user`` None installs it for everyone, else for that user only. Raises PackageError (the
    package is refused) or SkillError (its SKILL.md is invalid); nothing is written then.
    """
    base = install_base(root, user)
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=base))
    try:
        files = _stage(str(source), staging, limits, git_protocols)
        skill = validate_folder(staging, limits)
        with _locked(base):
            target = base / skill.name
            taken = _taken(root, user, skill.name, target)
            if taken and not replace:
                raise SkillExistsError(
                    f"a skill named {skill.name!r} exists already ({taken}); pass --replace (API: replace=true) "
                    "to replace it, or rename the skill"
                )
            replaced = _move_into_place(staging, target, base)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    installed = parse_skill_file(target, "custom", owner=user)
    log.info("skill_installed", name=skill.name, user=user, replaced=replaced, files=files)
    return Installed(installed, replaced, files)


def export_skill(skill: Skill, archive: Path) -> int:
    """Write ``skill``'s folder as a ``.skill`` archive at ``archive``; returns its file count."""
    return pack(skill.directory, archive)


def validate_folder(folder: Path, limits: PackageLimits = PackageLimits()) -> Skill:
    """Check a staged skill folder: sizes, no links, SKILL.md valid, Python scripts compile."""
    budget = Budget(limits)
    scripts: list[Path] = []
    for rel, path in walk_files(folder):
        size = path.stat().st_size
        budget.file()
        budget.grow(str(rel), size, size)
        if rel.suffix == ".py":
            scripts.append(path)
    try:
        text = (folder / SKILL_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillError(SKILL_FILE, "not found; every skill folder needs a SKILL.md at its top") from None
    except UnicodeDecodeError:
        raise SkillError(SKILL_FILE, "is not UTF-8 text; save it as UTF-8") from None
    skill = parse_skill_text(text, file=SKILL_FILE, directory=folder, check_folder=False)
    _compile_scripts(folder, scripts)
    os.chmod(folder, 0o755)  # the staging folder was made 0700; the jail reads skills as another uid
    return skill


def _compile_scripts(folder: Path, scripts: list[Path]) -> None:
    """Compile the package's Python files in a child process with limits (nothing is run)."""
    if not scripts:
        return
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (512 << 20,) * 2)\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (30, 35))\n"
        "for f in sys.argv[1:]:\n"
        "    try:\n"
        "        compile(open(f, 'rb').read(), f, 'exec', dont_inherit=True)\n"
        "    except SyntaxError as e:\n"
        "        print(f'{f}:{e.lineno}: {e.msg}'); sys.exit(1)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", code, *map(str, scripts)],
            capture_output=True,
            timeout=CHILD_SECONDS,
            stdin=subprocess.DEVNULL,
            env={},
        )
    except subprocess.TimeoutExpired:
        raise PackageError("checking the Python scripts took too long; refused") from None
    if done.returncode != 0:
        detail = (
            done.stdout.decode(errors="replace").strip().replace(str(folder) + "/", "") or "they could not be compiled"
        )
        raise PackageError(f"a Python script has a syntax error: {detail[:300]}; fix it and package the skill again")


def _stage(source: str, staging: Path, limits: PackageLimits, git_protocols: tuple[str, ...]) -> int:
    """Put the package's files into the empty ``staging`` folder; returns the file count."""
    if is_git_url(source):
        with tempfile.TemporaryDirectory(prefix="herdsman-git-") as tmp:
            checkout = Path(tmp) / "repo"
            clone(source, checkout, git_protocols)
            return copy_folder(checkout, staging, limits)
    path = Path(source).expanduser()
    if path.is_dir():
        return copy_folder(path, staging, limits)
    if path.is_file():
        if path.stat().st_size > limits.max_archive_bytes:
            raise PackageError(f"the archive is larger than {limits.max_archive_bytes} bytes; refused")
        return unpack_limited(path, staging, limits)
    raise PackageError(f"{source}: no such file or folder; give a .skill archive, a skill folder or a Git URL")


def copy_folder(source: Path, staging: Path, limits: PackageLimits) -> int:
    """Copy a skill folder's regular files into ``staging`` (links and special files refused,
    limits checked before each byte is copied); returns the file count."""
    if not (source / SKILL_FILE).is_file():
        raise PackageError(f"no {SKILL_FILE} at the top of {source.name or source}; give the skill's own folder")
    budget = Budget(limits)
    for rel, path in walk_files(source):
        budget.file()
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as src:
            target = staging.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as out:
                budget.copy(str(rel), src, out)
            os.chmod(target, 0o755 if os.stat(fd).st_mode & 0o111 else 0o644)
    return budget.files


def clone(url: str, checkout: Path, protocols: tuple[str, ...]) -> None:
    """``git clone --depth 1`` of ``url`` into ``checkout``, allowing only ``protocols``."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else "ssh"
    if scheme not in protocols:
        raise PackageError(f"{scheme}:// repositories are not allowed here; use one of: {', '.join(protocols)}")
    git = shutil.which("git")
    if git is None:
        raise PackageError("installing from a Git repository needs git; install it (apt-get install git)")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(checkout.parent),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": ":".join(protocols),
        "GIT_CONFIG_NOSYSTEM": "1",
        "LANG": "C",
    }
    argv = [
        git,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "clone",
        "--quiet",
        "--depth",
        "1",
        "--no-recurse-submodules",
        "--",
        url,
        str(checkout),
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=GIT_SECONDS, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        raise PackageError(f"cloning {url} took longer than {GIT_SECONDS:g} s; refused") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise PackageError(f"could not clone {url} ({why[0][:200]}); check the URL and that this machine can reach it")


def _taken(root: Path, user: str | None, name: str, target: Path) -> str | None:
    """Where a skill called ``name`` the installer would shadow or replace lives, or None."""
    if target.exists():
        return "installed " + ("for you" if user else "for everyone")
    catalog = load_skills(root, user=user)
    if any(s.name == name for s in catalog.all_skills):
        return "a shipped or shared skill that this one would override"
    return None


@contextlib.contextmanager
def _locked(base: Path) -> Iterator[None]:
    """One install into ``base`` at a time (across processes): check-then-rename stays true."""
    fd = os.open(base / ".install.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _move_into_place(staging: Path, target: Path, base: Path) -> bool:
    """Rename ``staging`` to ``target``; an existing target is renamed away first, then deleted."""
    if not target.exists():
        os.rename(staging, target)
        return False
    old = Path(tempfile.mkdtemp(prefix=".replaced-", dir=base))
    os.rename(target, old / "skill")
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(old / "skill", target)  # put the old skill back
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
    return True
