"""One monitoring session: the samplers that apply, history rings, and alerts over the latest sample."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from statistics import median

from ktwizard.monitor.samples import Alert, Sample

HISTORY = 900  # 15 minutes at 1 Hz


class Monitor:
    def __init__(
        self, url: str | None = None, container: str | None = None, root: str = "/", gpus: bool = True
    ) -> None:
        from ktwizard.monitor.samplers import ContainerSampler, GpuSampler, HostSampler, ServerSampler

        self.gpu = GpuSampler() if gpus else None
        self.host = HostSampler(root)
        self.container = ContainerSampler(container) if container else None
        self.server = ServerSampler(url) if url else None
        self.history: dict[str, deque[float]] = {}
        self.last: Sample | None = None
        self.was_up = False
        self.restarts: int | None = None

    def series(self, name: str) -> deque[float]:
        return self.history.setdefault(name, deque(maxlen=HISTORY))

    def sample(self, panes: frozenset[str] = frozenset({"gpu", "host", "container", "server"})) -> Sample:
        """One poll of the visible panes; hidden panes are not polled."""
        pids = self.container.pids if self.container else set()
        gpus, gpu_error = self.gpu.sample(pids) if self.gpu and "gpu" in panes else ((), None)
        s = Sample(
            t=time.time(),
            gpus=gpus,
            gpu_error=gpu_error,
            host=self.host.sample() if "host" in panes else None,
            container=self.container.sample() if self.container and "container" in panes else None,
            server=self.server.sample() if self.server and "server" in panes else None,
        )
        self._record(s)
        s = replace(s, alerts=tuple(self._alerts(s)))
        self.last = s
        return s

    def _record(self, s: Sample) -> None:
        for g in s.gpus:
            self.series(f"gpu{g.index}.used").append(g.used)
        if s.host:
            self.series("host.available").append(s.host.available)
        if s.server and s.server.up:
            for key in ("decode_tps", "prefill_tps", "kv_usage", "running", "queued"):
                value = getattr(s.server, key)
                if value is not None:
                    self.series(f"server.{key}").append(value)

    def _alerts(self, s: Sample) -> list[Alert]:
        out = []
        for g in s.gpus:
            if g.total and g.used / g.total > 0.97:
                out.append(
                    Alert("error", f"GPU {g.index} memory at {g.used / g.total:.0%}: the next allocation may fail")
                )
        if s.host and s.host.swapping:
            out.append(Alert("warn", "the host is swapping: expert weights paged out make decode crawl"))
        c = s.container
        if c:
            if c.oom_killed:
                out.append(Alert("error", f"container {c.name} was OOM-killed (exit {c.exit_code})"))
            elif c.state in ("exited", "dead", "gone"):
                out.append(
                    Alert(
                        "error",
                        f"container {c.name} is {c.state}"
                        + (f" (exit {c.exit_code})" if c.exit_code is not None else ""),
                    )
                )
            if self.restarts is not None and c.restarts > self.restarts:
                out.append(Alert("warn", f"container {c.name} restarted"))
            self.restarts = c.restarts
        srv = s.server
        if srv:
            if not srv.up and self.was_up:
                out.append(Alert("error", f"metrics endpoint gone: {srv.error}"))
            self.was_up = self.was_up or srv.up
            hist = list(self.series("server.decode_tps"))
            if srv.up and srv.decode_tps is not None and (srv.running or 0) > 0 and len(hist) >= 10:
                ref = median(hist[-60:])
                if ref > 1 and srv.decode_tps < 0.2 * ref:
                    out.append(Alert("warn", f"decode rate collapsed to {srv.decode_tps:.1f} tok/s (median {ref:.1f})"))
        return out
