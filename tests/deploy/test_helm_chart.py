"""deploy/helm/herdsman: the chart renders with Helm's engine, lints clean, every manifest passes
the Kubernetes API schema, and the objects are wired to each other.

Why these tools: Helm's own Go SDK through ``helm-python-sdk`` (no ``helm`` binary is packaged
on PyPI, Debian or npm), and ``kubernetes-validate``'s strict JSON schemas generated from the
Kubernetes OpenAPI (``kubeconform`` is not packaged there; the ``kubernetes`` client's models
accept unknown fields silently). Each manifest is checked against the oldest Kubernetes the chart
declares (1.27) and the newest the schemas know. No cluster is involved: that the pods start is
left to a real install (docs/deploy.md).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from herdsman.commands.check import check_config
from herdsman.config import parse_config
from tests.deploy.deploy_support import (
    CHART,
    CHART_REQUIRED,
    KUBERNETES_VERSIONS,
    REPO,
    find,
    kubernetes_errors,
    lint_chart,
    one,
    pod_templates,
    render_chart,
)

pytest.importorskip("helm_python", reason="helm-python-sdk is in the dev extras (make test installs it)")

NAMESPACE = "herdsman"


def values(**overrides: Any) -> dict[str, Any]:
    """The chart's required values with ``overrides`` merged in (one level deep per section)."""
    merged = copy.deepcopy(CHART_REQUIRED)
    for key, value in overrides.items():
        if isinstance(value, dict):
            merged[key] = {**merged.get(key, {}), **value}
        else:
            merged[key] = value
    return merged


VARIANTS = {
    "defaults": values(),
    "everything": values(
        workers={"enabled": True},
        ingress={
            "enabled": True,
            "className": "nginx",
            "tls": [{"secretName": "t", "hosts": ["herdsman.example.com"]}],
        },
        sandbox={"skillsClaim": "herdsman-skills"},
    ),
    "external-services": values(
        postgresql={"bundled": False, "externalUrl": "postgresql://h:p@db.internal:5432/h"},
        redis={"bundled": False, "externalUrl": "redis://:p@cache.internal:6379/0"},
        workers={"enabled": True, "autoscaling": {"enabled": False}},
    ),
    "existing-secret": {
        "secrets": {"existingSecret": "my-herdsman"},
        "web": {"enabled": False},
        "persistence": {"existingClaim": "shared-data"},
    },
}


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {name: render_chart(v, namespace=NAMESPACE) for name, v in VARIANTS.items()}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_passes_the_kubernetes_schema(rendered: dict, variant: str, version: str) -> None:
    objects = rendered[variant]
    assert objects
    assert kubernetes_errors(objects, version) == []


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_helm_lint_is_clean(variant: str) -> None:
    assert lint_chart(VARIANTS[variant]) == []


def test_lint_catches_a_broken_template(tmp_path: Path) -> None:
    chart = tmp_path / "herdsman"
    shutil.copytree(CHART, chart)
    web = chart / "templates" / "web.yaml"
    web.write_text(web.read_text().replace("{{- if .Values.web.enabled }}", "{{- if .Values.web.enabled }"))
    findings = lint_chart(values(), chart)
    assert any("web.yaml" in f for f in findings), findings


def test_the_validator_catches_a_broken_manifest(rendered: dict, tmp_path: Path) -> None:
    """A typo in a template and a wrong type are both refused, with the object and the field."""
    chart = tmp_path / "herdsman"
    shutil.copytree(CHART, chart)
    gateway = chart / "templates" / "gateway.yaml"
    gateway.write_text(gateway.read_text().replace("  replicas: {{", "  replica: {{", 1))
    errors = kubernetes_errors(render_chart(values(), chart), KUBERNETES_VERSIONS[0])
    assert any(e.startswith("Deployment/herdsman-gateway:") and "'replica'" in e for e in errors), errors

    hpa = copy.deepcopy(one(rendered["everything"], "HorizontalPodAutoscaler", "herdsman-worker"))
    hpa["spec"]["maxReplicas"] = "ten"
    errors = kubernetes_errors([hpa], KUBERNETES_VERSIONS[1])
    assert errors and "spec.maxReplicas" in errors[0]


def test_missing_secrets_stop_the_render_with_what_to_set() -> None:
    import helm_python as helm

    with pytest.raises(helm.HelmError, match=r"secrets\.apiKey is required"):
        render_chart({})
    with pytest.raises(helm.HelmError, match=r"postgresql\.externalUrl is required"):
        render_chart(values(postgresql={"bundled": False}))


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"gateway": {"replicas": "two"}}, "at '/gateway/replicas': got string, want integer"),
        ({"postgres": {"password": "x"}}, "additional properties 'postgres' not allowed"),
        ({"postgresql": {"bundled": False, "externalUrl": "mysql://db/h"}}, "at '/postgresql/externalUrl'"),
        (
            {"workers": {"autoscaling": {"targetCPUUtilizationPercentage": 170}}},
            "at '/workers/autoscaling/targetCPUUtilizationPercentage'",
        ),
    ],
)
def test_values_schema_names_a_wrong_value(bad: dict, said: str) -> None:
    """values.schema.json: Helm refuses a mistyped or misspelled value before rendering anything."""
    import helm_python as helm

    merged = values(**bad)
    with pytest.raises(helm.HelmError) as caught:
        render_chart(merged)
    assert said in str(caught.value)
    assert any(said in f for f in lint_chart(merged))


def secret_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The variables the chart's Secret gives every gateway and worker."""
    return one(objects, "Secret", "herdsman-secrets")["stringData"]


def chart_config(objects: list[dict[str, Any]]) -> str:
    return one(objects, "ConfigMap", "herdsman-config")["data"]["config.yaml"]


@pytest.mark.parametrize("variant", ["defaults", "everything", "external-services"])
def test_the_configmap_passes_the_config_schema_with_the_secrets_variables(rendered: dict, variant: str) -> None:
    objects = rendered[variant]
    env = secret_env(objects)
    config = parse_config(chart_config(objects), "ConfigMap herdsman-config", env=env)
    assert [str(p) for p in check_config(config, probe_network=False)] == []
    assert config.sandbox.provider == "kubernetes"
    assert config.sandbox.kubernetes.namespace == NAMESPACE
    assert config.checkpointer.type == "postgres" and config.gateway.stream_bridge == "redis"
    assert {k.role for k in config.gateway.keys()} == {"user", "admin"}
    if variant == "external-services":
        assert config.checkpointer.url == VARIANTS[variant]["postgresql"]["externalUrl"]
        assert not find(objects, "StatefulSet")
    else:
        database = urlsplit(config.checkpointer.url)
        assert database.hostname == "herdsman-postgresql"
        assert unquote(database.password) == CHART_REQUIRED["postgresql"]["password"]
        one(objects, "Service", "herdsman-postgresql")
        redis = urlsplit(config.gateway.redis_url)
        assert redis.hostname == "herdsman-redis"
        assert unquote(redis.password) == CHART_REQUIRED["redis"]["password"]
        one(objects, "Service", "herdsman-redis")


def test_user_config_is_merged_over_the_charts() -> None:
    objects = render_chart(values(config={"gateway": {"max_concurrent_runs": 3}, "sandbox": {"limits": {"cpus": 1}}}))
    config = parse_config(chart_config(objects), "ConfigMap", env=secret_env(objects))
    assert config.gateway.max_concurrent_runs == 3 and config.gateway.stream_bridge == "redis"
    assert config.sandbox.limits.cpus == 1 and config.sandbox.provider == "kubernetes"


def test_herdsman_pods_get_the_config_the_secret_the_claim_and_the_account(rendered: dict) -> None:
    objects = rendered["everything"]
    config = yaml.safe_load(chart_config(objects))
    account = one(objects, "ServiceAccount", "herdsman")["metadata"]["name"]
    for name in ("herdsman-gateway", "herdsman-worker"):
        pod = one(objects, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == account
        assert pod["securityContext"]["runAsUser"] == config["sandbox"]["kubernetes"]["run_as_user"] == 1000
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["config"]["configMap"]["name"] == "herdsman-config"
        claim = volumes["data"]["persistentVolumeClaim"]["claimName"]
        assert claim == config["sandbox"]["kubernetes"]["data_claim"]
        one(objects, "PersistentVolumeClaim", claim)
        container = pod["containers"][0]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts["data"] == config["home"] and mounts["config"] == "/etc/herdsman"
        assert {"name": "HERDSMAN_CONFIG", "value": "/etc/herdsman/config.yaml"} in container["env"]
        assert container["envFrom"] == [{"secretRef": {"name": "herdsman-secrets"}}]
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
    worker = one(objects, "Deployment", "herdsman-worker")["spec"]["template"]["spec"]["containers"][0]
    assert (
        worker["image"]
        == one(objects, "Deployment", "herdsman-gateway")["spec"]["template"]["spec"]["containers"][0]["image"]
    )
    assert worker["args"] == ["worker"]


def test_existing_secret_and_claim_are_used_and_not_made(rendered: dict) -> None:
    objects = rendered["existing-secret"]
    assert not find(objects, "Secret") and not find(objects, "PersistentVolumeClaim")
    gateway = one(objects, "Deployment", "herdsman-gateway")["spec"]["template"]["spec"]
    assert gateway["containers"][0]["envFrom"] == [{"secretRef": {"name": "my-herdsman"}}]
    assert {v["name"]: v for v in gateway["volumes"]}["data"]["persistentVolumeClaim"]["claimName"] == "shared-data"
    refs = [
        e["valueFrom"]["secretKeyRef"]["name"]
        for _, t in pod_templates(objects)
        for c in t["spec"]["containers"]
        for e in c.get("env", [])
        if "valueFrom" in e
    ]
    assert refs and set(refs) == {"my-herdsman"}
    assert yaml.safe_load(chart_config(objects))["sandbox"]["kubernetes"]["data_claim"] == "shared-data"


def test_services_ingress_and_autoscaler_point_at_what_exists(rendered: dict) -> None:
    objects = rendered["everything"]
    for service in find(objects, "Service"):
        selector = service["spec"]["selector"]
        pods = [t for _, t in pod_templates(objects) if selector.items() <= t["metadata"]["labels"].items()]
        assert pods, f"Service {service['metadata']['name']} selects no pod"
        ports = {p["name"] for t in pods for c in t["spec"]["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports
    services = {s["metadata"]["name"]: s for s in find(objects, "Service")}
    paths = one(objects, "Ingress", "herdsman")["spec"]["rules"][0]["http"]["paths"]
    routes = {(p["path"], p["pathType"]): p["backend"]["service"] for p in paths}
    assert routes[("/", "Exact")]["name"] == routes[("/assets", "Prefix")]["name"] == "herdsman-web"
    assert routes[("/", "Prefix")]["name"] == "herdsman-gateway"
    for backend in routes.values():
        assert backend["port"]["name"] in {p["name"] for p in services[backend["name"]]["spec"]["ports"]}
    hpa = one(objects, "HorizontalPodAutoscaler", "herdsman-worker")
    target = hpa["spec"]["scaleTargetRef"]
    worker = one(objects, target["kind"], target["name"])
    assert "replicas" not in worker["spec"], "the HPA owns the replica count"
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert worker["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]


def test_workers_are_off_until_the_worker_command_exists(rendered: dict) -> None:
    assert not find(rendered["defaults"], "Deployment", "herdsman-worker")
    assert not find(rendered["defaults"], "HorizontalPodAutoscaler")
    assert one(rendered["defaults"], "Deployment", "herdsman-gateway")["spec"]["replicas"] == 2


def test_sandbox_rbac_matches_the_plain_manifests_and_is_bound_to_the_account(rendered: dict) -> None:
    objects = rendered["defaults"]
    plain = list(yaml.safe_load_all((REPO / "deploy" / "kubernetes" / "rbac.yaml").read_text()))
    role = one(objects, "Role", "herdsman-sandbox-manager")
    assert role["rules"] == next(o for o in plain if o["kind"] == "Role")["rules"]
    binding = one(objects, "RoleBinding", "herdsman-sandbox-manager")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "herdsman", "namespace": NAMESPACE}]


def test_network_policies_close_the_sandbox_and_the_datastores(rendered: dict) -> None:
    objects = rendered["defaults"]
    plain = yaml.safe_load((REPO / "deploy" / "kubernetes" / "network-policy.yaml").read_text())
    deny = one(objects, "NetworkPolicy", "herdsman-sandbox-deny-all")["spec"]
    assert deny == plain["spec"]
    for part, port in (("postgresql", 5432), ("redis", 6379)):
        spec = one(objects, "NetworkPolicy", f"herdsman-{part}")["spec"]
        assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == part
        (rule,) = spec["ingress"]
        assert rule["ports"] == [{"port": port}]
        components = next(
            e for e in rule["from"][0]["podSelector"]["matchExpressions"] if e["key"] == "app.kubernetes.io/component"
        )
        assert components["values"] == ["gateway", "worker"]
    assert not find(rendered["external-services"], "NetworkPolicy", "herdsman-postgresql")


RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def restricted_problems(template: dict[str, Any]) -> list[str]:
    """What in a pod template the Pod Security Standard "restricted" forbids (its checks as of
    Kubernetes 1.27: host namespaces and ports, volume types, privilege, capabilities, root,
    seccomp)."""
    spec = template["spec"]
    pod_security = spec.get("securityContext", {})
    problems = [f"spec.{key}" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    problems += [f"volume {v['name']}" for v in spec.get("volumes", []) if not RESTRICTED_VOLUMES & v.keys()]
    for container in spec.get("initContainers", []) + spec["containers"]:
        security = container.get("securityContext", {})
        name = container["name"]
        if security.get("privileged"):
            problems.append(f"{name}: privileged")
        if security.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        capabilities = security.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []) or set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: capabilities must drop ALL")
        if not security.get("runAsNonRoot", pod_security.get("runAsNonRoot")):
            problems.append(f"{name}: runAsNonRoot is not true")
        if security.get("runAsUser", pod_security.get("runAsUser")) == 0:
            problems.append(f"{name}: runs as uid 0")
        seccomp = security.get("seccompProfile", pod_security.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: no RuntimeDefault seccomp profile")
        if any(p.get("hostPort") for p in container.get("ports", [])):
            problems.append(f"{name}: hostPort")
    return problems


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_pod_meets_the_restricted_pod_security_standard(rendered: dict, variant: str) -> None:
    """So the release's namespace can enforce `restricted` (docs/deploy.md), as the sandbox's does."""
    for workload, template in pod_templates(rendered[variant]):
        assert restricted_problems(template) == [], workload["metadata"]["name"]


def test_the_restricted_check_sees_a_root_container(rendered: dict) -> None:
    _, template = next(pod_templates(rendered["defaults"]))
    template = copy.deepcopy(template)
    template["spec"]["securityContext"]["runAsNonRoot"] = False
    template["spec"]["containers"][0]["securityContext"]["capabilities"] = {"add": ["SYS_ADMIN"]}
    template["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    problems = restricted_problems(template)
    assert any("runAsNonRoot" in p for p in problems) and any("capabilities" in p for p in problems)
    assert "volume host" in problems
