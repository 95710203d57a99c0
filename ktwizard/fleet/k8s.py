"""Kubernetes manifests for a fleet: per host class (and NUMA slot) a Deployment pinned to the nodes it was planned
for, the router as a Deployment that finds the workers by label, its Service with the Prometheus port annotated,
and, where the whole model fits on GPUs across nodes, SGLang's own multi-node launch as a LeaderWorkerSet."""

from __future__ import annotations

from ktwizard.errors import BadInput
from ktwizard.fleet.constants import DEFAULT_ROUTER_IMAGE
from ktwizard.fleet.k8s_multinode import lws_documents
from ktwizard.fleet.k8s_parts import (
    GPU_TOLERATIONS,
    GROUP,
    HOST_CLASS,
    SECRET_KEY_FILE,
    START_UP_S,
    dns_name,
    fleet_labels,
    http_probe,
    keyed,
    namespace,
    node_placement,
    secret_name,  # noqa: F401 - the CLI names the Secret through this module
    secret_volume,
    slug,
    weight_volumes,
)
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
from ktwizard.fleet.plan import FleetPlan, Replica
from ktwizard.fleet.router import ROUTER_MODULE, discovery_args
from ktwizard.planner.types import Plan
from ktwizard.render.args import container_argv
from ktwizard.render.docker import DEFAULT_IMAGE


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
        "startupProbe": http_probe("/health", port, START_UP_S // 10),
        "readinessProbe": http_probe("/health", port, 3),
        # after start-up: a server that stops answering for 2 minutes is restarted
        "livenessProbe": http_probe("/health", port, 12),
    }


def _worker_deployment(
    fleet: FleetPlan, rep: Replica, count: int, image: str, weights_claim: str | None, nodes: list[str] | None
) -> dict:
    host_class = slug(rep.machine.ref)
    workload = dns_name(f"{fleet.name}-{rep.machine.ref}" + (f"-numa{rep.node}" if rep.node is not None else ""))
    labels = fleet_labels(fleet, "worker", workload)
    vols, mounts = weight_volumes(rep.plan, weights_claim)
    if rep.plan.goals.api_key_file:
        vol, mount = secret_volume(fleet)
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
                    "affinity": node_placement(workload, nodes, host_class),
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
    labels = fleet_labels(fleet, "router")
    selector = {f"{GROUP}/fleet": slug(fleet.name, 63), f"{GROUP}/role": "worker"}
    http, metrics = fleet.router_port, fleet.metrics_port
    with_key = keyed(fleet)
    key_volume, key_mount = secret_volume(fleet)
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
                        **({"volumes": [key_volume]} if with_key else {}),
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
                                if with_key
                                else ["python3", "-m", ROUTER_MODULE],
                                "args": discovery_args(fleet, selector, fleet.router_port),
                                **({"volumeMounts": [key_mount]} if with_key else {}),
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
                                "readinessProbe": http_probe("/readiness", http, 3),
                                "livenessProbe": http_probe("/liveness", http, 6),
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
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": fleet_labels(fleet, "namespace")}}
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
            docs += lws_documents(fleet, m, have, image or m.plan.image or DEFAULT_IMAGE, weights_claim, named)
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
