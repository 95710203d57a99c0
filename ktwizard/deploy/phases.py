"""Follow SGLang's start-up from its log: phases with elapsed time, the memory figures it prints, error lines."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

# (phase, pattern) in start-up order; reference/sglang-runtime-facts.md and monitoring-and-textual.md §1.3.
PHASES = (
    ("init", re.compile(r"Init torch distributed ends")),
    ("weights", re.compile(r"Load weight begin")),
    ("kt experts", re.compile(r"\[KT\]")),
    ("kv pool", re.compile(r"Load weight end|KV Cache is allocated")),
    ("cuda graphs", re.compile(r"Capture cuda graph begin")),
    ("http", re.compile(r"Uvicorn running on|Application startup complete")),
    ("ready", re.compile(r"The server is fired up and ready to roll")),
)
ORDER = [p for p, _ in PHASES]
_GB = r"([\d.]+) GB"
FIGURES = (
    ("init_gb", re.compile(r"Init torch distributed ends.*mem usage=" + _GB)),
    ("weights_gb", re.compile(r"Load weight end.*mem usage=" + _GB)),
    ("kv_tokens", re.compile(r"KV Cache is allocated\. #tokens: (\d+)")),
    ("kv_gb", re.compile(r"KV Cache is allocated.*?KV size: " + _GB)),
    ("k_gb", re.compile(r"KV Cache is allocated.*?K size: " + _GB)),
    ("v_gb", re.compile(r"KV Cache is allocated.*?V size: " + _GB)),
    ("graphs_gb", re.compile(r"Capture cuda graph end.*mem usage=" + _GB)),
    ("max_total_num_tokens", re.compile(r"max_total_num_tokens=(\d+)")),
    ("available_gpu_mem_gb", re.compile(r"available_gpu_mem=" + _GB)),
)
# tqdm's bar while SGLang reads the checkpoint: "Loading safetensors checkpoint shards:  25% Completed | 16/64 [...]"
SHARDS = re.compile(r"Loading safetensors checkpoint shards:\s*(\d+)% Completed \| (\d+)/(\d+)")
ERRORS = (
    re.compile(
        r"CUDA out of memory|torch\.OutOfMemoryError|Not enough memory\. Please try to increase "
        r"--mem-fraction-static|(Prefill|Decode) out of memory"
    ),
    re.compile(r"launch_server\.py: error: "),
    re.compile(
        r"Traceback \(most recent call last\)|Scheduler hit an exception|Initialization failed|Received sigquit from "
        r"a child process"
    ),
    re.compile(r"Illegal instruction"),
)


@dataclass
class PhaseEvent:
    phase: str
    at: float  # seconds since start


@dataclass
class StartupTracker:
    """Feed it log lines; it knows the phase, when each began, the logged memory figures and error lines."""

    started: float = field(default_factory=time.monotonic)
    events: list[PhaseEvent] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    shards: tuple[int, int] | None = None  # (loaded, total) checkpoint shards, from the loader's progress bar

    @property
    def phase(self) -> str:
        return self.events[-1].phase if self.events else "starting"

    @property
    def ready(self) -> bool:
        return self.phase == "ready"

    def feed(self, line: str, now: float | None = None) -> PhaseEvent | None:
        line = line.rstrip("\r\n")
        self.tail = (self.tail + [line])[-200:]
        for key, pattern in FIGURES:
            m = pattern.search(line)
            if m:
                self.figures[key] = float(m.group(1))
        for pattern in ERRORS:
            if pattern.search(line):
                self.errors.append(line)
                break
        shard = SHARDS.search(line)
        if shard:
            self.shards = (int(shard.group(2)), int(shard.group(3)))
        for name, pattern in PHASES:
            if pattern.search(line) and (not self.events or ORDER.index(name) > ORDER.index(self.phase)):
                event = PhaseEvent(name, (now if now is not None else time.monotonic()) - self.started)
                self.events.append(event)
                return event
        return None
