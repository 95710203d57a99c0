"""Bench calibrations kept per host and model (planner/calibration.py says what they mean), beside the user's data."""

from __future__ import annotations

import contextlib
import datetime
import os
import re
from pathlib import Path
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.planner.calibration import Calibration, factor_from, host_key
from ktwizard.serial import dump_json, from_data, read_structured, write_atomic

SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def folder() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "ktwizard" / "calibration"


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


def calibrate(plan: dict[str, Any], decode: list[tuple[int, int, float]]) -> Calibration | None:
    """Compare measured aggregate decode (context, concurrency, tok/s) with the saved plan's forecast (uncalibrated)
    at the nearest grid point, and keep the factor for that plan's host and model."""
    f = plan.get("forecast") if isinstance(plan, dict) else None
    key, model = plan.get("host_key"), (plan.get("model") or {}).get("id")
    if not isinstance(f, dict) or not isinstance(key, str) or not key or not isinstance(model, str):
        return None
    grid = [d for d in f.get("decode") or [] if isinstance(d, dict)]
    old = float(f.get("factor") or 1.0)
    pairs = []
    for ctx, c, rate in decode:
        near = min(
            grid,
            key=lambda d: (abs(int(d.get("context_tokens", 0)) - ctx), abs(int(d.get("concurrency", 1)) - c)),
            default=None,
        )
        if near and int(near.get("concurrency", 0)) == c:
            pairs.append((rate, float(near.get("tok_s_total", 0)) / old))
    factor = factor_from(pairs)
    if factor is None:
        return None
    cal = Calibration(
        host_key=key,
        model=model,
        method=str(plan.get("method", "")),
        gpu_experts=int(plan.get("gpu_experts") or 0),
        factor=round(factor, 3),
        date=datetime.date.today().isoformat(),
        rows=len(pairs),
    )
    write_atomic(_path(key, model), dump_json(cal))
    return cal
