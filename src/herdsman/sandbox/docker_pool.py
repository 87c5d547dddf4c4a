"""A warm pool for the docker provider: started containers waiting for new threads.

Bind mounts are fixed when a container is created, so a pooled container cannot be pointed at a
thread's directories afterwards. It does not need to be: each pooled container is started on its
own empty ``user-data`` directory under ``<home>/sandbox-pool/``, and when a *new* thread (one
without files yet) is acquired, that directory is renamed to the thread's
``<home>/threads/<id>/user-data``. A bind mount follows its directory through a rename on the
same filesystem, so the container now shows the thread's files; it is renamed to the thread's
container name, and the pool starts a replacement in the background.

Threads that already have files (a conversation resumed after its container was reaped) get a
fresh container on their first command, as without a pool.

Pooled containers are started for no one: they show the shared skills only (``skill_view.py``),
never a user's own. A thread whose user has skills of their own gets a fresh container; one whose
user installs their first later has its pooled container replaced on its next command. Pooled containers carry the label
``herdsman.pool=1``; for them the thread is known by the container name, not the thread label.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from herdsman.logs import get_logger
from herdsman.sandbox.paths import ThreadPaths, private_dir
from herdsman.sandbox.skill_view import has_own_skills
from herdsman.sandbox.volume import thread_owner

if TYPE_CHECKING:
    from herdsman.sandbox.docker import DockerSandboxProvider

log = get_logger(__name__)

POOL_DIR = "sandbox-pool"


def remove_stale_pools(home: Path) -> None:
    """Remove pool directories of processes that are gone (``<pid>-<random>``)."""
    root = home / POOL_DIR
    if not root.is_dir():
        return
    for entry in root.iterdir():
        pid = entry.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(entry, ignore_errors=True)


class WarmPool:
    """Keeps ``size`` started containers ready; :meth:`take` hands one to a new thread."""

    def __init__(self, provider: DockerSandboxProvider, home: Path, skills: Path | None, size: int) -> None:
        self._provider = provider
        self._skills = skills
        self._size = size
        self._home = home / POOL_DIR / f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._ready: list[tuple[Any, ThreadPaths]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        remove_stale_pools(home)
        self._thread = threading.Thread(target=self._fill_loop, name="herdsman-docker-pool", daemon=True)
        self._thread.start()
        self._wake.set()

    @property
    def ready(self) -> int:
        """How many containers wait in the pool now."""
        with self._lock:
            return len(self._ready)

    def take(self, paths: ThreadPaths) -> Any | None:
        """A running container showing ``paths``' files, or None (thread has files, its user has
        skills of their own, pool empty)."""
        if paths.user_data.exists() or has_own_skills(self._skills, paths.owner):
            return None  # a pooled container shows no user's own skills: a user who has some gets their own
        with self._lock:
            if not self._ready:
                return None
            container, slot = self._ready.pop()
        self._wake.set()
        try:
            private_dir(paths.user_data.parent)
            volume = self._provider.volume
            if volume is not None and self._provider.quota_bytes and volume.owns(slot.user_data):
                owner = thread_owner(paths.home, paths.thread_id, self._provider.sandbox_config)
                volume.adopt(slot.user_data, paths.home, paths.thread_id, self._provider.quota_bytes, owner)
            else:
                os.rename(slot.user_data, paths.user_data)
        except OSError as exc:
            log.warning("pooled_container_handover_failed", thread_id=paths.thread_id, error=str(exc))
            self._discard(container, slot)
            return None
        try:
            container.rename(self._provider.container_name(paths.thread_id))
        except Exception as exc:  # noqa: BLE001 - the container still works under its pool name
            log.info("pooled_container_rename_failed", thread_id=paths.thread_id, error=str(exc))
        shutil.rmtree(slot.home, ignore_errors=True)
        return container

    def _discard(self, container: Any, slot: ThreadPaths) -> None:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - a container already gone is what discarding wants
            pass
        shutil.rmtree(slot.home, ignore_errors=True)

    def _start_one(self) -> None:
        slot_id = uuid.uuid4().hex[:12]
        volume = self._provider.volume
        if volume is not None and self._provider.quota_bytes is not None:  # on the volume, so take() can move it
            private_dir(self._home / slot_id)  # the slot's home holds its volume id (volume.home_id)
            volume.place(self._home / slot_id, "pool", self._provider.quota_bytes)
        slot = ThreadPaths.for_thread(self._home / slot_id, "pool", self._skills)
        slot.ensure_dirs()
        name = f"{self._provider.container_name('pool')}-{slot_id}"
        container = self._provider.start_container(slot, name, pooled=True)
        with self._lock:
            self._ready.append((container, slot))

    def _fill_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._stop.is_set() and self.ready < self._size:
                try:
                    self._start_one()
                except Exception as exc:  # noqa: BLE001 - retry on the next wake
                    log.warning("pooled_container_start_failed", error=str(exc))
                    break

    def close(self) -> None:
        """Stop refilling and remove the waiting containers and their directories."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)
        with self._lock:
            ready, self._ready = self._ready, []
        for container, slot in ready:
            self._discard(container, slot)
        shutil.rmtree(self._home, ignore_errors=True)
