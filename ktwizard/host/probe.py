"""probe(): put the parts together into one HostProfile."""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import replace

from ktwizard.host.cpu import probe_cpu
from ktwizard.host.disk import default_weights_dir, probe_disk
from ktwizard.host.engine import probe_engine
from ktwizard.host.gpu import gpus_from_snapshot
from ktwizard.host.memory import probe_memory
from ktwizard.host.numa import node_of_cpu, probe_numa
from ktwizard.host.nvml import LiveNvml, NvmlSource, RecordedNvml
from ktwizard.host.profile import GPU, Engine, HostProfile, NumaNode
from ktwizard.host.root import Root, integer
from ktwizard.textsafe import scrubbed


def _gpu_nodes(root: Root, gpus: tuple[GPU, ...], nodes: tuple[NumaNode, ...]) -> tuple[GPU, ...]:
    """Fill a GPU's NUMA node from sysfs where NVML could not tell (NVML's bus id has an 8-digit domain)."""
    out = []
    for g in gpus:
        if g.numa_node is None and g.pci_bus_id:
            bus = g.pci_bus_id.lower()
            bus = bus[4:] if len(bus.split(":")[0]) == 8 else bus
            value = integer(root.first_line(f"sys/bus/pci/devices/{bus}/numa_node"))  # -1: the kernel does not know
            if value is not None:
                g = replace(g, numa_node=value, numa_reason=None)
            elif len(nodes) == 1:
                g = replace(g, numa_node=nodes[0].id, numa_reason="assumed: the host has one NUMA node")
        out.append(g)
    return tuple(out)


def probe(
    root: str = "/",
    nvml: NvmlSource | None = None,
    weights_dir: str | None = None,
    env: dict[str, str] | None = None,
    with_engine: bool = True,
) -> HostProfile:
    r = Root(root)
    env = dict(os.environ) if env is None else env
    nodes = probe_numa(r)
    cpu = probe_cpu(r, node_of_cpu(nodes))
    if not nodes:
        nodes = (NumaNode(id=0, cpus=cpu.online_cpus, memory_total=None, memory_free=None),)
    memory = probe_memory(r, cpu.sockets)
    source = nvml or (LiveNvml() if r.live else RecordedNvml(r))
    gpus = gpus_from_snapshot(source.snapshot(), env.get("CUDA_VISIBLE_DEVICES"))
    gpus = replace(gpus, devices=_gpu_nodes(r, gpus.devices, nodes))
    nodes = tuple(replace(n, gpus=tuple(g.index for g in gpus.devices if g.numa_node == n.id)) for n in nodes)
    disk = probe_disk(weights_dir or default_weights_dir(env)) if r.live or weights_dir else None
    hostname = socket.gethostname() if r.live else (r.first_line("etc/hostname") or r.path.name)
    kernel = platform.release() if r.live else (r.first_line("proc/sys/kernel/osrelease") or "")
    return scrubbed(  # a recorded root's hostname, CPU model or GPU name may carry escape sequences
        HostProfile(
            cpu=cpu,
            memory=memory,
            gpus=gpus,
            numa_nodes=nodes,
            disk=disk,
            engine=probe_engine(r)
            if with_engine
            else Engine(reachable=False, reason="not probed (asked to skip the engine)"),
            hostname=hostname,
            kernel=kernel,
            source="live" if r.live else f"recorded:{r.path.name}",
        )
    )
