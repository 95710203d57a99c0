"""Bench calibrations kept per host and model (planner/calibration.py says what they mean), beside the user's data."""

from __future__ import annotations

import contextlib
import datetime
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.planner.calibration import Calibration, factor_from, host_key
from ktwizard.serial import dump_json, from_data, read_structured, write_atomic

if TYPE_CHECKING:
    from ktwizard.planner.types import Plan

SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def folder() -> Path:
    from ktwizard import folders

    return folders.calibration()


def _path(key: str, model: str) -> Path:
    return folder() / f"{SAFE.sub('_', key)[:32]}--{SAFE.sub('_', model)[:80]}.json"


def stored(host: HostProfile, model: str) -> Calibration | None:
    """This host's calibration for `model`; a damaged file is ignored (a forecast without it is still a forecast)."""
    path = _path(host_key(host), model)
    if not path.exists():
        return None
    with contextlib.suppress(BadInput):
        cal = from_data(Calibration, read_structured(path), str(path))
        return cal if cal.host_key == host_key(host) and cal.model == model else None
    return None


def calibrate(plan: Plan, decode: list[tuple[int, int, float]]) -> Calibration | None:
    """Compare measured aggregate decode (context, concurrency, tok/s) with the saved plan's forecast (uncalibrated)
    at the nearest grid point, and keep the factor for that plan's host and model. The plan is typed (app.target
    reads it back as a Plan): a renamed field fails loudly instead of turning calibration off."""
    f, key, model = plan.forecast, plan.host_key, plan.model.id
    if f is None or not key or not f.decode:
        return None
    old = f.factor or 1.0
    pairs = []
    for ctx, c, rate in decode:
        near = f.decode_at(ctx, c)
        if near.concurrency == c:
            pairs.append((rate, near.tok_s_total / old))
    factor = factor_from(pairs)
    if factor is None:
        return None
    cal = Calibration(
        host_key=key,
        model=model,
        method=plan.method,
        gpu_experts=plan.gpu_experts,
        factor=round(factor, 3),
        date=datetime.date.today().isoformat(),
        rows=len(pairs),
    )
    write_atomic(_path(key, model), dump_json(cal))
    return cal
