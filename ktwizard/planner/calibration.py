"""Forecasts corrected by the user's own measurements: `ktwizard bench` on a deployment stores measured / forecast
for that host and model, and later plans for the same host and model scale by it. Another host never matches."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from ktwizard.host.profile import HostProfile

MIN_FACTOR, MAX_FACTOR = 0.1, 10.0  # a measurement further off than this is a broken run, not a calibration


@dataclass(frozen=True)
class Calibration:
    host_key: str
    model: str
    method: str
    gpu_experts: int
    factor: float  # measured / forecast decode, geometric mean over the bench's rows
    date: str  # ISO date of the bench
    rows: int

    @property
    def line(self) -> str:
        return f"calibrated by bench on {self.date}: x{self.factor:.2f} ({self.rows} decode rows, {self.method})"


def host_key(host: HostProfile) -> str:
    """What makes two probes the same machine for throughput: CPU, sockets, cores, GPUs, memory and its speed."""
    m = host.memory.speed
    parts = [
        host.cpu.brand,
        str(host.cpu.sockets),
        str(host.cpu.cores_per_socket),
        ",".join(sorted(g.name for g in host.gpus.devices)),
        str(round(host.memory.total / 2**30 / 16)),  # 16 GiB steps: what the kernel reserves varies by boot
        f"{m.kind}-{m.speed_mts}x{m.channels_per_socket}" if m else "",
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def factor_from(pairs: list[tuple[float, float]]) -> float | None:
    """Geometric mean of measured / forecast over (measured, forecast) pairs; None when nothing usable."""
    logs = [math.log(m / f) for m, f in pairs if m > 0 and f > 0 and math.isfinite(m) and math.isfinite(f)]
    if not logs:
        return None
    factor = math.exp(sum(logs) / len(logs))
    return factor if MIN_FACTOR <= factor <= MAX_FACTOR else None
