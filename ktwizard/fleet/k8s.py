"""Kubernetes manifests for a fleet: per host class (and NUMA slot) a Deployment pinned to the nodes it was planned
for, the router as a Deployment that finds the workers by label, its Service with the Prometheus port annotated,
and, where the whole model fits on GPUs across nodes, SGLang's own multi-node launch as a LeaderWorkerSet."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from ktwizard.errors import BadInput
from ktwizard.fleet.constants import DEFAULT_ROUTER_IMAGE
from ktwizard.fleet.k8s_policy import (
    POD_SECURITY,
    ROUTER_EXCEPTIONS,
    SERVER_EXCEPTIONS,
    network_policy,
    router_security,
    server_resources,
    server_security,
    skip_annotations,
)
from ktwizard.fleet.plan import FleetPlan, MultiNode, Replica
from ktwizard.fleet.router import ROUTER_MODULE, discovery_args
from ktwizard.planner.types import Plan
from ktwizard.render.args import argv, container_argv, container_paths
from ktwizard.render.docker import DEFAULT_IMAGE

GROUP = "ktwizard.io"
HOST_CLASS = f"{GROUP}/host-class"  # the node label that marks a host class when no node names are given
START_UP_S = 3600  # a 600 GB checkpoint loads for tens of minutes
DIST_PORT = 20000
GPU_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def namespace(fleet: FleetPlan) -> str:
    """Each fleet in its own namespace (named after it): its policies and RBAC touch nothing else."""
    return dns_name(fleet.name)


def slug(text: str, limit: int = 40) -> str:
    """A DNS-1123 label piece: lowercase letters, digits and '-'."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-") or "x"


def dns_name(text: str, limit: int = 63) -> str:
    """A resource name: the slug when it is the text itself, else the slug cut short with a hash of the text, so two
    texts that slug or truncate alike (a long fleet name, 'A.b' and 'a-b') never name one resource."""
    plain = slug(text, 10**6)
    if plain == text and len(plain) <= limit:
        return plain
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{slug(text, limit - 9)}-{digest}"


def _labels(fleet: FleetPlan, role: str, workload: str | None = None) -> dict[str, str]:
    out = {
        f"{GROUP}/fleet": slug(fleet.name, 63),
        f"{GROUP}/role": role,
        "app.kubernetes.io/managed-by": "ktwizard",
        "app.kubernetes.io/part-of": slug(fleet.name, 63),
    }
    if workload:
        out[f"{GROUP}/workload"] = workload
    return out


def _volumes(plan: Plan, weights_claim: str | None) -> tuple[list[dict], list[dict]]:
    """Volumes and mounts: the weights (a claim the user names, else host paths) and a memory-backed /dev/shm."""
    vols: list[dict] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    paths = container_paths(plan)
    if weights_claim:
        vols.append({"name": "weights", "persistentVolumeClaim": {"claimName": weights_claim, "readOnly": True}})
        for inside in paths.values():  # the claim holds each folder under its own name
            sub = inside.strip("/").partition("/")[2]
            mounts.append({"name": "weights", "mountPath": inside, "subPath": sub, "readOnly": True})
    else:
        for i, (host, inside) in enumerate(paths.items()):
            name = f"weights-{i}"
            vols.append({"name": name, "hostPath": {"path": host, "type": "Directory"}})
            mounts.append({"name": name, "mountPath": inside, "readOnly": True})
    return vols, mounts


def _probe(path: str, port: int, failures: int) -> dict:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


SECRET_DIR = "/run/secrets/ktwizard"  # the Secret's volume: its key `api-key` is the file the launchers read
SECRET_KEY_FILE = f"{SECRET_DIR}/api-key"


def secret_name(fleet: FleetPlan) -> str:
    """The Secret holding the API key: made by the user from their key file (the key is never in a manifest)."""
    return dns_name(f"{fleet.name}-api-key")


def _keyed(fleet: FleetPlan) -> bool:
    return any(r.plan.goals.api_key_file for r in fleet.replicas)


def _secret_volume(fleet: FleetPlan) -> tuple[dict, dict]:
    volume = {"name": "api-key", "secret": {"secretName": secret_name(fleet), "defaultMode": 0o400}}
    return volume, {"name": "api-key", "mountPath": SECRET_DIR, "readOnly": True}


def _worker_container(plan: Plan, image: str, port: int, mounts: list[dict]) -> dict:
    from ktwizard.apikey import LAUNCHER

    keyed = plan.goals.api_key_file is not None
    return {
        "name": "sglang",
        "image": image,
        # with a key: the launcher reads it from the Secret's file and adds --api-key=KEY inside the process
        "command": ["python3", "-c", LAUNCHER, SECRET_KEY_FILE] if keyed else ["python3", "-m", "sglang.launch_server"],
        "args": container_argv(plan, port),
        "env": [{"name": e.name, "value": e.value} for e in plan.env],
        "ports": [{"name": "http", "containerPort": port}],
        "imagePullPolicy": "IfNotPresent",
        "resources": server_resources(plan, plan.tp),
        "securityContext": server_security(),
        "volumeMounts": mounts,
        "startupProbe": _probe("/health", port, START_UP_S // 10),
        "readinessProbe": _probe("/health", port, 3),
        # after start-up: a server that stops answering for 2 minutes is restarted
        "livenessProbe": _probe("/health", port, 12),
    }


def _placement(workload: str, nodes: list[str] | None, host_class: str) -> dict:
    """Only on the nodes planned for (by name, or by the host-class label), one pod of the workload per node."""
    match = (
        {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}
        if nodes
        else {"key": HOST_CLASS, "operator": "In", "values": [host_class]}
    )
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [match]}]}
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {f"{GROUP}/workload": workload}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    }


def _worker_deployment(
    fleet: FleetPlan, rep: Replica, count: int, image: str, weights_claim: str | None, nodes: list[str] | None
) -> dict:
    host_class = slug(rep.machine.ref)
    workload = dns_name(f"{fleet.name}-{rep.machine.ref}" + (f"-numa{rep.node}" if rep.node is not None else ""))
    labels = _labels(fleet, "worker", workload)
    vols, mounts = _volumes(rep.plan, weights_claim)
    if rep.plan.goals.api_key_file:
        vol, mount = _secret_volume(fleet)
        vols, mounts = [*vols, vol], [*mounts, mount]
    port = fleet.router_port  # every pod has its own address: one worker port for the router's discovery
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": workload,
            "namespace": namespace(fleet),
            "labels": labels,
            "annotations": {f"{GROUP}/plan": rep.plan.digest, **skip_annotations(SERVER_EXCEPTIONS)},
        },
        "spec": {
            "replicas": count,
            "selector": {"matchLabels": {f"{GROUP}/workload": workload}},
            "strategy": {"type": "Recreate"},  # a second copy of the weights never fits beside the first
            "template": {
                "metadata": {"labels": labels, "annotations": {f"{GROUP}/plan": rep.plan.digest}},
                "spec": {
                    "affinity": _placement(workload, nodes, host_class),
                    "tolerations": GPU_TOLERATIONS,
                    "securityContext": POD_SECURITY,
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 60,
                    "containers": [_worker_container(rep.plan, image, port, mounts)],
                    "volumes": vols,
                },
            },
        },
    }


def _router(fleet: FleetPlan, image: str) -> list[dict]:
    from ktwizard.apikey import ROUTER_LAUNCHER

    name = dns_name(f"{fleet.name}-router")
    labels = _labels(fleet, "router")
    selector = {f"{GROUP}/fleet": slug(fleet.name, 63), f"{GROUP}/role": "worker"}
    http, metrics = fleet.router_port, fleet.metrics_port
    keyed = _keyed(fleet)
    key_volume, key_mount = _secret_volume(fleet)
    ns = namespace(fleet)
    router_pods = {f"{GROUP}/fleet": labels[f"{GROUP}/fleet"], f"{GROUP}/role": "router"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns, "labels": labels}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": labels,
                "annotations": skip_annotations(ROUTER_EXCEPTIONS),
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {f"{GROUP}/fleet": labels[f"{GROUP}/fleet"], f"{GROUP}/role": "router"}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": name,
                        "securityContext": POD_SECURITY,
                        **({"volumes": [key_volume]} if keyed else {}),
                        "containers": [
                            {
                                "name": "router",
                                "image": image,
                                "imagePullPolicy": "IfNotPresent",
                                "securityContext": router_security(),
                                "resources": {
                                    "requests": {"cpu": "500m", "memory": "256Mi"},
                                    "limits": {"cpu": "2", "memory": "1Gi"},
                                },
                                # with a key: it reaches the workers as --api-key, added inside the process
                                "command": ["python3", "-c", ROUTER_LAUNCHER, SECRET_KEY_FILE]
                                if keyed
                                else ["python3", "-m", ROUTER_MODULE],
                                "args": discovery_args(fleet, selector, fleet.router_port),
                                **({"volumeMounts": [key_mount]} if keyed else {}),
                                "env": [
                                    {
                                        "name": "POD_NAMESPACE",
                                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                                    }
                                ],
                                "ports": [
                                    {"name": "http", "containerPort": http},
                                    {"name": "metrics", "containerPort": metrics},
                                ],
                                "readinessProbe": _probe("/readiness", http, 3),
                                "livenessProbe": _probe("/liveness", http, 6),
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": labels,
                "annotations": {
                    "prometheus.io/scrape": "true",
                    "prometheus.io/port": str(metrics),
                    "prometheus.io/path": "/metrics",
                },
            },
            "spec": {
                "selector": {f"{GROUP}/fleet": labels[f"{GROUP}/fleet"], f"{GROUP}/role": "router"},
                "ports": [
                    {"name": "http", "port": http, "targetPort": http},
                    {"name": "metrics", "port": metrics, "targetPort": metrics},
                ],
            },
        },
        network_policy(dns_name(f"{fleet.name}-workers"), ns, labels, selector, router_pods, fleet.router_port),
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": dns_name(f"{fleet.name}-router"), "namespace": ns, "labels": labels},
            "spec": {  # the router is the fleet's front door: its API and metrics ports, from anywhere
                "podSelector": {"matchLabels": router_pods},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": http}, {"port": metrics}]}],
            },
        },
    ]


def _lws_args(plan: Plan, port: int) -> list[str]:
    """The plan's flags for plain SGLang across nodes: no KT flags, tensor parallel over every node's GPUs."""
    drop = ("--host", "--port", "--tensor-parallel-size")
    kept = replace(plan, flags=tuple(f for f in plan.flags if not f.name.startswith("--kt-") and f.name not in drop))
    paths = container_paths(kept)
    overrides = {f.name: paths[f.value] for f in kept.flags if isinstance(f.value, str) and f.value in paths}
    return [
        *argv(kept, overrides),
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(plan.tp),
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
        "--dist-init-addr",
        f"$(LWS_LEADER_ADDRESS):{DIST_PORT}",
    ]


def _lws(fleet: FleetPlan, m: MultiNode, machines: int, image: str, weights_claim: str | None,
         nodes: list[str] | None) -> list[dict]:  # fmt: skip
    """SGLang's own multi-node launch over `machines` nodes of the class: machines // nodes groups, one pod per
    node, placed, tolerated, sized and hardened like the KT workers it replaces."""
    name = slug(f"{fleet.name}-{m.ref}-gpu-only", 50)
    ns = namespace(fleet)
    labels = _labels(fleet, "multinode", name)
    vols, mounts = _volumes(m.plan, weights_claim)
    port = fleet.router_port
    container = {
        "name": "sglang",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-m", "sglang.launch_server"],
        "args": _lws_args(m.plan, port),
        "resources": server_resources(m.plan, m.gpus_per_node, kt=False),
        "securityContext": server_security(),
        "volumeMounts": mounts,
    }
    leader = {**container, "ports": [{"name": "http", "containerPort": port}]}
    leader["startupProbe"] = _probe("/health", port, START_UP_S // 10)
    leader["readinessProbe"] = _probe("/health", port, 3)
    leader["livenessProbe"] = _probe("/health", port, 12)

    def pod(c: dict) -> dict:
        return {
            "metadata": {"labels": labels},
            "spec": {
                "affinity": _placement(name, nodes, slug(m.ref)),
                "tolerations": GPU_TOLERATIONS,
                "securityContext": POD_SECURITY,
                "automountServiceAccountToken": False,
                "containers": [c],
                "volumes": vols,
            },
        }

    group = {f"{GROUP}/workload": name}
    return [
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": labels,
                "annotations": {f"{GROUP}/verdict": m.verdict, **skip_annotations(SERVER_EXCEPTIONS)},
            },
            "spec": {
                "replicas": machines // m.nodes,
                "leaderWorkerTemplate": {
                    "size": m.nodes,
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": pod(leader),
                    "workerTemplate": pod(container),
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{name}-leader", "namespace": ns, "labels": labels},
            "spec": {
                "selector": {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"},
                "ports": [{"name": "http", "port": port, "targetPort": port}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": f"{name}-group", "namespace": ns, "labels": labels},
            "spec": {  # the group's own pods talk freely (NCCL picks its ports); others reach the API port only
                "podSelector": {"matchLabels": group},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": group}}]}, {"ports": [{"port": port}]}],
            },
        },
    ]


def k8s_documents(
    fleet: FleetPlan,
    image: str | None = None,
    router_image: str = DEFAULT_ROUTER_IMAGE,
    weights_claim: str | None = None,
    nodes: dict[str, list[str]] | None = None,
    multinode: bool = False,
) -> list[dict]:
    """`nodes`: host class (the --host given) -> the Kubernetes node names it stands for. `multinode`: render the
    GPU-only multi-node launch instead of the KT fleet (the two would compete for the same GPUs)."""
    ns = namespace(fleet)
    docs: list[dict] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": _labels(fleet, "namespace")}}
    ]
    machines: dict[str, int] = {}
    for machine in fleet.machines:
        machines[machine.ref] = machines.get(machine.ref, 0) + 1
    if multinode:
        if not fleet.multinode:
            raise BadInput("--k8s-multinode: no host class here holds the whole model on the GPUs of several nodes")
        for m in fleet.multinode:
            named = (nodes or {}).get(m.ref)
            have = len(named) if named else machines.get(m.ref, 0)
            if have < m.nodes:
                raise BadInput(
                    f"--k8s-multinode: the GPU-only launch needs {m.nodes} {m.ref} machines; {have} given "
                    f"(--host {m.ref} once per machine, or --k8s-nodes {m.ref}=NODE,...)"
                )
            docs += _lws(fleet, m, have, image or m.plan.image or DEFAULT_IMAGE, weights_claim, named)
        return _unique(fleet, docs)
    seen: set[tuple[str, int | None]] = set()
    for rep in fleet.replicas:
        key = (rep.machine.ref, rep.node)
        if key in seen:
            continue
        seen.add(key)
        named = (nodes or {}).get(rep.machine.ref)
        count = len(named) if named else machines[rep.machine.ref]
        img = image or rep.plan.image or DEFAULT_IMAGE
        docs.append(_worker_deployment(fleet, rep, count, img, weights_claim, named))
    docs += _router(fleet, router_image)
    return _unique(fleet, docs)


def _unique(fleet: FleetPlan, docs: list[dict]) -> list[dict]:
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    if len(set(names)) != len(names):  # kubectl apply would keep only the last of two
        raise BadInput(f"fleet {fleet.name}: two Kubernetes resources would share a name; choose another --name")
    return docs


def k8s_text(fleet: FleetPlan, **kw: object) -> str:
    from ktwizard.render.quote import comment
    from ktwizard.serial import dump_yaml

    docs = k8s_documents(fleet, **kw)  # type: ignore[arg-type]
    head = [
        f"# ktwizard fleet {comment(fleet.name)}: {comment(fleet.model.id)} behind sglang-router ({fleet.policy})",
        "# Without node names (--k8s-nodes), label the planned nodes: kubectl label node NODE "
        f"{HOST_CLASS}=<class> (classes: {comment(', '.join(sorted({slug(m.ref) for m in fleet.machines})))})",
    ]
    if kw.get("multinode"):
        head.append("# The GPU-only alternative to the KT fleet on the same machines: apply one or the other.")
    for m in fleet.multinode:
        head.append("# " + comment(m.verdict, 400))
    if not kw.get("multinode") and fleet.multinode:
        head.append("# The GPU-only multi-node launch is rendered on its own: --format k8s --k8s-multinode")
    head.append("# Policy exceptions (each on its workload as a checkov.io/skip annotation, with its reason):")
    for cid, why in sorted({**SERVER_EXCEPTIONS, **ROUTER_EXCEPTIONS}.items()):
        head.append(f"#   {cid}: {comment(why, 200)}")
    return "\n".join(head) + "\n" + "---\n".join(dump_yaml(d) for d in docs)
