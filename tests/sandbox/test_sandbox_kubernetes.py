"""The kubernetes provider against kmock's emulated API, with exec faked at the websocket boundary.

What is real: the official client's HTTP calls (create, read, list, delete of pods and network
policies), the pod and policy bodies, the exec wrapper, deadlines and sweeps. What is not: no
kubelet runs the pod (a fake marks it Running) and the exec stream runs the command on this
machine in the thread's workspace instead of in a container.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import Sandbox, SandboxProvider
from herdsman.sandbox.jail_ports import PortUnreachable
from herdsman.sandbox.kubernetes import (
    KubernetesError,
    KubernetesSandboxProvider,
    WebsocketExecOpener,
    network_policy_manifest,
    pod_manifest,
    thread_label,
)
from herdsman.sandbox.kubernetes_exec import exit_code_of
from herdsman.sandbox.kubernetes_ports import WebsocketPortForwarder
from herdsman.sandbox.limits import Limits
from herdsman.sandbox.process import marked_pids
from tests.sandbox.kube_emulator import EmulatedCluster, HostExecOpener, PortForwardServer

NAMESPACE = "sandboxes"
DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmulatedCluster]:
    emulated = EmulatedCluster()
    yield emulated
    emulated.stop()


@pytest.fixture(scope="module")
def forwarding() -> Iterator[PortForwardServer]:
    served = PortForwardServer()
    yield served
    served.stop()


@pytest.fixture
def kube_config(tmp_path: Path, skills_dir: Path) -> Callable[..., HerdsmanConfig]:
    def factory(**sandbox: Any) -> HerdsmanConfig:
        kube = {"namespace": NAMESPACE, "startup_timeout_seconds": 5, **sandbox.pop("kubernetes", {})}
        section = {"provider": "kubernetes", "command_timeout_seconds": 20, "kubernetes": kube, **sandbox}
        return HerdsmanConfig.model_validate(
            {"home": str(tmp_path / "home"), "skills": {"path": str(skills_dir)}, "sandbox": section}
        )

    return factory


@pytest.fixture
def make_provider(
    cluster: EmulatedCluster, kube_config, forwarding: PortForwardServer
) -> Iterator[Callable[..., KubernetesSandboxProvider]]:
    """``make_provider(**sandbox)``: a provider on the emulator whose exec runs in the thread's workspace."""
    made: list[KubernetesSandboxProvider] = []

    def factory(**sandbox: Any) -> KubernetesSandboxProvider:
        holder: dict[str, KubernetesSandboxProvider] = {}

        def workspace_of(manifest: dict[str, Any]) -> Path:
            thread = manifest["metadata"]["annotations"]["herdsman/thread-id"]
            return holder["p"].acquire(thread).paths.workspace

        opener = HostExecOpener(cluster, workspace_of)
        # port-forward: the official client's websocket, to the API server's endpoint faked at the wire
        forwarder = WebsocketPortForwarder(
            client.CoreV1Api(client.ApiClient(client.Configuration(host=forwarding.url)))
        )
        provider = KubernetesSandboxProvider(
            kube_config(**sandbox), api_client=cluster.api_client(), exec_opener=opener, port_forwarder=forwarder
        )
        provider.opener = opener  # type: ignore[attr-defined]
        holder["p"] = provider
        made.append(provider)
        return provider

    yield factory
    for provider in made:
        provider.cleanup()
        provider.close()


def test_pod_is_non_root_read_only_without_token_and_limited(kube_config) -> None:
    config = kube_config(limits={"memory_mb": 256, "cpus": 0.5})
    from herdsman.sandbox.paths import ThreadPaths

    paths = ThreadPaths.for_thread(config.resolve_home(), "t1")
    pod = pod_manifest(paths, config.sandbox, Limits.from_config(config.sandbox), name="p", owner="o")
    spec = pod["spec"]
    container = spec["containers"][0]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 1000
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["limits"] == {"memory": "256Mi", "cpu": "500m"}
    assert container["resources"]["requests"] == container["resources"]["limits"]
    mounts = {m["mountPath"]: m.get("subPath") for m in container["volumeMounts"]}
    assert mounts["/mnt/user-data/workspace"] == "threads/t1/user-data/workspace"
    assert mounts["/mnt/user-data/outputs"] == "threads/t1/user-data/outputs"
    assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == "herdsman-data"
    assert pod["metadata"]["labels"] == {
        "herdsman.sandbox": "1",
        "herdsman.owner": "o",
        "herdsman.thread": "t1",
        "herdsman.view": "2",
    }


def test_long_thread_ids_get_a_valid_label() -> None:
    label = thread_label("a" * 100)
    assert len(label) <= 63 and label[0].isalnum() and label[-1].isalnum()
    assert thread_label("abc-123") == "abc-123"


def test_network_policy_denies_all_egress() -> None:
    policy = network_policy_manifest("ns", "owner", "deny")
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"] == [] and policy["spec"]["ingress"] == []
    assert policy["spec"]["podSelector"]["matchLabels"] == {"herdsman.sandbox": "1", "herdsman.owner": "owner"}


def test_first_command_creates_the_pod_and_the_policy(make_provider, cluster: EmulatedCluster) -> None:
    provider = make_provider()
    assert isinstance(provider, SandboxProvider)
    sandbox = provider.acquire("t1")
    assert isinstance(sandbox, Sandbox)
    assert provider.pods() == []  # acquiring alone starts nothing
    result = sandbox.execute("echo out; echo err >&2; exit 3")
    assert result.exit_code == 3
    assert sorted(result.output.splitlines()) == ["err", "out"]
    pods = provider.pods("t1")
    assert len(pods) == 1 and pods[0].status.phase == "Running"
    assert pods[0].spec.containers[0].security_context.read_only_root_filesystem is True
    policy = provider.networking.read_namespaced_network_policy(provider.ensure_network_policy(), NAMESPACE)
    assert policy.spec.policy_types == ["Ingress", "Egress"]
    assert provider.acquire("t1").execute("true").exit_code == 0
    assert len(provider.pods("t1")) == 1  # reused


def test_no_policy_when_network_is_on(make_provider) -> None:
    provider = make_provider(network=True)
    assert provider.ensure_network_policy() is None


def test_files_cross_between_tools_and_commands(make_provider) -> None:
    sandbox = make_provider().acquire("t1")
    sandbox.write_text("notes.md", "from the tool\n")
    assert sandbox.execute("cat notes.md; echo from bash > out.txt").output == "from the tool\n"
    assert sandbox.read_text("out.txt") == "from bash\n"


def test_timeout_kills_the_command_tree(make_provider, find_pids) -> None:
    sandbox = make_provider().acquire("t1")
    token = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    result = sandbox.execute(f"echo started; setsid sleep {token} & sleep {token}", timeout=1)
    assert result.timed_out and result.exit_code == 137
    assert result.output.startswith("started")
    deadline = time.monotonic() + 5  # SIGKILLed processes take a moment to be gone
    while find_pids(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert find_pids(f"sleep {token}") == []


def test_a_deleted_pod_is_recreated_with_files_intact(make_provider) -> None:
    provider = make_provider()
    sandbox = provider.acquire("t1")
    sandbox.execute("echo kept > keep.txt")
    first = sandbox.ensure_running()
    provider.core.delete_namespaced_pod(first, NAMESPACE)
    assert sandbox.execute("cat keep.txt").output == "kept\n"
    assert sandbox.ensure_running() != first
    assert [p.metadata.name for p in provider.pods("t1")] == [sandbox.ensure_running()]


def test_release_reap_and_cleanup_by_label(make_provider, cluster: EmulatedCluster) -> None:
    provider = make_provider()
    provider.acquire("t1").execute("true")
    provider.acquire("t2").execute("true")
    assert {p.metadata.labels["herdsman.thread"] for p in provider.pods()} == {"t1", "t2"}
    provider.release("t1")
    assert {p.metadata.labels["herdsman.thread"] for p in provider.pods()} == {"t2"}
    assert provider.reap_idle(max_idle_seconds=0) == ["t2"]
    assert provider.pods() == []
    provider.acquire("t3").execute("true")
    later = make_provider()  # a new gateway process finds and adopts, then cleans up
    assert later.acquire("t3").ensure_running() == provider.acquire("t3").ensure_running()
    assert later.cleanup() == 1
    assert later.pods() == []


def test_pods_of_another_home_are_left_alone(make_provider, cluster: EmulatedCluster, tmp_path: Path) -> None:
    ours = make_provider()
    ours.acquire("t1").execute("true")
    other_body = {"metadata": {"name": "other", "labels": {"herdsman.sandbox": "1", "herdsman.owner": "someone"}},
                  "spec": {"containers": [{"name": "c", "image": "x"}]}}  # fmt: skip
    ours.core.create_namespaced_pod(NAMESPACE, other_body)
    assert ours.cleanup() == 1
    assert [p["metadata"]["name"] for p in cluster.live_pods(NAMESPACE)] == ["other"]
    ours.core.delete_namespaced_pod("other", NAMESPACE)


def test_a_pod_that_fails_to_start_says_what_to_check(make_provider) -> None:
    provider = make_provider(kubernetes={"image": "registry.example/broken:1"})
    with pytest.raises(KubernetesError, match="did not start") as info:
        provider.acquire("t1").execute("true")
    assert "kubectl -n sandboxes get events" in str(info.value)
    assert provider.pods() == []


def test_forbidden_says_to_apply_the_rbac(make_provider) -> None:
    provider = make_provider()

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise ApiException(status=403, reason="Forbidden")

    provider.core.create_namespaced_pod = forbidden
    with pytest.raises(KubernetesError, match="deploy/kubernetes/rbac.yaml"):
        provider.acquire("t1").execute("true")


def test_exit_status_comes_from_the_error_channel() -> None:
    assert exit_code_of(b'{"metadata":{},"status":"Success"}') == 0
    failure = (
        '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"42"}]}}'
    )
    assert exit_code_of(failure) == 42
    assert exit_code_of("") is None


def test_websocket_opener_asks_for_a_binary_exec_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_stream(fn: Any, *args: Any, **kwargs: Any) -> str:
        seen.update(fn=fn, args=args, kwargs=kwargs)
        return "ws"

    import kubernetes.stream

    monkeypatch.setattr(kubernetes.stream, "stream", fake_stream)

    class Core:
        def connect_get_namespaced_pod_exec(self) -> None: ...

    core = Core()
    assert WebsocketExecOpener(core)("pod-1", "ns", ["sh", "-c", "true"]) == "ws"
    assert seen["fn"] == core.connect_get_namespaced_pod_exec
    assert seen["args"] == ("pod-1", "ns")
    assert seen["kwargs"] == {
        "container": "sandbox", "command": ["sh", "-c", "true"], "stdin": False, "stdout": True,
        "stderr": True, "tty": False, "binary": True, "_preload_content": False,
    }  # fmt: skip


# -- the shipped manifests --------------------------------------------------------------


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def test_manifests_parse_and_have_the_expected_kinds() -> None:
    kinds = {name: [d["kind"] for d in _documents(name)] for name in
             ("namespace.yaml", "rbac.yaml", "storage.yaml", "network-policy.yaml", "sandbox-pod.yaml")}  # fmt: skip
    assert kinds["rbac.yaml"] == ["ServiceAccount", "Role", "RoleBinding"]
    assert kinds["network-policy.yaml"] == ["NetworkPolicy"]
    assert kinds["sandbox-pod.yaml"] == ["Pod"]
    assert set(kinds["namespace.yaml"]) == {"Namespace"}
    assert set(kinds["storage.yaml"]) == {"PersistentVolumeClaim"}
    for docs in map(_documents, kinds):
        for doc in docs:
            assert doc["apiVersion"] and doc["metadata"]["name"]


def test_rbac_grants_what_the_provider_calls_and_no_more() -> None:
    account, role, binding = _documents("rbac.yaml")
    rules = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert {"create", "get", "list", "delete"} <= rules[("", "pods")]
    assert {"create", "get"} <= rules[("", "pods/exec")]
    assert {"create", "get"} <= rules[("networking.k8s.io", "networkpolicies")]
    assert {"create", "get"} <= rules[("", "pods/portforward")]
    assert set(rules) == {
        ("", "pods"),
        ("", "pods/exec"),
        ("", "pods/portforward"),
        ("networking.k8s.io", "networkpolicies"),
    }
    assert role["kind"] == "Role"  # namespaced, not cluster-wide
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]  # fmt: skip
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"] == "herdsman-sandbox"


def test_pod_template_matches_what_the_provider_creates(kube_config, skills_dir: Path) -> None:
    from herdsman.sandbox.paths import ThreadPaths

    config = kube_config(kubernetes={"namespace": "herdsman-sandbox", "skills_claim": "herdsman-skills"})
    for folder in ("custom", "users/<user>"):
        (skills_dir / folder).mkdir(parents=True)
    paths = ThreadPaths.for_thread(config.resolve_home(), "t1", skills_dir, owner="<user>")
    made = pod_manifest(paths, config.sandbox, Limits.from_config(config.sandbox), name="x", owner="o")
    (template,) = _documents("sandbox-pod.yaml")
    for key in ("automountServiceAccountToken", "enableServiceLinks", "securityContext", "restartPolicy"):
        assert template["spec"][key] == made["spec"][key], key
    ours, theirs = template["spec"]["containers"][0], made["spec"]["containers"][0]
    for key in ("securityContext", "resources", "command", "workingDir", "env"):
        assert ours[key] == theirs[key], key
    assert [m["mountPath"] for m in ours["volumeMounts"]] == [m["mountPath"] for m in theirs["volumeMounts"]]
    assert set(template["metadata"]["labels"]) == set(made["metadata"]["labels"])


def test_network_policy_manifest_denies_everything() -> None:
    (policy,) = _documents("network-policy.yaml")
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"] == [] and policy["spec"]["ingress"] == []
    assert policy["metadata"]["namespace"] == "herdsman-sandbox"


def test_the_reaper_deletes_idle_pods_by_itself(make_provider) -> None:
    provider = make_provider(kubernetes={"idle_timeout_seconds": 1})
    provider.acquire("t1").execute("true")
    for _ in range(100):  # the reaper looks every second
        if not provider.pods():
            break
        threading.Event().wait(0.1)
    assert provider.pods() == []


def test_build_sandbox_provider_reads_the_kubeconfig(cluster: EmulatedCluster, kube_config, tmp_path: Path) -> None:
    from herdsman.sandbox import build_sandbox_provider

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": cluster.url}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "me"}}],
    }))  # fmt: skip
    provider = build_sandbox_provider(kube_config(kubernetes={"kubeconfig": str(kubeconfig)}))
    assert isinstance(provider, KubernetesSandboxProvider)
    assert provider.pods() == []
    assert provider.ensure_network_policy() is not None
    provider.close()


def test_a_missing_kubeconfig_says_what_to_set(kube_config, tmp_path: Path) -> None:
    with pytest.raises(KubernetesError, match="sandbox.kubernetes.kubeconfig"):
        KubernetesSandboxProvider(kube_config(kubernetes={"kubeconfig": str(tmp_path / "nope")}))


def test_the_policy_is_shared_by_providers_of_one_home(make_provider) -> None:
    first, second = make_provider(), make_provider()
    name = first.ensure_network_policy()
    assert second.ensure_network_policy() == name  # it exists already: no error
    policies = first.networking.list_namespaced_network_policy(NAMESPACE).items
    assert [p.metadata.name for p in policies].count(name) == 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_background_server_in_the_pod_is_reached_through_the_port_forward(make_provider, forwarding) -> None:
    provider = make_provider()
    sandbox = provider.acquire("t1")
    sandbox.write_text("/mnt/user-data/workspace/index.html", "<h1>from the pod</h1>")
    port = _free_port()
    job = sandbox.start_background(f"exec python3 -m http.server {port} --bind 127.0.0.1")
    assert job.wait_listening(15) == [port] and not job.isolated
    assert sandbox.listening_ports() == [port]

    sock = sandbox.preview_connection(port)
    sock.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"<h1>from the pod</h1>"), answer
    assert forwarding.calls[-1] == (sandbox.box.name, NAMESPACE, port)  # to this thread's pod, that port

    with pytest.raises(PortUnreachable, match=f"nothing is listening on port {port + 1}"):
        sandbox.preview_connection(port + 1)
    with pytest.raises(PortUnreachable, match="no background server"):
        provider.acquire("t2").preview_connection(port)  # another thread's pod has none
    provider.release("t1")
    assert not job.running and not marked_pids(job.run_id), "the server died with its sandbox"
