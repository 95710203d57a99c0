"""NUMA nodes from sysfs: CPUs, memory and distances per node."""

from __future__ import annotations

import re

from ktwizard.host.profile import NumaNode
from ktwizard.host.root import Root, integer, kb, parse_cpu_list


def probe_numa(root: Root) -> tuple[NumaNode, ...]:
    nodes = []
    for path in root.glob("sys/devices/system/node/node*"):
        m = re.fullmatch(r"node(\d+)", path.name)
        if not m:
            continue
        node_id = int(m.group(1))
        rel = f"sys/devices/system/node/{path.name}/"
        meminfo = {}
        for line in (root.read(rel + "meminfo") or "").splitlines():
            # "Node 0 MemTotal:        4549584 kB"
            parts = line.split(":", 1)
            if len(parts) == 2:
                meminfo[parts[0].split()[-1]] = parts[1].strip()
        distance = root.first_line(rel + "distance") or ""
        nodes.append(
            NumaNode(
                id=node_id,
                cpus=parse_cpu_list(root.first_line(rel + "cpulist"), strict=str(root.path / (rel + "cpulist"))),
                memory_total=kb(meminfo.get("MemTotal")),
                memory_free=kb(meminfo.get("MemFree")),
                distances=tuple(n for n in map(integer, distance.split()) if n is not None),
            )
        )
    return tuple(sorted(nodes, key=lambda n: n.id))


def node_of_cpu(nodes: tuple[NumaNode, ...]) -> dict[int, int]:
    return {cpu: n.id for n in nodes for cpu in n.cpus}
