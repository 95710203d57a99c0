"""Samplers: each call is one cheap poll and returns an immutable sample (or says why it could not)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from ktwizard.host.root import Root, kb, parse_cpu_list, parse_kv
from ktwizard.monitor.metrics import Scrape, parse_scrape, server_sample
from ktwizard.monitor.samples import (
    ContainerSample,
    GpuProcSample,
    GpuSample,
    HostSample,
    NodeSample,
    ServerSample,
)


class Sampler(Protocol):
    """One source of a Sample, polled by name: fields() returns the Sample fields it fills."""

    def fields(self) -> dict[str, Any]: ...


class GpuSampler:
    """NVML, initialised once; handles are kept so a round is a few microseconds per GPU."""

    SLOW_EVERY = 5

    def __init__(self, server_pids: Callable[[], set[int]] = set) -> None:
        import os

        from ktwizard.host.nvml import NVML_ROOT_ENV

        self.server_pids = server_pids  # the monitored server's processes, marked in the process list
        self.error: str | None = None
        self.handles: list[Any] = []
        self.recorded = os.environ.get(NVML_ROOT_ENV)  # a recorded nvml.json, re-read every sample (replays)
        self.rounds = 0
        self.names: dict[int, str] = {}
        self.slow: dict[int, tuple[Any, Any, Any]] = {}
        if self.recorded:
            return
        from ktwizard.monitor import nvml_calls as nvml  # pynvml's names, without pynvml's 2.6 MB

        try:
            nvml.nvmlInit()
            self.nvml = nvml
            self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        except nvml.NVMLError as exc:  # no driver, no library: the pane says so
            from ktwizard.host.nvml import _init_reason

            self.error = _init_reason(exc)
        except Exception as exc:  # noqa: BLE001 - anything else NVML's start raises, in the pane
            self.error = f"NVML unavailable ({exc})"

    def fields(self) -> dict[str, Any]:
        gpus, error = self.sample(self.server_pids())
        return {"gpus": gpus, "gpu_error": error}

    def sample(self, server_pids: frozenset[int] | set[int] = frozenset()) -> tuple[tuple[GpuSample, ...], str | None]:
        if self.recorded:
            return _replayed(self.recorded, server_pids)
        if self.error:
            return (), self.error
        n = self.nvml
        self.rounds += 1
        slow_round = self.rounds % self.SLOW_EVERY == 1  # temperature and clocks move slowly: every 5th round
        out = []
        for i, h in enumerate(self.handles):

            def get(fn, *a, h=h):
                try:
                    return fn(h, *a)
                except n.NVMLError:
                    return None

            mem = get(n.nvmlDeviceGetMemoryInfo, n.nvmlMemory_v2) or get(n.nvmlDeviceGetMemoryInfo)
            util = get(n.nvmlDeviceGetUtilizationRates)
            power = get(n.nvmlDeviceGetPowerUsage)
            procs = get(n.nvmlDeviceGetComputeRunningProcesses) or []
            if i not in self.names:
                self.names[i] = _s(get(n.nvmlDeviceGetName) or "")
            if slow_round or i not in self.slow:
                self.slow[i] = (
                    get(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU),
                    get(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM),
                    get(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_MEM),
                )
            temp, sm, memclk = self.slow[i]
            out.append(
                GpuSample(
                    index=i,
                    name=self.names[i],
                    total=mem.total,
                    used=mem.used,
                    reserved=getattr(mem, "reserved", None),
                    util_pct=float(util.gpu) if util else None,
                    power_w=power / 1000 if power else None,
                    temp_c=temp,
                    sm_mhz=sm,
                    mem_mhz=memclk,
                    processes=tuple(GpuProcSample(p.pid, p.usedGpuMemory or 0, p.pid in server_pids) for p in procs),
                )
            )
        return tuple(out), None


def _replayed(root: str, server_pids: frozenset[int] | set[int]) -> tuple[tuple[GpuSample, ...], str | None]:
    """GPU samples from a recorded nvml.json (host.nvml's snapshot shape); a broken file is an error value."""
    from ktwizard.host.nvml import RecordedNvml
    from ktwizard.host.root import Root

    snap = RecordedNvml(Root(root)).snapshot()
    if "error" in snap:
        return (), str(snap["error"])
    out = []
    try:
        for d in snap.get("devices") or []:
            mem = d.get("mem_v2") or d["mem_v1"]
            out.append(
                GpuSample(
                    index=int(d["index"]),
                    name=str(d.get("name", "")),
                    total=int(mem["total"]),
                    used=int(mem["used"]),
                    reserved=int(mem["reserved"]) if "reserved" in mem else None,
                    util_pct=float(d["util_gpu"]) if isinstance(d.get("util_gpu"), int | float) else None,
                    power_w=None,
                    temp_c=None,
                    sm_mhz=None,
                    mem_mhz=None,
                    processes=tuple(
                        GpuProcSample(int(p["pid"]), int(p.get("used") or 0), int(p["pid"]) in server_pids)
                        for p in d.get("procs") or []
                    ),
                )
            )
    except (KeyError, TypeError, ValueError) as exc:
        return (), f"recorded nvml.json has the wrong shape ({exc.__class__.__name__}: {exc})"
    return tuple(out), None


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class HostSampler:
    """RAM, swap, page cache and per-NUMA memory and CPU use from /proc and /sys."""

    def __init__(self, root: str = "/") -> None:
        self.root = Root(root)
        self.nodes = []
        for path in self.root.glob("sys/devices/system/node/node*"):
            m = re.fullmatch(r"node(\d+)", path.name)
            if m:
                cpus = parse_cpu_list(self.root.first_line(f"sys/devices/system/node/{path.name}/cpulist"))
                self.nodes.append((int(m.group(1)), set(cpus)))
        self.prev_cpu: dict[int, tuple[int, int]] = {}
        self.prev_swap: tuple[int, int] | None = None

    def _cpu_times(self) -> dict[int, tuple[int, int]]:
        out = {}
        for line in (self.root.read("proc/stat") or "").splitlines():
            if line.startswith("cpu") and line[3:4].isdigit():
                parts = line.split()
                vals = [int(x) for x in parts[1:]]
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
                out[int(parts[0][3:])] = (sum(vals), idle)
        return out

    def _swap_io(self) -> tuple[int, int]:
        v = parse_kv(self.root.read("proc/vmstat"), " ")
        return int(v.get("pswpin", 0)), int(v.get("pswpout", 0))

    def fields(self) -> dict[str, Any]:
        return {"host": self.sample()}

    def sample(self) -> HostSample:
        info = parse_kv(self.root.read("proc/meminfo"))
        cpu = self._cpu_times()
        nodes = []
        for node_id, cpus in self.nodes:
            busy = total = 0
            for c in cpus:
                if c in cpu and c in self.prev_cpu:
                    dt = cpu[c][0] - self.prev_cpu[c][0]
                    total += dt
                    busy += dt - (cpu[c][1] - self.prev_cpu[c][1])
            meminfo = {}
            for line in (self.root.read(f"sys/devices/system/node/node{node_id}/meminfo") or "").splitlines():
                key, _, value = line.partition(":")
                if key:
                    meminfo[key.split()[-1]] = value.strip()
            nodes.append(
                NodeSample(
                    node_id,
                    kb(meminfo.get("MemTotal")),
                    kb(meminfo.get("MemFree")),
                    100.0 * busy / total if total else None,
                )
            )
        self.prev_cpu = cpu
        swap = self._swap_io()
        swapping = self.prev_swap is not None and swap != self.prev_swap
        self.prev_swap = swap
        return HostSample(
            total=kb(info.get("MemTotal")) or 0,
            available=kb(info.get("MemAvailable")) or 0,
            swap_total=kb(info.get("SwapTotal")) or 0,
            swap_free=kb(info.get("SwapFree")) or 0,
            page_cache=(kb(info.get("Cached")) or 0) + (kb(info.get("Buffers")) or 0),
            swapping=swapping,
            nodes=tuple(nodes),
        )


class ContainerSampler:
    """State and `docker stats`-style memory / CPU of one container, polled one-shot (never an endless stream)."""

    def __init__(self, name: str) -> None:
        from ktwizard.deploy.engine import connect

        self.name = name
        self.client = connect()
        self.prev: tuple[int, int] | None = None
        self.pids: set[int] = set()
        self.pids_at = 0.0

    def fields(self) -> dict[str, Any]:
        return {"container": self.sample()}

    def sample(self) -> ContainerSample:
        try:
            return self._sample()
        except Exception as exc:  # noqa: BLE001 - the engine went away mid-poll: a sample that says so, not a crash
            return ContainerSample(
                self.name, f"unknown ({exc.__class__.__name__}: engine unreachable)", 0, None, False, None, None, None
            )

    def _sample(self) -> ContainerSample:
        import docker

        try:
            c = self.client.containers.get(self.name)
        except docker.errors.NotFound:
            return ContainerSample(self.name, "gone", 0, None, False, None, None, None)
        state = c.attrs["State"]
        mem_used = mem_limit = cpu_pct = None
        if state.get("Running"):
            st = c.stats(stream=False, one_shot=True)
            ms = st.get("memory_stats") or {}
            inactive = (ms.get("stats") or {}).get(
                "total_inactive_file", (ms.get("stats") or {}).get("inactive_file", 0)
            )
            if "usage" in ms:
                mem_used, mem_limit = ms["usage"] - inactive, ms.get("limit")
            cs = st.get("cpu_stats") or {}
            now = ((cs.get("cpu_usage") or {}).get("total_usage", 0), cs.get("system_cpu_usage", 0))
            if self.prev and now[1] > self.prev[1]:
                cpu_pct = (now[0] - self.prev[0]) / (now[1] - self.prev[1]) * (cs.get("online_cpus") or 1) * 100
            self.prev = now
            if time.monotonic() - self.pids_at > 10:
                try:
                    self.pids = {int(p[1]) for p in c.top().get("Processes") or []}
                except (docker.errors.DockerException, ValueError, IndexError):
                    self.pids = set()
                self.pids_at = time.monotonic()
        return ContainerSample(
            self.name,
            state.get("Status", "?"),
            int(c.attrs.get("RestartCount", 0)),
            None if state.get("Running") else state.get("ExitCode"),
            bool(state.get("OOMKilled")),
            mem_used,
            mem_limit,
            cpu_pct,
        )


LATENCY = ("ttft_p50", "ttft_p95", "itl_p50", "itl_p95")


MAX_METRICS = 8 * 2**20  # a real scrape is tens of KiB


class ServerSampler:
    """/metrics on a kept-alive connection, parsed by prometheus_client; rates against the previous scrape.

    The latency histograms are most of a scrape and prometheus_client's parser is the sampler's largest cost, so
    they are parsed every HISTOGRAM_EVERY scrapes and the quantiles cover that window: a 1 s window of TTFT
    observations is mostly empty anyway.
    """

    HISTOGRAM_EVERY = 5

    def __init__(self, url: str, timeout: float = 2.0) -> None:
        from ktwizard.monitor.fetch import Getter

        self.url = url.rstrip("/")
        self.http = Getter(self.url, timeout)
        self.prev: Scrape | None = None
        self.prev_hist: Scrape | None = None
        self.latency: dict[str, float | None] = {}
        self.scrapes = 0

    def _reset(self) -> None:
        self.prev = self.prev_hist = None
        self.latency = {}

    def fields(self) -> dict[str, Any]:
        return {"server": self.sample()}

    def sample(self) -> ServerSample:
        from ktwizard.monitor.fetch import FetchError, TooLarge

        try:
            status, body = self.http.get("/metrics", MAX_METRICS)
        except TooLarge as exc:
            self._reset()
            return ServerSample(up=False, error=str(exc))
        except FetchError as exc:
            self._reset()
            return ServerSample(up=False, error=f"{self.url}/metrics unreachable ({exc.__class__.__name__})")
        if status != 200:
            self._reset()
            return ServerSample(up=False, error=f"{self.url}/metrics answered {status} (is --enable-metrics on?)")
        with_hist = self.prev_hist is None or self.scrapes % self.HISTOGRAM_EVERY == 0
        self.scrapes += 1
        try:
            cur = parse_scrape(body.decode("utf-8", "replace"), time.monotonic(), histograms=with_hist)
        except (ValueError, KeyError, TypeError) as exc:
            self._reset()
            return ServerSample(up=False, error=f"{self.url}/metrics is not Prometheus text ({exc})"[:300])
        if not (cur.gauges or cur.counters or cur.buckets):  # parses, but names no SGLang family: not SGLang
            self._reset()
            return ServerSample(up=False, error=f"{self.url}/metrics has no SGLang metrics (is this an SGLang server?)")
        out = server_sample(self.prev, cur, since=self.prev_hist)  # cur has no buckets between histogram scrapes
        self.prev = cur
        if with_hist:
            self.latency = {k: getattr(out, k) for k in LATENCY}
            self.prev_hist = cur
            return out
        return replace(out, **self.latency)  # type: ignore[arg-type]  # LATENCY names float fields
