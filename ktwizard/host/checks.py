"""The host facts that matter for KTransformers, each a check that passes, informs, warns or fails, with its fix.

One list serves every front end: `doctor` prints all of them, the probe summary and the wizard show the ones that
are not a pass (as notices). Advice fits where the host came from: a recorded or hand-written host gets no advice
about the Docker engine of the machine ktwizard happens to run on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.host.isa import kt_variant
from ktwizard.host.profile import HostProfile, numa_memory_trustworthy
from ktwizard.host.root import Root
from ktwizard.notice import Notice
from ktwizard.units import human

# doctor's status -> a notice's severity
SEVERITY = {"info": "info", "warn": "warn", "fail": "error"}


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # pass | info | warn | fail
    detail: str
    fix: str = ""

    def notice(self) -> Notice:
        return Notice(SEVERITY[self.status], self.detail, self.fix)


def _gpus(host: HostProfile) -> list[Check]:
    if host.gpus.available:
        return [Check("GPUs", "pass", f"{len(host.gpus.devices)} GPU(s) through NVML")]
    return [
        Check(
            "GPUs",
            "warn",
            f"No usable GPU: {host.gpus.reason}",
            "plan for a saved or hand-written host with --host, or fix the driver",
        )
    ]


def _cpu(host: HostProfile) -> list[Check]:
    cpu = host.cpu
    variant = kt_variant(cpu.flags)
    out: list[Check] = []
    if variant is None:
        out.append(
            Check(
                "CPU ISA",
                "fail",
                "The CPU has no AVX2: kt-kernel has no CPU backend for it",
                "use a machine with AVX2 or newer",
            )
        )
    elif variant == "avx2":
        out.append(
            Check(
                "CPU ISA",
                "warn",
                "No AVX-512: kt-kernel uses its AVX2 backends (RAWINT4, GPTQ_INT4, BF16, FP8, MXFP4, LLAMAFILE)",
                "AMXINT4/AMXINT8 and FP8_PERCHANNEL are not available here",
            )
        )
    else:
        out.append(Check("CPU ISA", "pass", f"kt-kernel's {variant} build"))
    if variant not in ("amx", None):
        out.append(
            Check(
                "AMX",
                "info",
                "No AMX (amx_tile/amx_int8/amx_bf16): AMXINT4/AMXINT8 methods are unavailable or slow",
                "prefer the checkpoint's native method (RAWINT4, FP8, BF16)",
            )
        )
    if variant == "amx" and cpu.hypervisor:
        out.append(
            Check(
                "AMX",
                "info",
                "AMX inside a VM: the guest kernel must grant XTILEDATA",
                "if kt-kernel reports 'AMX has not been granted permission', update the guest kernel",
            )
        )
    smt = cpu.threads_per_core > 1
    out.append(
        Check(
            "SMT",
            "info" if smt else "pass",
            f"SMT is on ({cpu.threads_per_core} threads per core)" if smt else "1 thread per core",
            "--kt-cpuinfer counts physical cores only; SMT siblings add little to expert GEMMs" if smt else "",
        )
    )
    if cpu.cpu_quota is not None:
        out.append(
            Check(
                "CPU quota",
                "warn",
                f"A cgroup CPU quota allows {cpu.cpu_quota:g} cores",
                "plans size --kt-cpuinfer to the quota; raise it for full speed",
            )
        )
    if len(cpu.usable_cpus) < len(cpu.online_cpus):
        out.append(
            Check(
                "CPU affinity",
                "info",
                f"This process may use {len(cpu.usable_cpus)} of {len(cpu.online_cpus)} CPUs (affinity/cpuset)",
                "plans count only the usable CPUs",
            )
        )
    return out


def _numa(host: HostProfile, root: Root | None) -> list[Check]:
    out: list[Check] = []
    cpu_nodes = [n for n in host.numa_nodes if n.cpus]
    if len(cpu_nodes) != host.cpu.sockets:
        out.append(
            Check(
                "NUMA layout",
                "info",
                f"{len(cpu_nodes)} NUMA node(s) with CPUs on {host.cpu.sockets} socket(s)",
                "one kt thread pool per NUMA node; check the BIOS NPS / SNC setting if this is unexpected",
            )
        )
    if host.numa_nodes and not numa_memory_trustworthy(host):
        out.append(
            Check(
                "NUMA memory",
                "info",
                "Per-NUMA memory in sysfs does not add up to /proc/meminfo (typical of VMs)",
                "ktwizard budgets host memory from /proc/meminfo, split evenly across nodes",
            )
        )
    balancing = root.first_line("proc/sys/kernel/numa_balancing") if root else None
    if balancing is not None:
        bad = balancing != "0" and len(host.numa_nodes) > 1
        out.append(
            Check(
                "NUMA balancing",
                "warn" if bad else "pass",
                f"kernel.numa_balancing={balancing}",
                "sudo sysctl kernel.numa_balancing=0: kt-kernel binds pools to nodes; the kernel moving their pages "
                "costs bandwidth"
                if bad
                else "",
            )
        )
    return out


def _memory(host: HostProfile) -> list[Check]:
    m = host.memory
    out = [
        Check(
            "swap",
            "warn" if m.swap_total else "pass",
            f"Swap is on ({human(m.swap_total)}): experts paged out make decode crawl" if m.swap_total else "no swap",
            "sudo swapoff -a (or vm.swappiness=1)" if m.swap_total else "",
        ),
        Check(
            "hugepages",
            "pass",
            f"2 MiB: {m.hugepages_2m_free}/{m.hugepages_2m_total} free; "
            f"1 GiB: {m.hugepages_1g_free}/{m.hugepages_1g_total} free",
        ),
    ]
    if m.thp_mode is not None:  # unknown for a hand-written host: nothing to advise
        ok = m.thp_mode in ("always", "madvise")
        out.append(
            Check(
                "transparent hugepages",
                "pass" if ok else "warn",
                f"THP {m.thp_mode}" + ("" if ok else ": Transparent hugepages are off"),
                "" if ok else "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled",
            )
        )
    if m.memlock_known:
        ok = m.memlock_limit is None
        out.append(
            Check(
                "memlock limit",
                "pass" if ok else "warn",
                "unlimited" if ok else f"memlock is limited to {human(m.memlock_limit or 0)}: KT pins its host buffers",
                ""
                if ok
                else "ulimit -l unlimited (LimitMEMLOCK=infinity for dockerd); ktwizard launch sets "
                "--ulimit memlock=-1 for containers",
            )
        )
    if m.cgroup_limit and m.cgroup_limit < m.total:
        out.append(
            Check(
                "memory limit",
                "warn",
                f"A cgroup limits memory to {human(m.cgroup_limit)} of {human(m.total)}",
                "plans budget against the limit; raise it to use all RAM",
            )
        )
    return out


def _governor(root: Root | None) -> list[Check]:
    if root is None:
        return []
    gov = root.first_line("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    return [
        Check(
            "CPU frequency governor",
            "warn" if gov == "powersave" else "pass",
            gov or "no cpufreq (VM or fixed clock)",
            "sudo cpupower frequency-set -g performance" if gov == "powersave" else "",
        )
    ]


def _engine(host: HostProfile) -> list[Check]:
    e = host.engine
    if host.source != "live" and not e.reachable:
        return [Check("Docker engine", "info", f"Docker engine not checked: {e.reason or 'not probed'}")]
    if not e.reachable:
        permission = "permission denied" in (e.reason or "")
        return [
            Check(
                "Docker engine",
                "warn",
                f"Docker: {e.reason or 'unreachable'}",
                "sudo usermod -aG docker $USER, then log in again"
                if permission
                else "install docker.io and start dockerd, or launch with --native",
            )
        ]
    out = [Check("Docker engine", "pass", f"server {e.server_version}, runtimes {', '.join(e.runtimes)}")]
    if host.gpus.available:
        out.append(
            Check(
                "NVIDIA container runtime",
                "pass" if e.nvidia_runtime else "fail",
                "nvidia runtime registered"
                if e.nvidia_runtime
                else "Docker has no NVIDIA runtime: containers cannot see the GPUs",
                ""
                if e.nvidia_runtime
                else "install nvidia-container-toolkit; nvidia-ctk runtime configure --runtime=docker; restart dockerd",
            )
        )
    return out


def host_checks(host: HostProfile, root: Root | None = None) -> list[Check]:
    """Every check on what the host is; `root` adds the kernel settings only a live or recorded tree shows."""
    return _gpus(host) + _cpu(host) + _numa(host, root) + _memory(host) + _governor(root) + _engine(host)


def host_notices(host: HostProfile) -> list[Notice]:
    """The checks that are not a pass, as notices (probe summary, wizard)."""
    return [c.notice() for c in host_checks(host) if c.status != "pass"]
