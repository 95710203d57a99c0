"""SGLang's own multi-node launch as a LeaderWorkerSet (`--k8s-multinode`): where the whole model fits on the GPUs of
several nodes, the GPU-only alternative to a KT fleet on the same machines."""

from __future__ import annotations

from dataclasses import replace

from ktwizard.fleet.k8s_parts import (
    DIST_PORT,
    GPU_TOLERATIONS,
    GROUP,
    SECRET_KEY_FILE,
    START_UP_S,
    fleet_labels,
    http_probe,
    keyed,
    namespace,
    node_placement,
    secret_volume,
    slug,
    weight_volumes,
)
from ktwizard.fleet.k8s_policy import (
    POD_SECURITY,
    SERVER_EXCEPTIONS,
    server_resources,
    server_security,
    skip_annotations,
)
from ktwizard.fleet.plan import FleetPlan, MultiNode
from ktwizard.planner.types import Plan
from ktwizard.render.args import argv, container_paths
from ktwizard.runtime import rules


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


def lws_documents(fleet: FleetPlan, m: MultiNode, machines: int, image: str, weights_claim: str | None,
         nodes: list[str] | None) -> list[dict]:  # fmt: skip
    """SGLang's own multi-node launch over `machines` nodes of the class: machines // nodes groups, one pod per
    node, placed, tolerated, sized and hardened like the KT workers it replaces."""
    name = slug(f"{fleet.name}-{m.ref}-gpu-only", 50)
    ns = namespace(fleet)
    labels = fleet_labels(fleet, "multinode", name)
    vols, mounts = weight_volumes(m.plan, weights_claim)
    command = ["python3", "-m", "sglang.launch_server"]
    if keyed(fleet):
        # a keyed fleet's API stays keyed: the launcher reads the Secret's file and adds --api-key inside the process
        from ktwizard.apikey import LAUNCHER

        volume, mount = secret_volume(fleet)
        vols, mounts = [*vols, volume], [*mounts, mount]
        command = ["python3", "-c", LAUNCHER, SECRET_KEY_FILE]
    port = fleet.router_port
    container = {
        "name": "sglang",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "args": _lws_args(m.plan, port),
        "resources": server_resources(m.plan, m.gpus_per_node, kt=False),
        "securityContext": server_security(),
        "volumeMounts": mounts,
        # the probes below hit /health, which generates a token (503 after 20 s behind a long prefill) unless this is
        # off (sglang-kt 0.7.2 entrypoints/http_server.py:484-503)
        "env": [{"name": rules.HEALTH_GENERATION_ENV, "value": "0"}],
    }
    leader = {**container, "ports": [{"name": "http", "containerPort": port}]}
    leader["startupProbe"] = http_probe("/health", port, START_UP_S // 10)
    leader["readinessProbe"] = http_probe("/health", port, 3)
    leader["livenessProbe"] = http_probe("/health", port, 12)

    def pod(c: dict) -> dict:
        return {
            "metadata": {"labels": labels},
            "spec": {
                "affinity": node_placement(name, nodes, slug(m.ref)),
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
