"""One monitoring session: the samplers that apply (by name), the log as a second source, alerts."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ktwizard.monitor.logs import LogFollower
from ktwizard.monitor.samples import HISTORY, Alert, Sample, ServerSample
from ktwizard.textsafe import scrubbed

ALL = frozenset({"gpu", "host", "container", "server"})


class Monitor:
    """The samplers that apply, by name; each poll asks only those the visible panes read."""

    def __init__(
        self,
        url: str | None = None,
        container: str | None = None,
        root: str = "/",
        gpus: bool = True,
        log: LogFollower | None = None,
        pid: int | None = None,
    ) -> None:
        from ktwizard.monitor.samplers import ContainerSampler, GpuSampler, HostSampler, Sampler, ServerSampler

        self.samplers: dict[str, Sampler] = {"host": HostSampler(root)}
        pids: Callable[[], set[int]] = set
        if container:
            box = ContainerSampler(container)
            self.samplers["container"] = box
            pids = lambda: box.pids  # noqa: E731 - the GPU pane marks the server's processes
        if pid is not None:  # a native server: its process group leader and everything below it
            from ktwizard.deploy.procid import descendants

            pids = lambda: {pid, *descendants(pid)}  # noqa: E731
        if gpus:
            self.samplers["gpu"] = GpuSampler(pids)
        if url:
            self.samplers["server"] = ServerSampler(url)
        self.log = log
        self.decode: deque[float] = deque(maxlen=HISTORY)  # decode rates while busy: the collapse alert's baseline
        self.last: Sample | None = None
        self.was_up = False
        self.restarts: int | None = None

    def sample(self, panes: frozenset[str] = ALL) -> Sample:
        """One poll of the samplers the visible panes read; hidden panes are not polled."""
        fields: dict[str, Any] = {}
        for name in sorted(panes & self.samplers.keys()):
            fields.update(self.samplers[name].fields())
        s = scrubbed(Sample(t=time.time(), **fields))  # server strings, once, for every dashboard that shows them
        if "server" in panes:
            s = self._from_log(s)
        s = replace(s, alerts=tuple(self._alerts(s)))
        if s.server and s.server.decode_tps is not None and (s.server.running or 0) > 0:
            self.decode.append(s.server.decode_tps)
        self.last = s
        return s

    def _from_log(self, s: Sample) -> Sample:
        """Without /metrics (or with it down), the container's batch log lines give throughput and KV use."""
        if self.log is None or (s.server is not None and s.server.up):
            return s
        decode, prefill = self.log.recent("decode"), self.log.recent("prefill")
        latest = decode or prefill
        if latest is None:
            return s
        base = s.server or ServerSample(up=False, error="no /metrics: numbers from the log")
        return replace(
            s,
            server=replace(
                base,
                source="log",
                decode_tps=decode.throughput if decode else None,
                prefill_tps=prefill.throughput if prefill else None,
                running=decode.get("#running-req") if decode else None,
                queued=latest.get("#queue-req"),
                kv_usage=latest.token_usage,
            ),
        )

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
            elif c.ended:
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
            hist = list(self.decode)
            if srv.up and srv.decode_tps is not None and (srv.running or 0) > 0 and len(hist) >= 10:
                ref = _median(hist[-60:])
                if ref > 1 and srv.decode_tps < 0.2 * ref:
                    out.append(Alert("warn", f"decode rate collapsed to {srv.decode_tps:.1f} tok/s (median {ref:.1f})"))
        return out


@dataclass(frozen=True)
class Watch:
    """What a dashboard watches and how: the same for the terminal dashboard and the Textual one."""

    url: str | None = None
    container: str | None = None
    interval: float = 1.0
    gpus: bool = True
    source: Any = None  # samples to show instead of polling (a replay)
    predicted: dict[int, int] | None = None  # the plan's peak per GPU: the mark on each bar
    record: str | None = None  # a file every sample is appended to
    deployment: str | None = None  # the record's name, what ^k stops (the container's, when not given)
    native: tuple[str | None, int | None] = (None, None)  # a native server's log file and process group

    @property
    def stoppable(self) -> str | None:
        return self.deployment or self.container

    @property
    def target(self) -> str:
        """What the header names: the URL, else the container."""
        return self.url or self.container or ""

    @property
    def has_log(self) -> bool:
        """A container's log or a native server's file to follow (a server given by URL has neither)."""
        return bool(self.container or self.log_path)

    @property
    def log_path(self) -> str | None:
        """The native server's log file, when there is no container log to follow."""
        return None if self.container else self.native[0]

    def follow(self, on_line: Callable[[str], None]) -> LogFollower | None:
        """The server's log followed in a thread (the container's, or a native server's file); None without one."""
        if not self.has_log:
            return None
        return LogFollower(self.container or "", on_line=on_line, path=self.log_path).start()

    def open(self, log: LogFollower | None) -> Any:
        """The samples: the source given, or a Monitor of the target; each appended to `record` when asked."""
        source = self.source
        if source is None:
            source = Monitor(url=self.url, container=self.container, gpus=self.gpus, log=log, pid=self.native[1])
        if self.record:
            from ktwizard.monitor.recording import Recorder

            source = Recorder(source, self.record)
        return source


def _median(values: list[float]) -> float:
    """statistics.median, step for step, without the module: decimal and fractions come with it, half a megabyte
    of a dashboard that runs for days."""
    data = sorted(values)
    i = len(data) // 2
    return data[i] if len(data) % 2 else (data[i - 1] + data[i]) / 2
