"""On a GPU machine: the dashboard's NVML calls (ktwizard/monitor/nvml_calls.py) beside pynvml's answers for GPU 0,
and what the sampler's start costs in resident memory. Usage: python benchmarks/nvml_calls_check.py"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss() -> int:
    return int(re.search(r"Rss:\s+(\d+)", Path("/proc/self/smaps_rollup").read_text()).group(1))


r0 = rss()
from ktwizard.monitor.samplers import GpuSampler  # noqa: E402

g = GpuSampler()
print("nvml_calls:", g.error, g.sample(), f"+{rss() - r0} kB", "pynvml loaded" if "pynvml" in sys.modules else "")
import pynvml as n  # noqa: E402

n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
m = n.nvmlDeviceGetMemoryInfo(h, n.nvmlMemory_v2)
print(
    "pynvml:",
    n.nvmlDeviceGetName(h),
    m.total,
    m.used,
    m.reserved,
    n.nvmlDeviceGetUtilizationRates(h).gpu,
    n.nvmlDeviceGetPowerUsage(h),
    n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
    n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
    n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
    [(p.pid, p.usedGpuMemory) for p in n.nvmlDeviceGetComputeRunningProcesses(h)],
)
