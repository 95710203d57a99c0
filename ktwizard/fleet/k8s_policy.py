"""What every ktwizard pod is hardened with, and the few exceptions a GPU inference server needs, each stated where
it applies: a `checkov.io/skipN` annotation on the workload (checkov reads it; a person reads the reason)."""

from __future__ import annotations

import math

from ktwizard.planner.types import Plan

# check id -> why it stays, for the SGLang-KT workers (and the GPU-only multi-node launch)
SERVER_EXCEPTIONS = {
    "CKV_K8S_11": "no CPU limit: CFS quotas throttle kt-kernel's pinned thread pools mid-step (the CPU request reserves"
    " them)",
    "CKV_K8S_22": "writable root: SGLang, Triton and FlashInfer compile and cache kernels under the home directory at"
    " start",
    "CKV_K8S_23": "root: the SGLang-KT image runs as root (CUDA, kt-kernel's hugepage and NUMA setup)",
    "CKV_K8S_40": "root: the SGLang-KT image runs as root (CUDA, kt-kernel's hugepage and NUMA setup)",
    "CKV_K8S_25": "SYS_NICE is added: kt-kernel binds its thread pools and expert memory to NUMA nodes (mbind)",
    "CKV_K8S_37": "SYS_NICE is added: kt-kernel binds its thread pools and expert memory to NUMA nodes (mbind)",
    "CKV_K8S_43": "a tag, not a digest: images built by `ktwizard image build` have no registry digest until pushed",
    "CKV_K8S_15": "IfNotPresent: the image is built on or loaded into the node; Always would pull a missing one",
}
ROUTER_EXCEPTIONS = {
    "CKV_K8S_38": "the router lists worker pods through the API: it needs its service-account token",
    "CKV_K8S_43": SERVER_EXCEPTIONS["CKV_K8S_43"],
    "CKV_K8S_15": SERVER_EXCEPTIONS["CKV_K8S_15"],
}
POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}
ROUTER_UID = 10001


def skip_annotations(exceptions: dict[str, str]) -> dict[str, str]:
    return {f"checkov.io/skip{i + 1}": f"{cid}={why}" for i, (cid, why) in enumerate(sorted(exceptions.items()))}


def server_security() -> dict:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_NICE"]},
    }


def router_security() -> dict:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": ROUTER_UID,
        "capabilities": {"drop": ["ALL"]},
    }


KT_HOST_ITEMS = ("CPU experts", "CPU-MoE scratch", "KT pinned buffers")  # plain SGLang (GPU-only) holds none


def server_resources(plan: Plan, gpus: int, kt: bool = True) -> dict:
    """GPUs, the plan's host RAM as request and limit, and the CPUs its kt thread pools and OpenMP threads use."""
    memory = memory_request(plan, () if kt else KT_HOST_ITEMS)
    flags = {f.name: f.value for f in plan.flags}
    env = {e.name: e.value for e in plan.env}
    threads = flags.get("--kt-cpuinfer") if kt else None
    omp = env.get("OMP_NUM_THREADS")
    cpus = (int(threads) if isinstance(threads, int) else 0) + (int(omp) if omp and omp.isdigit() else 1)
    return {
        "limits": {"nvidia.com/gpu": gpus, "memory": memory},
        "requests": {"memory": memory, "cpu": str(max(1, cpus))},
    }


def memory_request(plan: Plan, leave_out: tuple[str, ...] = ()) -> str:
    """The host RAM the replica's budget holds, so the scheduler only places it where it fits: the whole-host budget
    (node -1), which already sums the NUMA nodes' items; the nodes only when there is no whole-host budget."""
    whole = [b for b in plan.host_budgets if b.node == -1]
    budgets = whole or list(plan.host_budgets)
    # the OS's own reserve is the node's, not the pod's
    used = sum(b.used - sum(b.item(n) for n in ("OS reserve", "OS share", *leave_out)) for b in budgets)
    return f"{max(1, math.ceil(used / 2**30))}Gi"


def network_policy(name: str, namespace: str, labels: dict[str, str], workers: dict, routers: dict, port: int) -> dict:
    """Workers answer the router only (and the kubelet's probes, which NetworkPolicy does not filter)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "podSelector": {"matchLabels": workers},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": routers}}], "ports": [{"port": port}]}],
        },
    }
