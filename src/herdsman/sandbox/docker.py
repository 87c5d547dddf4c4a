"""The docker provider: one container per thread on any Docker-API engine (Docker, podman).

Files stay on the host, under the same ``<home>/threads/<id>/user-data`` layout as the local
provider, and the file tools use them there through :class:`ThreadPaths` (the same escape
rules, the same results). The container sees them bind-mounted at
``/mnt/user-data/{workspace,uploads,outputs}``, with the shared skills and the thread's user's
own read-only under ``/mnt/skills`` (``skill_view.py``: never another user's).
Only ``bash`` runs in the container, by exec.

Each container is locked down: read-only root with sized tmpfs ``/tmp``, ``/var/tmp``, ``/run``
and ``/dev/shm``, a non-root user, all capabilities dropped, ``no-new-privileges``, the seccomp
profile of ``seccomp.docker_profile`` (the engine's default allows user namespaces; this one does
not), ``network_mode=none`` unless ``sandbox.network``,
memory / CPU / pid / file-size limits from ``sandbox.limits``, an init process that reaps
orphans, and labels (``herdsman.sandbox``, ``herdsman.owner``, ``herdsman.thread``) by which
:meth:`DockerSandboxProvider.cleanup` finds what to remove.

Containers start on a thread's first command, not on :meth:`~DockerSandboxProvider.acquire`
(file tools never need one), unless ``sandbox.docker.warm_pool`` keeps started containers for
new threads (see ``docker_pool.py``). An idle container is removed by the reaper; a container
that died (killed, OOM, removed by hand) is recreated on the next command with the thread's
files intact, since they live on the host.

The user data is bind-mounted from the host, so the quota volume (``volume.py``) bounds what a
container writes there as it bounds a local jail: the kernel answers ``EDQUOT``. The container's
root is read-only and its scratch folders are sized tmpfs, so nothing else of the disk is written.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from herdsman.config.schema import DockerSandboxConfig, HerdsmanConfig, SandboxConfig
from herdsman.logs import get_logger
from herdsman.sandbox import seccomp, skill_view
from herdsman.sandbox.background import NamespaceNetwork
from herdsman.sandbox.base import OUTPUTS, UPLOADS, WORKSPACE, ExecResult, SandboxError
from herdsman.sandbox.container_scripts import (
    exec_environment,
    sweep_all_argv,
    sweep_argv,
    wrapped_argv,
)
from herdsman.sandbox.docker_pool import WarmPool
from herdsman.sandbox.docker_stream import StreamReader
from herdsman.sandbox.host_files import making_lock, release_if_deleted, skills_dir
from herdsman.sandbox.limits import Limits
from herdsman.sandbox.owners import thread_paths
from herdsman.sandbox.paths import ThreadPaths, secure_home, validate_thread_id
from herdsman.sandbox.process import StreamCapture, new_run_id
from herdsman.sandbox.remote import BoxUsage, Reaper, RemoteSandbox, RemoteSandboxes, file_owner, reaper_interval
from herdsman.sandbox.skill_view import ensure_own_folder, has_own_skills
from herdsman.sandbox.volume import place_on_volume, quota_volume

log = get_logger(__name__)

LABEL_SANDBOX = "herdsman.sandbox"
LABEL_OWNER = "herdsman.owner"
LABEL_THREAD = "herdsman.thread"
LABEL_SPEC = "herdsman.spec"  # a digest of the settings: a container is adopted only if they match
LABEL_POOL = "herdsman.pool"  # started for the warm pool (its thread is in its name, see docker_pool.py)
LABEL_CREATOR = "herdsman.creator"  # <boot id>:<pid> of the process that started it


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return "unknown"


CREATOR = f"{_boot_id()}:{os.getpid()}"


def creator_alive(label: str) -> bool:
    """Whether the process named by a ``herdsman.creator`` label may still run. A container with
    no label (an older Herdsman) counts as an orphan; one started on another machine (or before a
    reboot) is not ours to judge and counts as alive."""
    boot, _, pid = label.partition(":")
    if not pid.isdigit():
        return False
    if boot != _boot_id():
        return True
    return int(pid) == os.getpid() or os.path.exists(f"/proc/{pid}")


_DRAIN_SECONDS = 2.0
_SWEEP_TIMEOUT = 10.0
OPEN_FILES = 8192
SMALL_TMPFS_MB = 16  # /var/tmp, /run and /dev/shm
SWEEP_DELAY = 0.3  # seconds a container stays idle before its leftover processes are killed
USER_PROCESSES = 16384


class DockerEngineError(SandboxError):
    """The Docker-API engine is unreachable or refused a request; the message says what to do."""


def _docker() -> Any:
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise DockerEngineError(
            "sandbox.provider is docker but the docker package is missing; "
            "install it with pip install 'herdsman[docker]'"
        ) from exc
    return docker


_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _client_for(base_url: str) -> Any:
    """One ``DockerClient`` per engine address in this process.

    Creating a client asks the engine for its API version, which podman answers slowly (it runs
    its helper binaries to report their versions), so clients are shared between providers.
    """
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(base_url)
        if client is None:
            client = _docker().DockerClient(base_url=base_url, timeout=60)
            _CLIENTS[base_url] = client
        return client


def owner_id(home: Path) -> str:
    """A short stable id of a Herdsman home, so two homes on one engine never share containers."""
    return hashlib.sha256(str(home).encode()).hexdigest()[:10]


def container_user(config: DockerSandboxConfig) -> str:
    """``uid:gid`` of the container: configured, else ours (so files stay ours), 1000:1000 for root."""
    if config.user:
        return config.user
    uid, gid = os.getuid(), os.getgid()
    return "1000:1000" if uid == 0 else f"{uid}:{gid}"


def seccomp_option(client: Any, home: Path, host_home: Path | None) -> str:
    """The seccomp profile as this engine takes it: Docker's API takes the JSON itself, podman's
    compatible API a path it can open (written once under the home, named by its content)."""
    profile = seccomp.docker_profile()
    try:
        components = client.version().get("Components") or []
    except Exception:  # noqa: BLE001 - an engine that does not say is treated as Docker
        components = []
    if not any("podman" in str(c.get("Name", "")).lower() for c in components):
        return profile
    name = f"seccomp-{hashlib.sha256(profile.encode()).hexdigest()[:12]}.json"
    path = home / name
    if not path.exists():
        home.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=home)  # a name of its own: threads race here
        with os.fdopen(fd, "w") as fh:
            fh.write(profile)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return str((host_home or home) / name)


def scratch_mounts(tmp_size_mb: int) -> dict[str, str]:
    """Every writable tmpfs of the container, each sized in bytes and inodes.

    With a read-only root the engine would otherwise mount ``/run`` and ``/var/tmp`` unsized,
    charged to the container's memory: filling them left every later command killed (137).
    """
    small = f"rw,nosuid,nodev,size={SMALL_TMPFS_MB}m,mode=1777"
    return {
        "/tmp": f"rw,nosuid,nodev,size={tmp_size_mb}m,mode=1777",
        "/var/tmp": small,
        "/run": small,
    }


def container_options(
    paths: ThreadPaths,
    sandbox: SandboxConfig,
    limits: Limits,
    *,
    name: str,
    owner: str,
    user: str,
    seccomp_option: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``containers.run`` for the thread of ``paths`` (a pure function).

    ``seccomp_option`` is the profile as the engine takes it (see :func:`seccomp_option`);
    default the JSON itself, as Docker's API takes it.
    """
    seccomp_option = seccomp_option or seccomp.docker_profile()
    docker = _docker()
    conf = sandbox.docker

    def source(path: Path) -> str:
        """Where the engine finds ``path``: under ``docker.host_home`` when that is set."""
        if conf.host_home is None:
            return str(path)
        return str(Path(conf.host_home) / path.relative_to(paths.home))

    mounts = [
        docker.types.Mount(WORKSPACE, source(paths.workspace), type="bind", read_only=False),
        docker.types.Mount(UPLOADS, source(paths.uploads), type="bind", read_only=False),
        docker.types.Mount(OUTPUTS, source(paths.outputs), type="bind", read_only=False),
    ]
    if paths.skills is not None:  # the shared skills and the owner's own, each on its own (skill_view.py)
        for virtual, folder in skill_view.mounts(paths.skills, paths.owner):
            host = source(folder) if paths.home in folder.parents else str(folder)
            mounts.append(docker.types.Mount(virtual, host, type="bind", read_only=True))
    options: dict[str, Any] = {
        "image": conf.image,
        "command": ["sleep", "infinity"],
        "name": name,
        "detach": True,
        "init": True,
        "hostname": "sandbox",
        "user": user,
        "working_dir": WORKSPACE,
        "environment": exec_environment(),
        "mounts": mounts,
        "tmpfs": scratch_mounts(conf.tmp_size_mb),
        "shm_size": f"{SMALL_TMPFS_MB}m",
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", f"seccomp={seccomp_option}"],
        "network_mode": conf.network if sandbox.network else "none",
    }
    if limits.memory_mb:
        options["mem_limit"] = f"{limits.memory_mb}m"
        options["memswap_limit"] = f"{limits.memory_mb}m"
    if limits.cpus:
        options["nano_cpus"] = int(limits.cpus * 1e9)
    if limits.pids:
        options["pids_limit"] = limits.pids
    if limits.file_size_bytes:
        # Naming any ulimit replaces the engine's defaults (podman then asks for nofile and nproc
        # limits the host may not grant), so modest ones are named alongside; pids_limit, not
        # nproc (which counts every process of the uid on the host), bounds the processes.
        size = limits.file_size_bytes
        options["ulimits"] = [
            docker.types.Ulimit(name="fsize", soft=size, hard=size),
            docker.types.Ulimit(name="nofile", soft=OPEN_FILES, hard=OPEN_FILES),
            docker.types.Ulimit(name="nproc", soft=USER_PROCESSES, hard=USER_PROCESSES),
        ]
    spec = hashlib.sha256(repr(sorted(options.items())).encode()).hexdigest()[:12]
    options["labels"] = {LABEL_SANDBOX: "1", LABEL_OWNER: owner, LABEL_THREAD: paths.thread_id, LABEL_SPEC: spec}
    return options


class ThreadContainer(BoxUsage):
    """The container of one thread: created on demand, recreated when dead, removed when idle."""

    def __init__(self, provider: DockerSandboxProvider, paths: ThreadPaths) -> None:
        super().__init__()
        self._provider = provider
        self.paths = paths
        self.name = provider.container_name(paths.thread_id)
        self._container: Any = None
        self._without_own_skills = False  # a pooled container: started with no user's own skills
        self._lock = threading.Lock()
        self.sweeping = threading.Lock()  # held while the processes of ended commands are killed
        self.commands_started = 0  # counted under ``sweeping``: a sweep runs only if none started since

    @property
    def container_id(self) -> str | None:
        """The id of the current container, if one was started."""
        return self._container.id if self._container is not None else None

    @property
    def started(self) -> bool:
        """Whether a container was started for the thread."""
        return self._container is not None

    def ensure(self) -> Any:
        """The running container, created (or recreated) when needed."""
        with self._lock:
            if (
                self._container is not None
                and self._without_own_skills
                and has_own_skills(self.paths.skills, self.paths.owner)
            ):
                log.info(
                    "sandbox_pooled_container_restarted",
                    thread_id=self.paths.thread_id,
                    why="to show its user's own skills",
                )
                self._drop()
                self._container = None
            if self._container is None:
                self._container = self._provider.start_container(self.paths, self.name)
                self._without_own_skills = False
            return self._container

    def adopt(self, container: Any) -> None:
        """Use ``container`` (taken from the warm pool, so showing the shared skills only) as this
        thread's, until its user installs a skill of their own."""
        with self._lock:
            self._container = container
            self._without_own_skills = self.paths.owner is not None

    def lost(self) -> None:
        """The container died under a command: the next command starts a new one."""
        with self._lock:
            self._container = None

    def _drop(self) -> None:
        if self._container is not None and self._container.name != self.name:
            self._provider.remove_container(self._container.id)  # a pooled one not renamed
        self._provider.remove_container(self.name)

    def recreate(self) -> Any:
        """Throw away the current container and start a new one (files are on the host)."""
        with self._lock:
            self._drop()
            self._container = self._provider.start_container(self.paths, self.name)
            self._without_own_skills = False
            return self._container

    def ensure_id(self) -> str:
        """The id of the running container (started when needed)."""
        return str(self.ensure().id)

    def forget(self) -> None:
        """Remove the container (its files stay); the next command starts a new one."""
        with self._lock:
            self._drop()
            self._container = None


class DockerShell:
    """Runs commands in a thread's container by exec, with a deadline and bounded output.

    It runs background servers too (``background.py``): a background job is one long exec, so the
    container counts it busy (no idle sweep or reaping while it runs). The gateway reaches its
    ports the way it reaches a local jail's: a helper process on this machine enters the
    container's network namespace (found by the job's marked processes, which the host sees) and
    hands out sockets made there, connected to the container's own ``127.0.0.1``
    (``jail_ports.py``). This is the safest of the ways a container port can be reached:

    - nothing is published: no port of the container is bound on the host, on ``0.0.0.0`` or on
      ``127.0.0.1`` (which every local user and process could connect to), and the container
      needs no network at all (the default ``network_mode: none`` keeps working);
    - nothing is addressed: the container's address on a bridge is also reachable from every other
      container on that bridge (another thread's); a socket in the namespace reaches only this
      container's loopback, and the port is the gateway's choice within ``sandbox.preview.ports``;
    - nothing runs inside: an exec'd forwarder would be a process of the sandbox user the
      agent's code could kill, trace or impersonate; the helper lives outside the container.

    It needs the engine on this machine (the container's processes visible in this ``/proc``):
    :meth:`background_problem` says so otherwise, and a container sharing the host's network
    (``sandbox.docker.network: host``) is refused.
    """

    background = True

    def __init__(self, provider: DockerSandboxProvider, box: ThreadContainer, limits: Limits) -> None:
        self._provider = provider
        self._box = box
        self._limits = limits

    def job_network(self, run_id: str) -> NamespaceNetwork:
        """The network of a background job of this container (one namespace every job shares)."""
        return NamespaceNetwork(run_id, shared=True)

    def background_problem(self) -> str | None:
        """Why a background server of this container could not be previewed from here (None: it
        can): the engine runs elsewhere, or the container shares the host's network."""
        container_id = self._box.ensure_id()
        try:
            pid = int(self._provider.client.api.inspect_container(container_id)["State"]["Pid"])
            theirs = os.stat(f"/proc/{pid}/ns/net").st_ino
        except Exception as exc:  # noqa: BLE001 - no such process here, or the engine did not say
            log.info("sandbox_container_not_visible", thread_id=self._box.paths.thread_id, error=str(exc))
            return (
                "Background servers of the docker sandbox need the container engine on the gateway's "
                "machine (its containers' processes visible to the gateway); this engine runs elsewhere"
            )
        if theirs == os.stat("/proc/self/ns/net").st_ino:
            return (
                "Background servers cannot be previewed from a container sharing the host's network "
                "(sandbox.docker.network: host); give the sandbox a network of its own"
            )
        return None

    def run(
        self,
        paths: ThreadPaths,
        command: str,
        timeout: float,
        cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
        run_id: str | None = None,
    ) -> ExecResult:
        """Run ``command`` in the container (its processes marked with ``run_id``); a dead
        container is recreated once and retried."""
        box = self._box
        waited = box.sweeping.acquire(timeout=_SWEEP_TIMEOUT)  # never while a sweep runs
        box.commands_started += 1
        box.use(+1)
        if waited:
            box.sweeping.release()
        try:
            container = box.ensure()
            try:
                exec_id = self._create_exec(container.id, command, env, run_id)
            except _ContainerGone:
                log.info("sandbox_container_gone", thread_id=paths.thread_id, action="recreating it")
                container = box.recreate()
                exec_id = self._create_exec(container.id, command, env, run_id)
            result = self._stream(exec_id, timeout, cancel)
            if result.exit_code in (137, -1) and not self._provider.is_running(container.id):
                box.lost()
                note = (
                    "[the sandbox container stopped while the command ran (killed, out of memory, or "
                    "removed); the files are kept and the next command starts a fresh container]"
                )
                return replace(result, output=f"{result.output.rstrip()}\n{note}".lstrip())
            return result
        finally:
            self._end_command()

    def _end_command(self) -> None:
        """Count the command out; when it was the last one running, sweep the container's
        leftover processes (even ones that cleared their environment) once it has stayed idle
        for ``SWEEP_DELAY``: back-to-back commands (parallel sub-agents, scripts) do not each
        wait for a sweep, and a survivor lives at most that long after the thread goes quiet."""
        box = self._box
        box.use(-1)
        if box.busy == 0 and box.started:
            timer = threading.Timer(SWEEP_DELAY, self._sweep_if_idle, args=(box.commands_started,))
            timer.daemon = True
            timer.start()

    def _sweep_if_idle(self, generation: int) -> None:
        """Kill every process but init and the main one, if no command started since ``generation``."""
        box = self._box
        if not box.sweeping.acquire(timeout=_SWEEP_TIMEOUT):
            return
        try:
            container_id = box.container_id
            if box.busy or box.commands_started != generation or container_id is None:
                return
            self._provider.exec_quietly(container_id, sweep_all_argv())
        except Exception as exc:  # noqa: BLE001 - the next idle moment sweeps again; the reaper ends the rest
            log.info("sandbox_sweep_failed", thread_id=box.paths.thread_id, error=str(exc))
        finally:
            box.sweeping.release()

    def _create_exec(
        self, container_id: str, command: str, env: Mapping[str, str] | None = None, run_id: str | None = None
    ) -> tuple[str, str]:
        run_id = run_id or new_run_id()
        api = self._provider.client.api
        try:
            created = api.exec_create(
                container_id,
                wrapped_argv(command, run_id),
                stdout=True,
                stderr=True,
                stdin=False,
                tty=False,
                workdir=WORKSPACE,
                environment={**(env or {}), **exec_environment()},
            )
        except Exception as exc:  # noqa: BLE001 - docker raises NotFound/APIError/ConnectionError
            if _is_gone(exc):
                raise _ContainerGone() from exc
            raise self._provider.engine_error("start a command", exc) from exc
        return created["Id"], run_id

    def _stream(self, exec_ref: tuple[str, str], timeout: float, cancel: threading.Event | None) -> ExecResult:
        exec_id, run_id = exec_ref
        api = self._provider.client.api
        capture = StreamCapture(self._limits.output_chars)
        reader = StreamReader(api.exec_start(exec_id, socket=True), capture)
        try:
            reason = reader.read(time.monotonic() + timeout, cancel)
            if reason != "eof":
                self._kill(run_id)
                reader.drain(_DRAIN_SECONDS)
        finally:
            reader.close()
        capture.finish()
        exit_code = 137 if reason != "eof" else self._exit_code(exec_id)
        return capture.result(exit_code, reason)

    def _exit_code(self, exec_id: str) -> int:
        api = self._provider.client.api
        for _ in range(100):
            info = api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(0.01)
        return -1

    def _kill(self, run_id: str) -> None:
        """Kill the command's processes; restart the container when that cannot run (pid limit)."""
        api = self._provider.client.api
        container = self._box.ensure()
        try:
            created = api.exec_create(container.id, sweep_argv(run_id), stdout=True, stderr=True)
            reader = StreamReader(api.exec_start(created["Id"], socket=True), StreamCapture(1000))
            try:
                finished = reader.read(time.monotonic() + _SWEEP_TIMEOUT) == "eof"
            finally:
                reader.close()
            if finished and self._exit_code(created["Id"]) == 0:
                return
        except Exception as exc:  # noqa: BLE001 - any failure falls back to the restart
            log.info("sandbox_command_sweep_failed", run_id=run_id, error=str(exc), action="restarting the container")
        log.warning("sandbox_container_restarting", thread_id=self._box.paths.thread_id, reason="to stop a command")
        self._box.recreate()


class _ContainerGone(Exception):
    """The container was removed or is not running."""


def _is_gone(exc: Exception) -> bool:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    text = str(exc).lower()
    gone = ("not running", "no such container", "state improper", "is paused")
    return status in (404, 409) or any(phrase in text for phrase in gone)


class DockerSandbox(RemoteSandbox):
    """A thread's sandbox: host-side files (:class:`~herdsman.sandbox.host_files.HostFilesSandbox`),
    commands in its container."""

    box: ThreadContainer


class DockerSandboxProvider(RemoteSandboxes):
    """Hands out :class:`DockerSandbox` instances, one container per thread."""

    def __init__(self, config: HerdsmanConfig, client: Any = None) -> None:
        self._config = config
        self._sandbox_config = config.sandbox
        self._docker_config = config.sandbox.docker
        self._limits = Limits.from_config(config.sandbox)
        self._home = config.resolve_home()
        secure_home(self._home)
        self._skills = skills_dir(config)
        self.owner = owner_id(self._home)
        self.user = container_user(self._docker_config)
        self._uid_gid = file_owner(self.user)
        self.client = client or self._connect()
        self._sandboxes: dict[str, DockerSandbox] = {}  # type: ignore[assignment]  # its own kind (the base reads them as RemoteSandbox; dict is invariant)
        self._lock = threading.Lock()
        self._image_checked = False
        self._seccomp_option: str | None = None
        self._seccomp_lock = threading.Lock()
        # the engine must see the volume where we do: not with a home it sees elsewhere (host_home)
        volume_config = config.sandbox.quota_volume
        self.volume = (
            None if self._docker_config.host_home else quota_volume(volume_config, config.sandbox.disk_quota_mb)
        )
        size = self._docker_config.warm_pool
        self._pool = WarmPool(self, self._home, self._skills, size) if size > 0 else None
        idle = self._docker_config.idle_timeout_seconds
        self._reaper = Reaper(self.housekeeping, reaper_interval(idle or 900.0), "herdsman-docker-reaper")
        threading.Thread(target=self.reap_orphans, name="herdsman-docker-orphans", daemon=True).start()

    # -- engine ---------------------------------------------------------------------------

    def _connect(self) -> Any:
        _docker()  # a missing package is its own error, not an unreachable engine
        base_url = self._docker_config.base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        try:
            client = _client_for(base_url)
            client.ping()
        except Exception as exc:  # noqa: BLE001 - any client error means the engine is away: said once, with what to do
            _CLIENTS.pop(base_url, None)
            raise DockerEngineError(
                f"cannot reach the Docker engine at {base_url} ({type(exc).__name__}); start Docker or "
                "podman (podman system service --time=0 unix:///run/podman/podman.sock), and set "
                "sandbox.docker.base_url or DOCKER_HOST to its socket"
            ) from None
        return client

    def engine_error(self, action: str, exc: Exception) -> DockerEngineError:
        """A model-safe error for a failed engine request (details go to the log)."""
        log.error("docker_engine_failed", action=action, exc_info=exc)
        return DockerEngineError(
            f"the sandbox container engine could not {action} ({type(exc).__name__}); "
            "try again, and if it persists ask the operator to check the Docker engine"
        )

    @property
    def pool_ready(self) -> int:
        """How many started containers wait in the warm pool (0 without one)."""
        return self._pool.ready if self._pool is not None else 0

    def container_name(self, thread_id: str) -> str:
        """The container name of ``thread_id``: ``<prefix>-<owner>-<thread id>``."""
        return f"{self._docker_config.name_prefix}-{self.owner}-{thread_id}"

    def _ensure_image(self) -> None:
        if self._image_checked:
            return
        docker = _docker()
        image = self._docker_config.image
        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            if self._docker_config.pull == "never":
                raise DockerEngineError(
                    f"the sandbox image {image} is not on the engine; build it with "
                    "python -m herdsman.sandbox.image (needs a registry for the base image), "
                    "or set sandbox.docker.image"
                ) from None
            try:
                self.client.images.pull(image)
            except Exception:  # noqa: BLE001 - any pull error: the image is missing either way, the message says how to build it
                raise DockerEngineError(
                    f"the sandbox image {image} is not on the engine and could not be pulled; build "
                    "it with python -m herdsman.sandbox.image, or set sandbox.docker.image"
                ) from None
        self._image_checked = True

    def start_container(self, paths: ThreadPaths, name: str, pooled: bool = False) -> Any:
        """A running container for ``paths``: an existing healthy one by that name, or a new one."""
        docker = _docker()
        try:
            existing = self.client.containers.get(name)
        except docker.errors.NotFound:
            existing = None
        except Exception as exc:  # noqa: BLE001 - the SDK raises many types for an engine error: one clear error names the step
            raise self.engine_error("look up the sandbox container", exc) from exc
        if not pooled:
            ensure_own_folder(paths.skills, paths.owner)  # mounted from the start: a skill installed later shows
        with self._seccomp_lock:
            if self._seccomp_option is None:
                self._seccomp_option = seccomp_option(self.client, self._home, self._docker_config.host_home)
        options = container_options(
            paths,
            self._sandbox_config,
            self._limits,
            name=name,
            owner=self.owner,
            user=self.user,
            seccomp_option=self._seccomp_option,
        )
        if existing is not None:
            labels = existing.labels or {}
            same = labels.get(LABEL_OWNER) == self.owner and labels.get(LABEL_SPEC) == options["labels"][LABEL_SPEC]
            if existing.status == "running" and same and creator_alive(labels.get(LABEL_CREATOR, "")):
                return existing  # another live process of this home runs it: share it
            self.remove_container(name)  # an orphan may hold leftover processes: start clean
        options["labels"][LABEL_CREATOR] = CREATOR
        if pooled:
            options["labels"][LABEL_POOL] = "1"
        self._ensure_image()
        try:
            container = self.client.containers.run(**options)
        except Exception as exc:  # noqa: BLE001 - the SDK raises many types for an engine error: one clear error names the step
            raise self.engine_error("start the sandbox container", exc) from exc
        log.info("sandbox_container_started", thread_id=paths.thread_id)
        return container

    def remove_container(self, name: str) -> None:
        """Remove the container ``name`` if it exists (killing what runs in it)."""
        docker = _docker()
        try:
            self.client.containers.get(name).remove(force=True)
        except docker.errors.NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - removal is best effort
            if "no such container" not in str(exc).lower():
                log.warning("sandbox_container_remove_failed", container=name, error=str(exc))

    def exec_quietly(self, container_id: str, argv: list[str], timeout: float = _SWEEP_TIMEOUT) -> tuple[int, str]:
        """Run ``argv`` in the container to its end (bounded); its exit code and output."""
        api = self.client.api
        created = api.exec_create(container_id, argv, stdout=True, stderr=True)
        capture = StreamCapture(4000)
        reader = StreamReader(api.exec_start(created["Id"], socket=True), capture)
        try:
            finished = reader.read(time.monotonic() + timeout) == "eof"
        finally:
            reader.close()
        capture.finish()
        if not finished:
            return -1, ""
        for _ in range(100):
            info = api.exec_inspect(created["Id"])
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"]), capture.result(0, "eof").output
            time.sleep(0.01)
        return -1, ""

    def is_running(self, container_id: str) -> bool:
        """Whether the container still runs (False when it is gone or the engine says not)."""
        try:
            return bool(self.client.api.inspect_container(container_id)["State"]["Running"])
        except Exception:  # noqa: BLE001 - not found, or the engine failed: treat it as stopped
            return False

    def reap_orphans(self) -> list[str]:
        """Remove the containers of this home whose creating process is gone (it died without
        ``close()``): their leftover processes die with them. The names removed."""
        removed: list[str] = []
        try:
            containers = self.containers()
        except Exception as exc:  # noqa: BLE001 - housekeeping is best effort
            log.info("sandbox_containers_list_failed", error=str(exc))
            return removed
        for container in containers:
            if creator_alive((container.labels or {}).get(LABEL_CREATOR, "")):
                continue
            try:
                container.remove(force=True)
                removed.append(container.name)
                log.info("sandbox_orphan_removed", container=container.name)
            except Exception as exc:  # noqa: BLE001 - one container that will not go must not stop the sweep of the others
                log.warning("sandbox_orphan_remove_failed", container=container.name, error=str(exc))
        return removed

    def housekeeping(self) -> None:
        """What the reaper runs: idle containers (when ``idle_timeout_seconds`` is set) and
        orphans go."""
        if self.idle_timeout() > 0:
            self.reap_idle()
        self.reap_orphans()

    # -- protocol -------------------------------------------------------------------------

    def acquire(self, thread_id: str) -> DockerSandbox:
        """The sandbox of ``thread_id``: a new thread takes a pooled container when there is one;
        otherwise its container starts with the first command."""
        validate_thread_id(thread_id)
        release_if_deleted(self, self._sandboxes, thread_id)
        with self._lock:
            sandbox = self._sandboxes.get(thread_id)
        if sandbox is not None:
            return sandbox
        # made under the thread's own lock, not the provider's: one thread's placement on the quota
        # volume or pooled container's handover no longer holds up every other thread's acquire
        with making_lock(self, thread_id):
            with self._lock:
                sandbox = self._sandboxes.get(thread_id)
            if sandbox is None:
                sandbox = self._make(thread_id)
                with self._lock:
                    self._sandboxes[thread_id] = sandbox
            return sandbox

    def _make(self, thread_id: str) -> DockerSandbox:
        """A new sandbox of ``thread_id``: a pooled container's files handed over, or its folder
        placed on the quota volume (its container starts with the first command)."""
        paths = thread_paths(self._home, thread_id, self._skills)
        pooled = self._pool.take(paths) if self._pool is not None else None
        if pooled is None:
            place_on_volume(self.volume, self._home, thread_id, self._sandbox_config)
        paths = thread_paths(self._home, thread_id, self._skills)  # the volume's link resolved
        paths.ensure_dirs()
        box = ThreadContainer(self, paths)
        if pooled is not None:
            box.adopt(pooled)
        shell = DockerShell(self, box, self._limits)
        return DockerSandbox(paths, shell, self._sandbox_config, box, self._uid_gid)

    def close(self) -> None:
        """Release every sandbox, empty the warm pool and stop the reaper."""
        if self._pool is not None:
            self._pool.close()
        self.release_all()

    # -- housekeeping ---------------------------------------------------------------------

    @property
    def sandbox_config(self) -> SandboxConfig:
        """The ``sandbox`` section of config.yaml."""
        return self._sandbox_config

    @property
    def quota_bytes(self) -> int | None:
        """``sandbox.disk_quota_mb`` in bytes (None: no quota)."""
        quota = self._sandbox_config.disk_quota_mb
        return None if quota is None else quota * 1024 * 1024

    def idle_timeout(self) -> float:
        """``sandbox.docker.idle_timeout_seconds``."""
        return self._docker_config.idle_timeout_seconds

    def containers(self) -> list[Any]:
        """Every container of this Herdsman home on the engine (running or not)."""
        docker = _docker()
        labels = [f"{LABEL_SANDBOX}=1", f"{LABEL_OWNER}={self.owner}"]
        for attempt in range(3):
            try:
                found: list[Any] = self.client.containers.list(all=True, filters={"label": labels})
                return found
            except docker.errors.NotFound:
                continue  # one was removed (by the reaper) between the list and its inspection
            except docker.errors.APIError as exc:
                if "no such container" not in str(exc).lower() or attempt == 2:
                    raise
        sparse: list[Any] = self.client.containers.list(all=True, filters={"label": labels}, sparse=True)
        return sparse

    def cleanup(self) -> int:
        """Remove every container of this home, including ones left by an earlier process."""
        removed = 0
        for container in self.containers():
            try:
                container.remove(force=True)
                removed += 1
            except Exception as exc:  # noqa: BLE001 - one container that will not go must not stop the sweep of the others
                log.warning("sandbox_container_remove_failed", container=container.name, error=str(exc))
        with self._lock:
            for sandbox in self._sandboxes.values():
                sandbox.box.forget()
        return removed
