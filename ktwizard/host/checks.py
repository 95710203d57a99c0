"""The host facts that matter for KTransformers, said as warnings with their fixes."""

from __future__ import annotations

from ktwizard.host.isa import kt_variant
from ktwizard.host.profile import HostProfile
from ktwizard.notice import Notice
from ktwizard.units import human


def numa_memory_trustworthy(host: HostProfile) -> bool:
    """Some VMs report per-node MemTotal far below the real RAM (H200 fixture: 4.3 GiB vs 126 GiB)."""
    totals = [n.memory_total for n in host.numa_nodes if n.memory_total is not None]
    if not totals or len(totals) < len(host.numa_nodes):
        return False
    return abs(sum(totals) - host.memory.total) <= 0.1 * host.memory.total


def host_notices(host: HostProfile) -> list[Notice]:
    out: list[Notice] = []
    cpu, mem = host.cpu, host.memory
    if not host.gpus.available:
        out.append(
            Notice(
                "warn",
                f"No usable GPU: {host.gpus.reason}",
                "plan for a saved or hand-written host with --host, or fix the driver",
            )
        )
    variant = kt_variant(cpu.flags)
    if variant is None:
        out.append(
            Notice(
                "error", "The CPU has no AVX2: kt-kernel has no CPU backend for it", "use a machine with AVX2 or newer"
            )
        )
    elif variant == "avx2":
        out.append(
            Notice(
                "warn",
                "No AVX-512: kt-kernel uses its AVX2 backends (RAWINT4, GPTQ_INT4, BF16, FP8, MXFP4, LLAMAFILE)",
                "AMXINT4/AMXINT8 and FP8_PERCHANNEL are not available here",
            )
        )
    if variant != "amx" and variant is not None:
        out.append(
            Notice(
                "info",
                "No AMX (amx_tile/amx_int8/amx_bf16): AMXINT4/AMXINT8 methods are unavailable or slow",
                "prefer the checkpoint's native method (RAWINT4, FP8, BF16)",
            )
        )
    if variant == "amx" and cpu.hypervisor:
        out.append(
            Notice(
                "info",
                "AMX inside a VM: the guest kernel must grant XTILEDATA",
                "if kt-kernel reports 'AMX has not been granted permission', update the guest kernel",
            )
        )
    if cpu.threads_per_core > 1:
        out.append(
            Notice(
                "info",
                f"SMT is on ({cpu.threads_per_core} threads per core)",
                "--kt-cpuinfer counts physical cores only; SMT siblings add little to expert GEMMs",
            )
        )
    cpu_nodes = [n for n in host.numa_nodes if n.cpus]
    if len(cpu_nodes) != cpu.sockets:
        out.append(
            Notice(
                "info",
                f"{len(cpu_nodes)} NUMA node(s) with CPUs on {cpu.sockets} socket(s)",
                "one kt thread pool per NUMA node; check the BIOS NPS / SNC setting if this is unexpected",
            )
        )
    if host.numa_nodes and not numa_memory_trustworthy(host):
        out.append(
            Notice(
                "info",
                "Per-NUMA memory in sysfs does not add up to /proc/meminfo (typical of VMs)",
                "ktwizard budgets host memory from /proc/meminfo, split evenly across nodes",
            )
        )
    if mem.swap_total:
        out.append(
            Notice(
                "warn",
                f"Swap is on ({human(mem.swap_total)}): experts paged out make decode crawl",
                "swapoff -a, or vm.swappiness=1",
            )
        )
    if mem.thp_mode == "never":
        out.append(
            Notice(
                "info", "Transparent hugepages are off", "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"
            )
        )
    if mem.memlock_known and mem.memlock_limit is not None:
        out.append(
            Notice(
                "warn",
                f"memlock is limited to {human(mem.memlock_limit)}: KT pins its host buffers",
                "ulimit -l unlimited, or docker --ulimit memlock=-1 (ktwizard launch sets it)",
            )
        )
    if mem.cgroup_limit and mem.cgroup_limit < mem.total:
        out.append(
            Notice(
                "warn",
                f"A cgroup limits memory to {human(mem.cgroup_limit)} of {human(mem.total)}",
                "plans budget against the limit; raise it to use all RAM",
            )
        )
    if cpu.cpu_quota is not None:
        out.append(
            Notice(
                "warn",
                f"A cgroup CPU quota allows {cpu.cpu_quota:g} cores",
                "plans size --kt-cpuinfer to the quota; raise it for full speed",
            )
        )
    if len(cpu.usable_cpus) < len(cpu.online_cpus):
        out.append(
            Notice(
                "info",
                f"This process may use {len(cpu.usable_cpus)} of {len(cpu.online_cpus)} CPUs (affinity/cpuset)",
                "plans count only the usable CPUs",
            )
        )
    if not host.engine.reachable:
        out.append(
            Notice(
                "warn", f"Docker: {host.engine.reason}", "install docker.io and start dockerd, or launch with --native"
            )
        )
    elif host.gpus.available and not host.engine.nvidia_runtime:
        out.append(
            Notice(
                "warn",
                "Docker has no NVIDIA runtime: containers cannot see the GPUs",
                "install nvidia-container-toolkit and run nvidia-ctk runtime configure --runtime=docker",
            )
        )
    return out
