"""What one thread's sandbox sees of the skills folder: the shared skills and its owner's own.

The skills folder holds ``public/`` and ``custom/`` (skills for everyone) and ``users/<user>/``
(skills one user installed for themselves, :mod:`herdsman.skills.install`). A thread's sandbox
shows ``public/`` and ``custom/`` and, when the thread has an owner (:mod:`herdsman.sandbox.owners`),
that owner's ``users/<owner>/``, at the same places under ``/mnt/skills``; never another user's.

Every provider mounts exactly those folders, never the whole skills folder and never a deny-list:
a user who installs their first skill after a container or pod started adds a folder no mount of
another thread covers, so nothing new becomes visible to them. The file tools apply the same
rule to the paths they are given (:func:`visible`).

Skills installed for one user by an earlier Herdsman lived under ``custom/@<user>/``, inside the
shared folder: :func:`move_legacy_user_skills` moves them to ``users/<user>/`` before any sandbox
mounts ``custom/``, and refuses to go on while one is left there.
"""

from __future__ import annotations

import os
from pathlib import Path

from herdsman.logs import get_logger
from herdsman.sandbox.base import SKILLS_ROOT, SandboxError

log = get_logger(__name__)

SHARED_FOLDERS = ("public", "custom")  # skills for everyone
USERS_FOLDER = "users"  # users/<user>/<skill>: one user's own skills
USERS_ROOT = f"{SKILLS_ROOT}/{USERS_FOLDER}"
LEGACY_PREFIX = "@"  # custom/@<user>/: where an earlier Herdsman kept a user's own skills


def own_folder(skills: Path, owner: str | None) -> Path | None:
    """The host folder of ``owner``'s own skills (``users/<owner>``), or None for no owner.

    The name comes from the thread's owner file, written by the harness; a name that could
    leave ``users/`` is refused (None)."""
    if owner is None or not owner or owner in (".", "..") or "/" in owner or "\x00" in owner:
        return None
    return skills / USERS_FOLDER / owner


def ensure_own_folder(skills: Path | None, owner: str | None) -> Path | None:
    """``owner``'s own skills folder, made (empty) when missing so a container or pod can mount it
    from its start; None when there is no owner, no skills folder, or it cannot be made."""
    folder = own_folder(skills, owner) if skills is not None else None
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        log.warning("own_skills_folder_unavailable", user=owner, error=str(exc))
        return None
    return folder if folder.is_dir() and not folder.is_symlink() else None


def has_own_skills(skills: Path | None, owner: str | None) -> bool:
    """Whether ``owner`` has installed any skill of their own (a folder not hidden)."""
    folder = own_folder(skills, owner) if skills is not None else None
    if folder is None:
        return False
    try:
        with os.scandir(folder) as entries:
            return any(not e.name.startswith(".") for e in entries)
    except OSError:
        return False


def visible(virtual: str, owner: str | None) -> bool:
    """Whether the normalized virtual path ``virtual`` (under ``/mnt/skills``) is one the thread
    of ``owner`` may see: the root, the shared folders, ``users`` and its owner's folder."""
    if virtual == SKILLS_ROOT:
        return True
    rest = virtual[len(SKILLS_ROOT) + 1 :].split("/")
    if rest[0] in SHARED_FOLDERS:
        return not (rest[0] == "custom" and len(rest) > 1 and rest[1].startswith(LEGACY_PREFIX))
    if rest[0] == USERS_FOLDER and owner is not None:
        return len(rest) == 1 or rest[1] == owner
    return False


def shared_folders(skills: Path) -> list[tuple[str, Path]]:
    """The shared folders present, as (virtual path, host path)."""
    return [(f"{SKILLS_ROOT}/{name}", skills / name) for name in SHARED_FOLDERS if (skills / name).is_dir()]


def mounts(skills: Path, owner: str | None, *, own: bool = True) -> list[tuple[str, Path]]:
    """What to mount read-only for a thread of ``owner``, as (virtual path, host path): the shared
    folders, and (``own``) the owner's folder when it exists."""
    found = shared_folders(skills)
    folder = own_folder(skills, owner) if own else None
    if folder is not None and folder.is_dir() and not folder.is_symlink():
        found.append((f"{USERS_ROOT}/{owner}", folder))
    return found


def move_legacy_user_skills(skills: Path) -> None:
    """Move each ``custom/@<user>/`` left by an earlier Herdsman to ``users/<user>/``.

    Raises SandboxError, naming the folder and what to do, when one cannot be moved: mounting
    ``custom/`` with it inside would show one user's skills to everyone."""
    custom = skills / "custom"
    try:
        legacy = sorted(e.name for e in os.scandir(custom) if e.name.startswith(LEGACY_PREFIX))
    except OSError:
        return
    for name in legacy:
        target = own_folder(skills, name[len(LEGACY_PREFIX) :])
        try:
            if target is None:
                raise OSError("the name is no user's")
            target.parent.mkdir(exist_ok=True)
            os.rename(custom / name, target)  # fails when the target exists and is not empty
        except OSError as exc:
            raise SandboxError(
                f"the skills folder holds {custom / name}, a user's own skills where every sandbox would see "
                f"them, and it could not be moved to {skills / USERS_FOLDER}/ ({exc}); move its skills there "
                "by hand (users/<user>/<skill>) and start again"
            ) from None
        log.info("own_skills_moved", source=f"custom/{name}", target=f"{USERS_FOLDER}/{target.name}")
