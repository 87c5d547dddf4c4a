"""The kubernetes provider: one pod per thread, through the official ``kubernetes`` client.

User data lives on a volume the gateway shares with the sandbox pods: the PersistentVolumeClaim
``sandbox.kubernetes.data_claim`` holds the gateway's home, and each pod mounts only its own
thread's ``threads/<id>/user-data/{workspace,uploads,outputs}`` (``subPath``) at the virtual
paths, with the skills claim's shared folders and the thread's user's own read-only under
``/mnt/skills`` (``subPath`` too: never another user's, see ``skill_view.py``). So, as with docker, the file tools
work on the gateway's side through :class:`ThreadPaths` and only ``bash`` runs in the pod, by
exec (see ``kubernetes_exec.py``).

Each pod runs as a non-root user with a read-only root, no capabilities, no service-account
token, requests and limits from ``sandbox.limits``, and the labels ``herdsman.sandbox``,
``herdsman.owner`` and ``herdsman.thread`` by which :meth:`KubernetesSandboxProvider.cleanup`
deletes them. Unless ``sandbox.network`` is true, a NetworkPolicy selecting those pods denies
all egress and ingress. Kubernetes has no per-pod pid limit in the pod spec: set the kubelet's
``podPidsLimit`` on the nodes that run sandboxes (see deploy/kubernetes/README.md).

Pods are named ``<prefix>-<owner>-<thread hash>-<random>``, so a replacement can start while the
old pod is still terminating; a thread's pod is found by its labels.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, cast

from herdsman.config.schema import HerdsmanConfig, SandboxConfig
from herdsman.logs import get_logger
from herdsman.sandbox import skill_view
from herdsman.sandbox.base import OUTPUTS, SKILLS_ROOT, UPLOADS, WORKSPACE, ExecResult, SandboxError
from herdsman.sandbox.container_scripts import env_line, exec_environment, sweep_argv, wrapped_argv
from herdsman.sandbox.docker import LABEL_OWNER, LABEL_SANDBOX, LABEL_THREAD, owner_id
from herdsman.sandbox.host_files import release_if_deleted, skills_dir
from herdsman.sandbox.kubernetes_exec import ExecOpener, WebsocketExecOpener, read_exec
from herdsman.sandbox.kubernetes_ports import PodNetwork, PortForwarder, WebsocketPortForwarder
from herdsman.sandbox.limits import Limits
from herdsman.sandbox.owners import thread_paths
from herdsman.sandbox.paths import ThreadPaths, secure_home, validate_thread_id
from herdsman.sandbox.process import StreamCapture, new_run_id
from herdsman.sandbox.remote import BoxUsage, Reaper, RemoteSandbox, RemoteSandboxes, file_owner, reaper_interval
from herdsman.sandbox.skill_view import ensure_own_folder

log = get_logger(__name__)

CONTAINER = "sandbox"
LABEL_VIEW = "herdsman.view"  # the layout of the pod's mounts: a pod of another layout is not adopted
VIEW = "2"  # 2: the shared skills and the owner's own (skill_view.py); before: the whole skills claim
_SWEEP_TIMEOUT = 10.0
_EXEC_TEXT_CHARS = 1024 * 1024  # what a helper exec may print (a pod's socket table)


class KubernetesError(SandboxError):
    """The Kubernetes API refused or failed a request; the message says what to do."""


def thread_label(thread_id: str) -> str:
    """A label value for ``thread_id`` (label values are at most 63 characters)."""
    if len(thread_id) <= 63 and thread_id[-1].isalnum():
        return thread_id
    return "h-" + hashlib.sha256(thread_id.encode()).hexdigest()[:40]


def _quantity_mib(mb: int) -> str:
    return f"{mb}Mi"


def resources_of(limits: Limits) -> dict[str, dict[str, str]]:
    """Container requests and limits from ``sandbox.limits`` (requests = limits: guaranteed QoS).

    ``pids`` and ``file_size_mb`` have no field in a pod spec: the kubelet's ``podPidsLimit``
    and the size of the data volume bound them.
    """
    amounts: dict[str, str] = {}
    if limits.memory_mb:
        amounts["memory"] = _quantity_mib(limits.memory_mb)
    if limits.cpus:
        amounts["cpu"] = f"{int(limits.cpus * 1000)}m"
    return {"requests": dict(amounts), "limits": dict(amounts)}


def skill_claim_paths(paths: ThreadPaths) -> list[tuple[str, str]]:
    """The folders of the skills claim the pod of ``paths`` mounts, as (virtual path, subPath):
    the shared ones and its owner's own (``skill_view.py``); the shared ones alone when the
    gateway has no skills folder of its own to look at."""
    if paths.skills is None:
        return [(f"{SKILLS_ROOT}/{name}", name) for name in skill_view.SHARED_FOLDERS]
    return [
        (virtual, str(host.relative_to(paths.skills))) for virtual, host in skill_view.mounts(paths.skills, paths.owner)
    ]


def pod_manifest(
    paths: ThreadPaths,
    sandbox: SandboxConfig,
    limits: Limits,
    *,
    name: str,
    owner: str,
) -> dict[str, Any]:
    """The Pod of the thread of ``paths`` (a pure function; a dict the client accepts as body)."""
    conf = sandbox.kubernetes
    home = paths.home

    def sub(path: Any) -> str:
        return str(path.relative_to(home))

    mounts: list[dict[str, Any]] = [
        {"name": "user-data", "mountPath": WORKSPACE, "subPath": sub(paths.workspace)},
        {"name": "user-data", "mountPath": UPLOADS, "subPath": sub(paths.uploads)},
        {"name": "user-data", "mountPath": OUTPUTS, "subPath": sub(paths.outputs)},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "user-data", "persistentVolumeClaim": {"claimName": conf.data_claim}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "256Mi"}},
    ]
    if conf.skills_claim:  # the shared skills and the owner's own, each on its own (skill_view.py)
        for virtual, sub_path in skill_claim_paths(paths):
            mounts.append({"name": "skills", "mountPath": virtual, "subPath": sub_path, "readOnly": True})
        volumes.append({"name": "skills", "persistentVolumeClaim": {"claimName": conf.skills_claim, "readOnly": True}})
    uid = conf.run_as_user
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": conf.namespace,
            "labels": {
                LABEL_SANDBOX: "1",
                LABEL_OWNER: owner,
                LABEL_THREAD: thread_label(paths.thread_id),
                LABEL_VIEW: VIEW,
            },
            "annotations": {"herdsman/thread-id": paths.thread_id},
        },
        "spec": {
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 0,
            "hostname": "sandbox",
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": uid,
                "runAsGroup": uid,
                "fsGroup": uid,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": CONTAINER,
                    "image": conf.image,
                    "command": ["sleep", "infinity"],
                    "workingDir": WORKSPACE,
                    "env": [{"name": k, "value": v} for k, v in exec_environment().items()],
                    "resources": resources_of(limits),
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "privileged": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "volumeMounts": mounts,
                }
            ],
            "volumes": volumes,
        },
    }


def network_policy_manifest(namespace: str, owner: str, name: str) -> dict[str, Any]:
    """A NetworkPolicy denying all egress and ingress of this home's sandbox pods."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL_SANDBOX: "1", LABEL_OWNER: owner}},
        "spec": {
            "podSelector": {"matchLabels": {LABEL_SANDBOX: "1", LABEL_OWNER: owner}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": [],
        },
    }


def _status(exc: Exception) -> int | None:
    return getattr(exc, "status", None)


class ThreadPod(BoxUsage):
    """The pod of one thread: created on demand, recreated when gone, deleted when idle."""

    def __init__(self, provider: KubernetesSandboxProvider, paths: ThreadPaths) -> None:
        super().__init__()
        self._provider = provider
        self.paths = paths
        self.name: str | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether a pod is known for the thread."""
        return self.name is not None

    def ensure_id(self) -> str:
        """The name of the running pod (adopted by label, or created and waited for)."""
        with self._lock:
            if self.name is None:
                self.name = self._provider.find_pod(self.paths.thread_id) or self._provider.start_pod(self.paths)
            return self.name

    def recreate(self) -> str:
        """Delete the current pod and start a new one (files are on the shared volume)."""
        with self._lock:
            if self.name is not None:
                self._provider.delete_pod(self.name)
            self.name = self._provider.start_pod(self.paths)
            return self.name

    def forget(self) -> None:
        """Delete the pod (files stay); the next command starts a new one."""
        with self._lock:
            if self.name is not None:
                self._provider.delete_pod(self.name)
            self.name = None


class PodShell:
    """Runs commands in a thread's pod by exec, with a deadline and bounded output.

    It runs background servers too (``background.py``): a background job is one long exec (the
    pod counts it busy, so the idle reaper leaves it), its ports read by exec and reached through
    the API server's port-forward (``kubernetes_ports.py``, which says why no other thread or
    user can reach them)."""

    background = True

    def __init__(self, provider: KubernetesSandboxProvider, pod: ThreadPod, limits: Limits) -> None:
        self._provider = provider
        self._pod = pod
        self._limits = limits

    def job_network(self, run_id: str) -> PodNetwork:
        """The network of a background job in this pod (the pod's, shared by its jobs)."""
        pod = self._pod
        return PodNetwork(
            run_id,
            lambda argv: self._provider.exec_text(pod.ensure_id(), argv),
            lambda port: self._provider.forward_port(pod.ensure_id(), port),
        )

    def run(
        self,
        paths: ThreadPaths,
        command: str,
        timeout: float,
        cancel: threading.Event | None = None,
        env: Mapping[str, str] | None = None,
        run_id: str | None = None,
    ) -> ExecResult:
        """Run ``command`` in the pod (its processes marked with ``run_id``); a pod that is gone is
        recreated once and retried.

        ``env`` (a skill's secrets) goes on the exec's standard input, read by the wrapper before
        the command starts (``container_scripts.env_line``): an exec carries no environment, a
        value in the command line would be in the API server's request log, and one in the pod
        spec would be readable by anyone who may read pods."""
        pod = self._pod
        pod.use(+1)
        run_id = run_id or new_run_id()
        argv = wrapped_argv(command, run_id, env_on_stdin=bool(env))
        stdin = env_line(env) if env else None
        try:
            name = pod.ensure_id()
            try:
                ws = self._provider.open_exec(name, argv, stdin)
            except _PodGone:
                log.info("sandbox_pod_gone", thread_id=paths.thread_id, action="recreating it")
                ws = self._provider.open_exec(pod.recreate(), argv, stdin)
            capture = StreamCapture(self._limits.output_chars)
            try:
                reason, code = read_exec(ws, capture, time.monotonic() + timeout, cancel)
            finally:
                ws.close()
            if reason != "eof":
                self._kill(run_id)
            capture.finish()
            exit_code = 137 if reason != "eof" else (code if code is not None else -1)
            return capture.result(exit_code, reason)
        finally:
            pod.use(-1)

    def _kill(self, run_id: str) -> None:
        """Kill the command's processes; recreate the pod when that cannot run (pid limit)."""
        try:
            ws = self._provider.open_exec(self._pod.ensure_id(), sweep_argv(run_id))
            try:
                reason, code = read_exec(ws, StreamCapture(1000), time.monotonic() + _SWEEP_TIMEOUT)
            finally:
                ws.close()
            if reason == "eof" and code == 0:
                return
        except Exception as exc:  # noqa: BLE001 - any failure falls back to a new pod
            log.info("sandbox_command_sweep_failed", run_id=run_id, error=str(exc), action="recreating the pod")
        log.warning("sandbox_pod_recreating", thread_id=self._pod.paths.thread_id, reason="to stop a command")
        self._pod.recreate()


class _PodGone(Exception):
    """The pod was deleted or is not running."""


class KubernetesSandbox(RemoteSandbox):
    """A thread's sandbox: files on the shared volume, commands in its pod."""

    box: ThreadPod


def load_api_client(sandbox: SandboxConfig) -> Any:
    """An ``ApiClient`` from ``sandbox.kubernetes.kubeconfig``, else in-cluster, else ~/.kube/config."""
    from kubernetes import client, config

    conf = sandbox.kubernetes
    try:
        if conf.kubeconfig is not None:
            return config.new_client_from_config(config_file=str(conf.kubeconfig.expanduser()), context=conf.context)
        try:
            config.load_incluster_config()
            return client.ApiClient()
        except config.ConfigException:
            return config.new_client_from_config(context=conf.context)
    except Exception as exc:  # noqa: BLE001 - any configuration error: one message says how to configure the cluster access
        raise KubernetesError(
            f"cannot load a Kubernetes configuration ({exc}); run the gateway in the cluster with the "
            "service account from deploy/kubernetes/rbac.yaml, or set sandbox.kubernetes.kubeconfig"
        ) from None


class KubernetesSandboxProvider(RemoteSandboxes):
    """Hands out :class:`KubernetesSandbox` instances, one pod per thread."""

    def __init__(
        self,
        config: HerdsmanConfig,
        api_client: Any = None,
        exec_opener: ExecOpener | None = None,
        port_forwarder: PortForwarder | None = None,
    ) -> None:
        from kubernetes import client

        self._sandbox_config = config.sandbox
        self._conf = config.sandbox.kubernetes
        self._limits = Limits.from_config(config.sandbox)
        self._home = config.resolve_home()
        secure_home(self._home)
        self._skills = skills_dir(config)
        self.namespace = self._conf.namespace
        self.owner = owner_id(self._home)
        self.api_client = api_client or load_api_client(config.sandbox)
        self.core = client.CoreV1Api(self.api_client)
        self.networking = client.NetworkingV1Api(self.api_client)
        self._open = exec_opener or WebsocketExecOpener(self.core, CONTAINER)
        self._forward = port_forwarder or WebsocketPortForwarder(self.core)
        self._uid_gid = file_owner(f"{self._conf.run_as_user}:{self._conf.run_as_user}")
        self._sandboxes: dict[str, KubernetesSandbox] = {}  # type: ignore[assignment]  # its own kind (the base reads them as RemoteSandbox; dict is invariant)
        self._lock = threading.Lock()
        self._policy_ready = False
        idle = self._conf.idle_timeout_seconds
        self._reaper = Reaper(self.reap_idle, reaper_interval(idle), "herdsman-kubernetes-reaper") if idle > 0 else None

    # -- API ------------------------------------------------------------------------------

    def api_error(self, action: str, exc: Exception) -> KubernetesError:
        """A model-safe error for a failed API request (details go to the log)."""
        log.error("kubernetes_api_failed", action=action, exc_info=exc)
        hint = ""
        if _status(exc) == 403:
            hint = " (the gateway's service account lacks a permission; apply deploy/kubernetes/rbac.yaml)"
        return KubernetesError(
            f"the Kubernetes API could not {action} (status {_status(exc) or type(exc).__name__}){hint}; "
            "try again, and if it persists ask the operator to check the cluster"
        )

    def ensure_network_policy(self) -> str | None:
        """Create the deny-all NetworkPolicy of this home's pods (unless sandbox.network); its name."""
        if self._sandbox_config.network:
            return None
        name = f"{self._conf.name_prefix}-{self.owner}-deny-all"
        if self._policy_ready:
            return name
        body = network_policy_manifest(self.namespace, self.owner, name)
        try:
            self.networking.create_namespaced_network_policy(
                self.namespace, cast(Any, body)
            )  # a manifest dict, as the client accepts
        except Exception as exc:  # noqa: BLE001 - the client raises ApiException and transport errors alike: the status decides
            if _status(exc) != 409:  # 409: it exists already
                raise self.api_error("create the sandbox NetworkPolicy", exc) from exc
        self._policy_ready = True
        return name

    def _selector(self, thread_id: str | None = None) -> dict[str, str]:
        labels = {LABEL_SANDBOX: "1", LABEL_OWNER: self.owner}
        if thread_id is not None:
            labels[LABEL_THREAD] = thread_label(thread_id)
        return labels

    def pods(self, thread_id: str | None = None) -> list[Any]:
        """This home's sandbox pods (of one thread when given) that are not being deleted."""
        wanted = self._selector(thread_id)
        selector = ",".join(f"{k}={v}" for k, v in wanted.items())
        try:
            items = self.core.list_namespaced_pod(self.namespace, label_selector=selector).items
        except Exception as exc:  # noqa: BLE001 - the client raises ApiException and transport errors alike: one clear error names the step
            raise self.api_error("list the sandbox pods", exc) from exc
        # Filter again here: the selector is a server-side optimisation, the labels are the rule.
        return [
            pod for pod in items
            if pod.metadata is not None
            and all((pod.metadata.labels or {}).get(k) == v for k, v in wanted.items())
            and pod.metadata.deletion_timestamp is None
        ]  # fmt: skip

    def find_pod(self, thread_id: str) -> str | None:
        """The name of a running pod of ``thread_id`` left by an earlier process, if any."""
        for pod in self.pods(thread_id):
            if (pod.metadata.labels or {}).get(LABEL_VIEW) != VIEW:
                self.delete_pod(str(pod.metadata.name))  # an older layout (the whole skills claim): replaced
                continue
            if pod.status is not None and pod.status.phase == "Running":
                return str(pod.metadata.name)
        return None

    def start_pod(self, paths: ThreadPaths) -> str:
        """Create the thread's pod and wait until it runs; its name."""
        self.ensure_network_policy()
        ensure_own_folder(paths.skills, paths.owner)  # mounted from the start: a skill installed later shows
        digest = hashlib.sha256(paths.thread_id.encode()).hexdigest()[:8]
        name = f"{self._conf.name_prefix}-{self.owner}-{digest}-{uuid.uuid4().hex[:5]}"
        body = pod_manifest(paths, self._sandbox_config, self._limits, name=name, owner=self.owner)
        try:
            self.core.create_namespaced_pod(self.namespace, cast(Any, body))  # a manifest dict, as the client accepts
        except Exception as exc:  # noqa: BLE001 - the client raises ApiException and transport errors alike: one clear error names the step
            raise self.api_error("create the sandbox pod", exc) from exc
        self._wait_running(name)
        log.info("sandbox_pod_started", thread_id=paths.thread_id)
        return name

    def _wait_running(self, name: str) -> None:
        deadline = time.monotonic() + self._conf.startup_timeout_seconds
        phase = "Pending"
        while time.monotonic() < deadline:
            try:
                pod = self.core.read_namespaced_pod(name, self.namespace)
            except Exception as exc:  # noqa: BLE001 - the client raises ApiException and transport errors alike: one clear error names the step
                raise self.api_error("read the sandbox pod", exc) from exc
            phase = (pod.status.phase if pod.status else None) or "Pending"
            if phase == "Running":
                return
            if phase in ("Failed", "Succeeded"):
                break
            time.sleep(0.2)
        self.delete_pod(name)
        raise KubernetesError(
            f"the sandbox pod did not start (phase {phase}); check that the image "
            f"{self._conf.image} can be pulled and the claim {self._conf.data_claim} mounted "
            f"(kubectl -n {self.namespace} get events), or raise sandbox.kubernetes.startup_timeout_seconds"
        )

    def delete_pod(self, name: str) -> None:
        """Delete pod ``name`` at once (grace period 0); a pod already gone is fine."""
        try:
            self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)
        except Exception as exc:  # noqa: BLE001 - deletion is best effort
            if _status(exc) != 404:
                log.warning("sandbox_pod_delete_failed", pod=name, error=str(exc))

    def open_exec(self, pod: str, argv: list[str], stdin: bytes | None = None) -> Any:
        """Open an exec stream in ``pod`` (``stdin`` written to it); raises _PodGone when the pod
        is missing or not running."""
        try:
            return self._open(pod, self.namespace, argv, stdin)
        except Exception as exc:  # noqa: BLE001 - the stream client raises many types for a pod that is gone: the status or message decides
            if _status(exc) in (404, 400) or "not found" in str(exc).lower() or "not running" in str(exc).lower():
                raise _PodGone() from exc
            raise self.api_error("run a command in the sandbox pod", exc) from exc

    def exec_text(self, pod: str, argv: list[str], timeout: float = _SWEEP_TIMEOUT) -> str:
        """What ``argv`` prints in ``pod`` (bounded in size and time); "" when it cannot run."""
        capture = StreamCapture(_EXEC_TEXT_CHARS)
        try:
            ws = self.open_exec(pod, argv)
        except (_PodGone, KubernetesError) as exc:
            log.info("sandbox_pod_exec_failed", command=argv[:1], pod=pod, error=str(exc))
            return ""
        try:
            read_exec(ws, capture, time.monotonic() + timeout)
        finally:
            ws.close()
        capture.finish()
        return capture.result(0, "eof").stdout or ""

    def forward_port(self, pod: str, port: int) -> Any:
        """One connection to ``port`` of ``pod`` through the API server's port-forward."""
        return self._forward(pod, self.namespace, port)

    # -- protocol -------------------------------------------------------------------------

    def acquire(self, thread_id: str) -> KubernetesSandbox:
        """The sandbox of ``thread_id`` (its pod starts with the first command)."""
        validate_thread_id(thread_id)
        release_if_deleted(self, self._sandboxes, thread_id)
        with self._lock:
            sandbox = self._sandboxes.get(thread_id)
            if sandbox is None:
                paths = thread_paths(self._home, thread_id, self._skills)
                paths.ensure_dirs()
                pod = ThreadPod(self, paths)
                shell = PodShell(self, pod, self._limits)
                sandbox = KubernetesSandbox(paths, shell, self._sandbox_config, pod, self._uid_gid)
                self._sandboxes[thread_id] = sandbox
            return sandbox

    def close(self) -> None:
        """Release every sandbox and stop the reaper."""
        self.release_all()

    # -- housekeeping ---------------------------------------------------------------------

    def idle_timeout(self) -> float:
        """``sandbox.kubernetes.idle_timeout_seconds``."""
        return self._conf.idle_timeout_seconds

    def cleanup(self) -> int:
        """Delete every sandbox pod of this home, including ones left by an earlier process."""
        pods = self.pods()
        for pod in pods:
            self.delete_pod(pod.metadata.name)
        with self._lock:
            for sandbox in self._sandboxes.values():
                sandbox.box.name = None
        return len(pods)
