"""Immutable samples the samplers produce and the panes render."""

from __future__ import annotations

from dataclasses import dataclass

HISTORY = 600  # samples kept per series (alerts, dashboard plots): 10 minutes at 1 Hz


@dataclass(frozen=True)
class GpuProcSample:
    pid: int
    used: int
    server: bool  # one of the monitored server's processes


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str
    total: int
    used: int
    reserved: int | None
    util_pct: float | None
    power_w: float | None
    temp_c: float | None
    sm_mhz: int | None
    mem_mhz: int | None
    processes: tuple[GpuProcSample, ...] = ()


@dataclass(frozen=True)
class NodeSample:
    id: int
    total: int | None
    free: int | None
    cpu_pct: float | None


@dataclass(frozen=True)
class HostSample:
    total: int
    available: int
    swap_total: int
    swap_free: int
    page_cache: int
    swapping: bool  # pages moved to or from swap since the last sample
    nodes: tuple[NodeSample, ...] = ()


@dataclass(frozen=True)
class ContainerSample:
    name: str
    state: str
    restarts: int
    exit_code: int | None
    oom_killed: bool
    mem_used: int | None
    mem_limit: int | None
    cpu_pct: float | None

    @property
    def ended(self) -> bool:
        """The container is not running and will not come back by itself."""
        return self.state in ("exited", "dead", "gone")


@dataclass(frozen=True)
class ServerSample:
    up: bool
    error: str | None = None
    running: float | None = None
    queued: float | None = None
    kv_used_tokens: float | None = None
    kv_capacity: float | None = None
    kv_usage: float | None = None
    prefill_tps: float | None = None
    decode_tps: float | None = None
    ttft_p50: float | None = None
    ttft_p95: float | None = None
    itl_p50: float | None = None
    itl_p95: float | None = None
    cache_hit_rate: float | None = None
    aborted: float | None = None
    source: str = "metrics"  # metrics | log


@dataclass(frozen=True)
class Alert:
    severity: str
    text: str


@dataclass(frozen=True)
class Sample:
    t: float
    gpus: tuple[GpuSample, ...] = ()
    gpu_error: str | None = None
    host: HostSample | None = None
    container: ContainerSample | None = None
    server: ServerSample | None = None
    alerts: tuple[Alert, ...] = ()
