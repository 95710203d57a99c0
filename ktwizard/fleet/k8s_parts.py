"""What the Kubernetes renderings share: names (DNS-1123), labels, the namespace, volumes, probes and placement."""

from __future__ import annotations

import hashlib
import re

from ktwizard.fleet.plan import FleetPlan
from ktwizard.planner.types import Plan
from ktwizard.render.args import container_paths

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


def fleet_labels(fleet: FleetPlan, role: str, workload: str | None = None) -> dict[str, str]:
    out = {
        f"{GROUP}/fleet": slug(fleet.name, 63),
        f"{GROUP}/role": role,
        "app.kubernetes.io/managed-by": "ktwizard",
        "app.kubernetes.io/part-of": slug(fleet.name, 63),
    }
    if workload:
        out[f"{GROUP}/workload"] = workload
    return out


FILE_FLAGS = ("--chat-template", "--init-expert-location")


def weight_volumes(plan: Plan, weights_claim: str | None) -> tuple[list[dict], list[dict]]:
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
        files = {f.value for f in plan.flags if f.name in FILE_FLAGS}
        for i, (host, inside) in enumerate(paths.items()):
            name = f"weights-{i}"
            kind = "File" if host in files else "Directory"  # a chat template or a routing dump is one file
            vols.append({"name": name, "hostPath": {"path": host, "type": kind}})
            mounts.append({"name": name, "mountPath": inside, "readOnly": True})
    return vols, mounts


def http_probe(path: str, port: int, failures: int) -> dict:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def node_placement(workload: str, nodes: list[str] | None, host_class: str) -> dict:
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


SECRET_DIR = "/run/secrets/ktwizard"  # the Secret's volume: its key `api-key` is the file the launchers read
SECRET_KEY_FILE = f"{SECRET_DIR}/api-key"


def secret_name(fleet: FleetPlan) -> str:
    """The Secret holding the API key: made by the user from their key file (the key is never in a manifest)."""
    return dns_name(f"{fleet.name}-api-key")


def keyed(fleet: FleetPlan) -> bool:
    return any(r.plan.goals.api_key_file for r in fleet.replicas)


def secret_volume(fleet: FleetPlan) -> tuple[dict, dict]:
    volume = {"name": "api-key", "secret": {"secretName": secret_name(fleet), "defaultMode": 0o400}}
    return volume, {"name": "api-key", "mountPath": SECRET_DIR, "readOnly": True}
