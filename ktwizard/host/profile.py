"""HostProfile: what the machine is, as one frozen, serialisable value.

Missing facts are None with a reason string beside them ("unknown, because ..."), never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA = 1


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU, as NVML lists it."""

    pid: int
    used_memory: int | None
    name: str = ""


@dataclass(frozen=True)
class GPU:
    """One GPU as probed (or written in a host file): memory, link, compute capability and NUMA node."""

    index: int
    name: str
    memory_total: int
    memory_free: int
    memory_used: int
    # Driver-reserved memory, from NVML's v2 memory call; None when only v1 answered (then `used` includes it).
    memory_reserved: int | None = None
    uuid: str = ""
    pci_bus_id: str = ""
    compute_capability: str = ""
    pcie_gen: int | None = None
    pcie_width: int | None = None
    # What NVML can tell of an unknown card's speed: the link it and the host support (the current link drops at
    # idle), its PCI device id (device << 16 | vendor), memory bus width (bits) and top memory clock (MHz).
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    pci_device_id: int | None = None
    memory_bus_width: int | None = None
    memory_clock_mhz: int | None = None
    power_limit_w: float | None = None
    numa_node: int | None = None
    numa_reason: str | None = None
    visible: bool = True
    processes: tuple[GpuProcess, ...] = ()
    # A hand-written card ktwizard does not know: memory_total is its marketing size less a margin (host/cards.py).
    memory_total_estimated: bool = False

    @property
    def cc_major(self) -> int:
        try:
            return int(self.compute_capability.split(".")[0])
        except ValueError:
            return 0


@dataclass(frozen=True)
class GpuInventory:
    """The host's GPUs and driver versions, or why none could be read."""

    available: bool
    reason: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None
    cuda_visible_devices: str | None = None
    devices: tuple[GPU, ...] = ()

    @property
    def visible(self) -> tuple[GPU, ...]:
        return tuple(g for g in self.devices if g.visible)


@dataclass(frozen=True)
class CpuThread:
    """One logical CPU: its package, core and NUMA node."""

    cpu: int
    package: int
    core: int
    node: int | None = None


@dataclass(frozen=True)
class CPU:
    """The host's CPU: vendor, model, topology and instruction-set flags."""

    vendor: str
    brand: str
    family: int | None
    model: int | None
    stepping: int | None
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    online_cpus: tuple[int, ...]
    usable_cpus: tuple[int, ...]
    flags: tuple[str, ...]
    threads: tuple[CpuThread, ...] = ()
    cpu_quota: float | None = None  # cgroup CPU quota in cores; None when unlimited or unknown
    base_mhz: float | None = None
    hypervisor: bool = False

    @property
    def physical_cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def usable_physical_cores(self) -> int:
        """Physical cores this process may run on (SMT siblings counted once), capped by the CPU quota."""
        usable = set(self.usable_cpus)
        if self.threads:
            cores = len({(t.package, t.core) for t in self.threads if t.cpu in usable})
        else:
            cores = max(1, len(usable) // max(1, self.threads_per_core))
        if self.cpu_quota is not None:
            cores = min(cores, max(1, int(self.cpu_quota)))
        return cores

    def has(self, *flags: str) -> bool:
        return all(f in self.flags for f in flags)


@dataclass(frozen=True)
class NumaNode:
    """One NUMA node: its CPUs, memory and distances to the others."""

    id: int
    cpus: tuple[int, ...]
    memory_total: int | None
    memory_free: int | None
    distances: tuple[int, ...] = ()
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class MemorySpeed:
    """What decode is bound by on the CPU side: populated channels per socket and their transfer rate."""

    kind: str  # DDR5, DDR4, MRDIMM
    speed_mts: int
    channels_per_socket: int
    source: str = ""  # SMBIOS, the host spec, or the assumption made


@dataclass(frozen=True)
class NodeBandwidth:
    """`probe --bandwidth`: what one NUMA node's memory gave its own cores, read-only, in bytes per second."""

    node: int
    read_bps: float
    threads: int
    seconds: float
    error: str | None = None
    source: str = ""  # "": this probe measured it; else the published measurement a host spec carries


@dataclass(frozen=True)
class Memory:
    """The host's memory: total, available, swap, huge pages and any cgroup limit."""

    total: int
    available: int
    swap_total: int = 0
    swap_free: int = 0
    hugepages_2m_total: int = 0
    hugepages_2m_free: int = 0
    hugepages_1g_total: int = 0
    hugepages_1g_free: int = 0
    thp_mode: str | None = None
    cgroup_limit: int | None = None  # bytes; None when unlimited or unknown
    memlock_limit: int | None = None  # bytes; None when unlimited
    memlock_known: bool = True
    speed: MemorySpeed | None = None  # None: neither SMBIOS nor the host spec said
    measured: tuple[NodeBandwidth, ...] = ()  # probe --bandwidth, one per NUMA node; () when not measured

    @property
    def usable(self) -> int:
        """What the server can count on: the smaller of RAM and the cgroup limit."""
        return min(self.total, self.cgroup_limit) if self.cgroup_limit else self.total


@dataclass(frozen=True)
class Disk:
    """Free and total space where the model's files go, or why it could not be read."""

    path: str
    free: int | None = None
    total: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Engine:
    """The container engine: whether it answers, its version and its runtimes."""

    reachable: bool
    reason: str | None = None
    server_version: str | None = None
    runtimes: tuple[str, ...] = ()
    default_runtime: str | None = None
    cdi_devices: tuple[str, ...] = ()

    @property
    def nvidia_runtime(self) -> bool:
        return "nvidia" in self.runtimes or any(d.startswith("nvidia.com/gpu") for d in self.cdi_devices)


@dataclass(frozen=True)
class HostProfile:
    """Everything the planner knows of a host: CPU, memory, GPUs, NUMA nodes, disk and engine."""

    cpu: CPU
    memory: Memory
    gpus: GpuInventory
    numa_nodes: tuple[NumaNode, ...] = ()
    disk: Disk | None = None
    engine: Engine = field(default_factory=lambda: Engine(reachable=False, reason="not probed"))
    hostname: str = ""
    kernel: str = ""
    source: str = "live"
    schema: int = SCHEMA

    @property
    def visible_gpus(self) -> tuple[GPU, ...]:
        return self.gpus.visible


def numa_memory_trustworthy(host: HostProfile) -> bool:
    """Whether the nodes' MemTotal adds up to the machine's: some VMs report far less per node than the real RAM
    (H200 fixture: 4.3 GiB vs 126 GiB). Beside the profile, so the planner's budget need not import host/checks."""
    totals = [n.memory_total for n in host.numa_nodes if n.memory_total is not None]
    if not totals or len(totals) < len(host.numa_nodes):
        return False
    return abs(sum(totals) - host.memory.total) <= 0.1 * host.memory.total
