"""Forecasts corrected by the user's own measurements. `ktwizard bench NAME` compares what a deployment measured
with its plan's forecast and keeps the ratio under a key of everything the measurement depends on: the host's
fingerprint, the model, the method, the GPU experts, the placement, the TP size and the image. A later plan is
corrected only by a calibration of exactly its key (`factor_for`), so a bench of one deployment never moves another
host's or another placement's forecast. Values are checked whenever they are read (`check`)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile

if TYPE_CHECKING:
    from ktwizard.planner.types import Plan

# measured / forecast outside this band is a broken run or the wrong server, not a calibration: the forecast's
# leave-one-source-out error is within tens of percent (benchmarks/results/forecast-validation.md)
MIN_FACTOR, MAX_FACTOR = 0.2, 5.0


@dataclass(frozen=True)
class CalibrationKey:
    """What a calibration was measured under: host, model, method, GPU experts and placement."""

    host_key: str  # host_key(): the machine's fingerprint
    model: str
    method: str
    gpu_experts: int
    placement: str  # uniform | frequency
    tp: int
    image: str  # the image the measured server ran (the plan's image for a native server)

    @property
    def id(self) -> str:
        """A short, stable name for this key (file names, `ktwizard calibration show ID`)."""
        text = "|".join(str(v) for v in (self.host_key, self.model, self.method, self.gpu_experts, self.placement,
                                          self.tp, self.image))  # fmt: skip
        return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Calibration:
    """A bench's measured-to-forecast decode ratio for one key."""

    key: CalibrationKey
    decode: float  # measured / forecast aggregate decode, geometric mean over the bench's rows
    deployment: str  # the deployment the bench measured
    date: str  # ISO date of the bench
    rows: int  # decode rows it rests on

    @property
    def line(self) -> str:
        return f"calibrated by bench of {self.deployment} on {self.date}: x{self.decode:.2f} decode ({self.rows} rows)"


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


def key_of(plan: Plan, image: str = "") -> CalibrationKey:
    """The key a plan is calibrated under; `image` is what the server really ran when a launch overrode the plan's."""
    return CalibrationKey(
        host_key=plan.host_key,
        model=plan.model.id,
        method=plan.method,
        gpu_experts=plan.gpu_experts,
        placement=plan.goals.placement,
        tp=plan.tp,
        image=image or plan.image,
    )


def factor_for(key: CalibrationKey, calibrations: tuple[Calibration, ...]) -> Calibration | None:
    """The calibration that applies to a plan of this key: one of exactly the same key, or none (the newest if
    several were kept)."""
    same = [c for c in calibrations if c.key == key]
    return max(same, key=lambda c: c.date) if same else None


def check(cal: Calibration, where: str) -> Calibration:
    """A calibration read from disk, refused in one line unless its factor is a finite ratio within the band."""
    f = cal.decode
    if (
        isinstance(f, bool)
        or not isinstance(f, int | float)
        or (isinstance(f, float) and not math.isfinite(f))  # an int is finite, and may be past a float's range
        or not MIN_FACTOR <= f <= MAX_FACTOR
    ):
        shown = repr(f) if len(repr(f)) <= 40 else f"{repr(f)[:20]}... ({len(repr(f))} characters)"
        raise BadInput(
            f"{where}: decode factor {shown} is not a finite ratio between {MIN_FACTOR} and {MAX_FACTOR}; "
            f"ktwizard calibration reset {cal.key.id} removes it"
        )
    if not isinstance(cal.rows, int) or cal.rows < 1 or cal.key.gpu_experts < 0 or cal.key.tp < 1:
        raise BadInput(f"{where}: rows, GPU experts or TP out of range; ktwizard calibration reset {cal.key.id}")
    return cal


def factor_from(pairs: list[tuple[float, float]]) -> float | None:
    """Geometric mean of measured / forecast over (measured, forecast) pairs; None when nothing usable."""
    logs = [math.log(m / f) for m, f in pairs if m > 0 and f > 0 and math.isfinite(m) and math.isfinite(f)]
    if not logs:
        return None
    factor = math.exp(sum(logs) / len(logs))
    return factor if MIN_FACTOR <= factor <= MAX_FACTOR else None
