"""Virtual paths of one thread: where they live on the host, and how to refuse escapes.

The agent only ever sees ``/mnt/user-data/{workspace,uploads,outputs}`` and ``/mnt/skills``.
:class:`ThreadPaths` maps those virtual roots to ``<home>/threads/<thread_id>/user-data/...``
and the skills folder, and resolves a path the model gave into a host path.

Resolving a path the model gave is not done here, on strings: code in the sandbox can swap a
folder for a symlink at any moment, so every host-side access resolves and opens by
descriptors through :class:`herdsman.sandbox.fs.ThreadFiles`, which follows the rules named
here (the virtual roots, which ones are writable, links read as virtual paths).

:meth:`ThreadPaths.scrub` rewrites host paths back to virtual ones so no output, error or
trace shows where the files really are.

The home, its ``threads`` folder and each thread's folder are 0700 (:func:`secure_home`,
:meth:`ThreadPaths.ensure_dirs`; existing ones are tightened when a provider starts or a thread
is first used): what a jail writes is the gateway user's on the host, so no other local user
may even reach it. The ``user-data`` folders below keep their usual modes, since a container
or pod user (which is not always the gateway's) mounts them directly and must still enter them.
"""

from __future__ import annotations

import os
import posixpath
import re
import secrets
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from herdsman.logs import get_logger
from herdsman.sandbox.base import (
    OUTPUTS,
    SKILLS_ROOT,
    UPLOADS,
    USER_DATA_ROOT,
    WORKSPACE,
    PathEscapeError,
    SandboxError,
)
from herdsman.sandbox.virtual_folders import virtual_folder_path

log = get_logger(__name__)

PRIVATE_MODE = 0o700
_warned: set[str] = set()  # folders of another user already reported
_THREAD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
HOME_PLACEHOLDER = "<herdsman-home>"


class InvalidThreadIdError(SandboxError):
    """A thread id that cannot name a directory safely."""


class ReadOnlyPathError(PathEscapeError):
    """A write to a read-only virtual root (``/mnt/skills``, ``/mnt/user-data`` itself)."""


def validate_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` if it is safe as a directory name, else raise InvalidThreadIdError.

    Allowed: 1 to 128 characters among letters, digits, ``.``, ``_`` and ``-``, starting with a
    letter or digit (so UUIDs pass and ``..``, ``a/b`` or empty ids do not).
    """
    if not isinstance(thread_id, str) or not _THREAD_ID_RE.fullmatch(thread_id):
        shown = repr(thread_id)[:80]
        raise InvalidThreadIdError(
            f"invalid thread id {shown}: use 1-128 characters among letters, digits, '.', '_' "
            "and '-', starting with a letter or digit (a UUID works)"
        )
    return thread_id


def thread_dir(home: Path, thread_id: str) -> Path:
    """``<home>/threads/<thread_id>``: the thread's user data, and what the harness keeps for it
    beside that (sub-agent transcripts, uploads still arriving); the id is validated first."""
    return Path(home) / "threads" / validate_thread_id(thread_id)


def write_once(path: Path, text: str, durable: bool = True) -> None:
    """Write ``path`` whole unless it exists (another process may be making it at once): a
    temporary file linked into place, so a reader never sees it half written. ``durable``: on
    disk before it is linked (an fsync), so an OS crash cannot leave it empty; a note that only
    saves repeating idempotent work can skip that wait."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode())
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)


def private_dir(path: Path) -> None:
    """Make ``path`` a folder only its owner may enter: created 0700 when missing (its parents
    with the usual modes), tightened to 0700 when it exists with more and is ours (a folder of
    another user is left as it is, with a warning: changing it is that user's call)."""
    try:
        os.mkdir(path, PRIVATE_MODE)  # the umask can only take bits away
        return
    except FileNotFoundError:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, PRIVATE_MODE)
            return
        except FileExistsError:
            pass
    except FileExistsError:
        pass
    st = os.stat(path)
    if not stat.S_IMODE(st.st_mode) & ~PRIVATE_MODE:
        return
    if st.st_uid != os.geteuid():
        if str(path) in _warned:
            return
        _warned.add(str(path))
        log.warning(
            "folder_not_private",
            path=str(path),
            mode=f"{stat.S_IMODE(st.st_mode):o}",
            owner_uid=st.st_uid,
            uid=os.geteuid(),
            fix="the folder belongs to another uid, not to this process: other users may reach "
            "the sandbox's files through it; make it 0700 (chmod 700)",
        )
        return
    os.chmod(path, PRIVATE_MODE)


def secure_home(home: Path) -> None:
    """The home, its ``threads`` folder and every thread folder already there made 0700 (a
    provider calls it when it starts; new thread folders are made 0700 by ``ensure_dirs``)."""
    private_dir(home)
    threads = Path(home) / "threads"
    if not threads.is_dir():
        return
    private_dir(threads)
    with os.scandir(threads) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                private_dir(Path(entry.path))


def normalize_virtual(path: str) -> str:
    """The absolute, lexically normalized virtual form of ``path``; no symlink is followed.

    Relative paths (and ``~``) are taken from the workspace, except those that start with a
    virtual folder's name: ``outputs/a.md`` is ``/mnt/user-data/outputs/a.md`` (see
    :mod:`herdsman.sandbox.virtual_folders`). Whether the result lies inside a virtual root is
    checked by :meth:`ThreadPaths.resolve_virtual`, not here.
    """
    if not isinstance(path, str) or not path.strip():
        raise SandboxError(f"empty path; give a path such as {WORKSPACE}/notes.md")
    if "\x00" in path:
        raise SandboxError("the path contains a NUL character")
    path = path.strip()
    if path == "~" or path.startswith("~/"):
        path = WORKSPACE + path[1:]
    if not path.startswith("/"):
        path = virtual_folder_path(path) or f"{WORKSPACE}/{path}"
    normalized = posixpath.normpath(path)
    return "/" + normalized.lstrip("/")


@dataclass(frozen=True)
class VirtualRoot:
    """One virtual directory tree and the host directory behind it."""

    virtual: str
    host: Path
    writable: bool


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class ThreadPaths:
    """The directories of one thread and the rules for addressing them.

    Build it with :meth:`for_thread`; call :meth:`ensure_dirs` before first use.
    """

    thread_id: str
    home: Path
    user_data: Path
    workspace: Path
    uploads: Path
    outputs: Path
    skills: Path | None = None
    owner: str | None = None  # the thread's user: whose own skills (skill_view.py) it sees; None: the local user
    _aliases: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def for_thread(
        cls, home: Path, thread_id: str, skills: Path | None = None, owner: str | None = None
    ) -> ThreadPaths:
        """Layout ``<home>/threads/<thread_id>/user-data/{workspace,uploads,outputs}``.

        ``skills`` is mounted read-only at ``/mnt/skills`` when given and it is a directory, with
        only the shared skills and ``owner``'s own in view (see ``skill_view.py``).
        """
        validate_thread_id(thread_id)
        given_home = Path(os.path.abspath(home))
        real_home = _real(given_home)
        # a link to the thread's subvolume on the quota volume (volume.py), made by the harness in a
        # folder no jail sees; resolved once, so every later access starts from the real folder
        user_data = _real(thread_dir(real_home, thread_id) / "user-data")
        skills_dir = _real(Path(os.path.abspath(skills))) if skills is not None else None
        if skills_dir is not None and not skills_dir.is_dir():
            skills_dir = None
        paths = cls(
            thread_id=thread_id,
            home=real_home,
            user_data=user_data,
            workspace=user_data / "workspace",
            uploads=user_data / "uploads",
            outputs=user_data / "outputs",
            skills=skills_dir,
            owner=owner,
        )
        object.__setattr__(paths, "_aliases", paths._build_aliases(given_home, skills))
        return paths

    # -- layout -------------------------------------------------------------------------

    def ensure_dirs(self) -> None:
        """Create the thread's workspace, uploads and outputs directories; the home, ``threads``
        and the thread's folder are made 0700 on the way (see :func:`private_dir`)."""
        for folder in (self.home, self.home / "threads", self.user_data.parent):
            private_dir(folder)
        for d in (self.workspace, self.uploads, self.outputs):
            d.mkdir(parents=True, exist_ok=True)

    @cached_property  # every path a tool names is located through them: built once (fields never change)
    def roots(self) -> tuple[VirtualRoot, ...]:
        """The virtual roots, most specific first."""
        roots = [
            VirtualRoot(WORKSPACE, self.workspace, True),
            VirtualRoot(UPLOADS, self.uploads, True),
            VirtualRoot(OUTPUTS, self.outputs, True),
        ]
        if self.skills is not None:
            roots.append(VirtualRoot(SKILLS_ROOT, self.skills, False))
        roots.append(VirtualRoot(USER_DATA_ROOT, self.user_data, False))
        return tuple(roots)

    def describe_roots(self) -> str:
        """The virtual roots as a short sentence for error messages."""
        names = [WORKSPACE, UPLOADS, OUTPUTS] + ([SKILLS_ROOT] if self.skills is not None else [])
        return ", ".join(names)

    # -- resolution ---------------------------------------------------------------------

    def normalize(self, path: str) -> str:
        """The absolute, lexically normalized virtual form of ``path`` (see normalize_virtual)."""
        return normalize_virtual(path)

    def to_virtual(self, host: Path | str) -> str:
        """The virtual path of a host path inside one of the roots (raises PathEscapeError)."""
        host_str = os.path.abspath(host)
        for root in self.roots:
            base = str(root.host)
            if host_str == base:
                return root.virtual
            if host_str.startswith(base + "/"):
                return root.virtual + host_str[len(base) :]
        raise PathEscapeError("a path outside the sandbox was met and hidden")

    # -- scrubbing ----------------------------------------------------------------------

    def _build_aliases(self, given_home: Path, given_skills: Path | None) -> tuple[tuple[str, str], ...]:
        pairs: dict[str, str] = {}
        homes = {str(self.home), str(given_home)}
        for ud in sorted({f"{home}/threads/{self.thread_id}/user-data" for home in homes} | {str(self.user_data)}):
            pairs[f"{ud}/workspace"] = WORKSPACE
            pairs[f"{ud}/uploads"] = UPLOADS
            pairs[f"{ud}/outputs"] = OUTPUTS
            pairs[ud] = USER_DATA_ROOT
        if self.skills is not None:
            pairs[str(self.skills)] = SKILLS_ROOT
            if given_skills is not None:
                pairs[os.path.abspath(given_skills)] = SKILLS_ROOT
        for home in homes:
            pairs[home] = HOME_PLACEHOLDER
        pairs.pop("/", None)
        return tuple(sorted(pairs.items(), key=lambda kv: len(kv[0]), reverse=True))

    def scrub(self, text: str) -> str:
        """Replace host paths of this thread (and the home directory) by virtual ones.

        Also catches the thread's directories seen from another mount point (for example in
        ``/proc/self/mountinfo``), where only the tail ``threads/<id>/user-data`` is recognisable.
        """
        if not text:
            return text
        for host, virtual in self._aliases:
            if host in text:
                text = text.replace(host, virtual)
        tail = re.compile(r"(?:/[^\s'\"/=:;,]+)*/threads/" + re.escape(self.thread_id) + r"/user-data(?![\w.-])")
        return tail.sub(USER_DATA_ROOT, text)

    def to_host_text(self, text: str) -> str:
        """Rewrite virtual paths in a command to host paths (for unisolated execution only)."""
        pairs = [(root.virtual, str(root.host)) for root in self.roots]
        pattern = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(v) for v, _ in pairs) + r")(?=$|[/\s'\";|&)<>:,=`])")
        mapping = dict(pairs)
        return pattern.sub(lambda m: mapping[m.group(1)], text)
