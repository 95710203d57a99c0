"""A Prometheus endpoint with what SGLang's own /metrics lacks: GPU memory with the driver's reserve apart and the
plan's prediction beside it, per-NUMA memory and CPU, host swap and page cache, the container, the plan's identity
and the peak check's result. A scrape takes one monitor sample (reused within MIN_INTERVAL_S), so its cost is the
monitor's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from ktwizard.monitor.samples import Sample
from ktwizard.planner.types import Plan

PREFIX = "ktwizard"
MIN_INTERVAL_S = 1.0  # scrapes closer than this share one sample
# name -> (type, help): the families the exporter exposes, documented in docs/monitoring.md from this table.
FAMILIES: dict[str, tuple[str, str]] = {
    "ktwizard_up": ("gauge", "1 when the server's /metrics answers, 0 when it does not"),
    "ktwizard_gpu_memory_used_bytes": ("gauge", "GPU memory in use (NVML), driver reserve excluded"),
    "ktwizard_gpu_memory_total_bytes": ("gauge", "GPU memory the driver makes usable"),
    "ktwizard_gpu_memory_reserved_bytes": ("gauge", "GPU memory the driver keeps for itself"),
    "ktwizard_gpu_memory_planned_bytes": ("gauge", "the plan's predicted peak for this GPU (binding phase)"),
    "ktwizard_gpu_memory_server_bytes": ("gauge", "GPU memory held by the server's own processes"),
    "ktwizard_gpu_utilization_ratio": ("gauge", "GPU busy fraction over the last sample (0-1)"),
    "ktwizard_numa_memory_total_bytes": ("gauge", "RAM of a NUMA node"),
    "ktwizard_numa_memory_free_bytes": ("gauge", "free RAM of a NUMA node"),
    "ktwizard_numa_cpu_utilization_ratio": ("gauge", "busy fraction of a NUMA node's CPUs (0-1)"),
    "ktwizard_host_memory_total_bytes": ("gauge", "host RAM"),
    "ktwizard_host_memory_available_bytes": ("gauge", "host RAM available (MemAvailable)"),
    "ktwizard_host_page_cache_bytes": ("gauge", "page cache: weights read from disk stay here"),
    "ktwizard_host_swap_total_bytes": ("gauge", "swap space"),
    "ktwizard_host_swap_used_bytes": ("gauge", "swap in use"),
    "ktwizard_host_swapping": ("gauge", "1 when pages moved to or from swap since the last sample"),
    "ktwizard_container_memory_used_bytes": ("gauge", "the server container's memory use"),
    "ktwizard_container_memory_limit_bytes": ("gauge", "the server container's memory limit"),
    "ktwizard_container_running": ("gauge", "1 while the server container runs"),
    "ktwizard_container_oom_killed": ("gauge", "1 when the kernel OOM-killed the container"),
    "ktwizard_container_restarts": ("gauge", "restarts of the container"),
    "ktwizard_plan": ("info", "the plan the server runs: model, method, GPU experts, context, digest"),
    "ktwizard_peak_check_measured_bytes": ("gauge", "the peak check's measured GPU peak per step"),
    "ktwizard_peak_check_planned_bytes": ("gauge", "what the plan predicted for that step"),
    "ktwizard_peak_check_margin_left_bytes": ("gauge", "planned peak plus margin minus measured (negative: over)"),
    "ktwizard_verify_passed": ("gauge", "1 when the last ktwizard verify check passed, 0 when it failed, per check"),
    "ktwizard_verify_timestamp_seconds": ("gauge", "when the last ktwizard verify ended (Unix time)"),
    "ktwizard_sample_seconds": ("gauge", "how long the last sample took"),
}


class Collector:
    """prometheus_client's custom-collector protocol: families built from one sample per scrape."""

    def __init__(
        self, monitor: Any, plan: Plan | None = None, peak: dict | None = None, deployment: str = "", record: str = ""
    ) -> None:
        self.record = record  # the deployment's record name, whose kept verify report is exported
        self.monitor, self.plan, self.peak = monitor, plan, peak if isinstance(peak, dict) else {}
        self.deployment = deployment  # every family carries it: the server's series get it from Prometheus
        self.lock = threading.Lock()
        self.last: Sample | None = None
        self.at = 0.0
        self.took = 0.0
        self.predicted = plan.predicted_peaks() if plan is not None else {}
        self.monitor.sample()  # primed: rates (CPU per node, swap activity) need a previous sample
        self.primed = True

    def sample(self) -> Sample:
        with self.lock:  # concurrent scrapes share one sample
            if self.primed or self.last is None or time.monotonic() - self.at >= MIN_INTERVAL_S:
                self.primed = False
                t0 = time.perf_counter()
                self.last = self.monitor.sample()
                self.took = time.perf_counter() - t0
                self.at = time.monotonic()
            return self.last

    def verify_report(self) -> dict:
        """The verify report kept beside the record, read per scrape: a later `ktwizard verify` shows at once."""
        if not self.record:
            return {}
        from ktwizard.deploy.records import load_extra

        try:
            data = load_extra(self.record, "verify")
        except Exception:  # noqa: BLE001 - an unreadable report exports nothing
            return {}
        return data if isinstance(data, dict) else {}

    def describe(self) -> Iterator[Any]:
        return iter(())  # no sample at registration time

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily

        s = self.sample()
        fam: dict[str, Any] = {}

        def g(family: str, value: float | int | None, **labels: str) -> None:
            if value is None:
                return
            labels = {"deployment": self.deployment, **labels}
            if family not in fam:
                fam[family] = GaugeMetricFamily(family, FAMILIES[family][1], labels=list(labels))
            fam[family].add_metric(list(labels.values()), float(value))

        if s.server is not None:
            g("ktwizard_up", 1 if s.server.up else 0)
        for gpu in s.gpus:
            i = str(gpu.index)
            g("ktwizard_gpu_memory_used_bytes", gpu.used, gpu=i, name=gpu.name)
            g("ktwizard_gpu_memory_total_bytes", gpu.total, gpu=i)
            g("ktwizard_gpu_memory_reserved_bytes", gpu.reserved, gpu=i)
            g("ktwizard_gpu_memory_planned_bytes", self.predicted.get(gpu.index), gpu=i)
            g("ktwizard_gpu_memory_server_bytes", sum(p.used for p in gpu.processes if p.server), gpu=i)
            g("ktwizard_gpu_utilization_ratio", None if gpu.util_pct is None else gpu.util_pct / 100, gpu=i)
        h = s.host
        if h is not None:
            for n in h.nodes:
                g("ktwizard_numa_memory_total_bytes", n.total, node=str(n.id))
                g("ktwizard_numa_memory_free_bytes", n.free, node=str(n.id))
                g("ktwizard_numa_cpu_utilization_ratio", None if n.cpu_pct is None else n.cpu_pct / 100, node=str(n.id))
            g("ktwizard_host_memory_total_bytes", h.total)
            g("ktwizard_host_memory_available_bytes", h.available)
            g("ktwizard_host_page_cache_bytes", h.page_cache)
            g("ktwizard_host_swap_total_bytes", h.swap_total)
            g("ktwizard_host_swap_used_bytes", h.swap_total - h.swap_free)
            g("ktwizard_host_swapping", 1 if h.swapping else 0)
        c = s.container
        if c is not None:
            g("ktwizard_container_memory_used_bytes", c.mem_used, container=c.name)
            g("ktwizard_container_memory_limit_bytes", c.mem_limit, container=c.name)
            g("ktwizard_container_running", 1 if c.state == "running" else 0, container=c.name)
            g("ktwizard_container_oom_killed", 1 if c.oom_killed else 0, container=c.name)
            g("ktwizard_container_restarts", c.restarts, container=c.name)
        for step in self.peak.get("steps", ()) if isinstance(self.peak.get("steps"), list) else ():
            if not isinstance(step, dict):
                continue
            for key, planned in (step.get("predicted") or {}).items():
                measured = (step.get("measured") or {}).get(key)
                margin = (step.get("margin") or {}).get(key, 0)
                if not all(isinstance(v, int) for v in (planned, measured, margin)):
                    continue
                labels = {"gpu": str(key), "step": str(step.get("name", ""))[:80]}
                g("ktwizard_peak_check_measured_bytes", measured, **labels)
                g("ktwizard_peak_check_planned_bytes", planned, **labels)
                g("ktwizard_peak_check_margin_left_bytes", planned + margin - measured, **labels)
        report = self.verify_report()
        for v in report.get("verdicts", ()) if isinstance(report.get("verdicts"), list) else ():
            if isinstance(v, dict) and isinstance(v.get("passed"), bool):
                g("ktwizard_verify_passed", 1 if v["passed"] else 0, check=str(v.get("name", ""))[:40])
        at = report.get("at")
        g("ktwizard_verify_timestamp_seconds", at if isinstance(at, int | float) and not isinstance(at, bool) else None)
        g("ktwizard_sample_seconds", self.took)
        yield from fam.values()
        if self.plan is not None:
            p = self.plan
            info = InfoMetricFamily("ktwizard_plan", FAMILIES["ktwizard_plan"][1])
            info.add_metric(
                [],
                {
                    "deployment": self.deployment,
                    "model": p.model.id,
                    "host": p.host,
                    "method": p.method,
                    "gpu_experts": str(p.gpu_experts),
                    "tp": str(p.tp),
                    "context": str(p.flag("--context-length") or ""),
                    "max_total_tokens": str(p.max_total_tokens),
                    "digest": p.digest,
                    "ktwizard": p.made_by,
                },
            )
            yield info


def serve(collector: Collector, bind: str, port: int) -> Any:
    """Start the HTTP endpoint in a thread; returns the server (shutdown() stops it)."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, _thread = start_http_server(port, addr=bind, registry=registry)
    return server
