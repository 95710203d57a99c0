"""CPU threads for kt-kernel: physical cores this process may use, minus a reserve, one pool per NUMA node."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.host.profile import HostProfile


@dataclass(frozen=True)
class ThreadPlan:
    """How the CPU's threads are split over kt-kernel's pools and NUMA nodes."""

    cpuinfer: int
    pools: int
    nodes: tuple[int, ...]
    reserve: int
    physical: int
    why: str


def plan_threads(host: HostProfile) -> ThreadPlan:
    cpu = host.cpu
    physical = cpu.usable_physical_cores
    # Keep a quarter of the cores (2..8) for the GPU process's own OpenMP threads, the tokenizer, the scheduler and
    # the OS: the seed recipe's 32-core EPYC ran 24 kt threads beside OMP_NUM_THREADS=8.
    reserve = min(8, max(2, physical // 4)) if physical > 4 else 1
    cpuinfer = max(1, physical - reserve)
    usable = set(cpu.usable_cpus)
    nodes = tuple(n.id for n in host.numa_nodes if usable.intersection(n.cpus)) or (0,)
    why = (
        f"{physical} physical cores usable (SMT siblings and CPUs outside the affinity/cpuset not counted"
        + (f", quota {cpu.cpu_quota:g} cores" if cpu.cpu_quota is not None else "")
        + f"), minus {reserve} kept for "
        "OpenMP/tokenizer/OS threads"
    )
    return ThreadPlan(cpuinfer=cpuinfer, pools=len(nodes), nodes=nodes, reserve=reserve, physical=physical, why=why)
