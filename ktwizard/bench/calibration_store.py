"""Bench calibrations kept beside the user's data, one file per key (planner/calibration.py says what they mean and
when they apply). Every file is checked when it is read: a damaged one is refused in one line that names it and the
command that removes it alone, never a crash or a negative speed; `calibration list` shows it as damaged."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.planner.calibration import Calibration, check, factor_from, host_key, key_of
from ktwizard.serial import dump_json, from_data, read_structured, write_atomic

if TYPE_CHECKING:
    from ktwizard.planner.types import Plan

SAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_FILES = 1000  # a folder of calibrations is read whole: cap it
ID = re.compile(r"[0-9a-f]{12}")


def folder() -> Path:
    from ktwizard import folders

    return folders.calibration()


def _stem(host: str, model: str) -> str:
    return f"{SAFE.sub('_', host)[:32]}--{SAFE.sub('_', model)[:80]}--"


def path_of(cal: Calibration) -> Path:
    return folder() / f"{_stem(cal.key.host_key, cal.key.model)}{cal.key.id}.json"


def file_id(path: Path) -> str:
    """The id a calibration file answers to, read from its name alone, so a damaged file is listed and removed by
    it too: the id ktwizard writes at the end of the name, or (a file named otherwise) a digest of the name."""
    tail = path.stem.rpartition("--")[2]
    return tail if ID.fullmatch(tail) else hashlib.sha256(path.name.encode("utf-8", "replace")).hexdigest()[:12]


def read(path: Path) -> Calibration:
    """One calibration file, checked (BadInput in one line otherwise, naming the command that removes it alone)."""
    fix = f"ktwizard calibration reset {file_id(path)} removes it"
    try:
        if path.stat().st_size > 64 * 1024:
            raise BadInput(f"calibration file {path}: larger than a calibration; {fix}")
    except OSError as exc:
        raise BadInput(f"calibration file {path}: {exc.strerror or exc}") from None
    where = f"calibration file {path}"
    try:
        cal = from_data(Calibration, read_structured(path), where)
        return check(cal, where)
    except BadInput as exc:
        first = exc.message.splitlines()[0] if exc.message else where
        raise BadInput(first if "calibration reset" in first else f"{first} ({fix})") from None


@dataclass(frozen=True)
class Entry:
    """One file of the folder as `calibration list` shows it: its calibration, or why it cannot be read."""

    path: Path
    id: str
    calibration: Calibration | None
    damaged: str = ""  # the one-line reason, when calibration is None


def entry(path: Path) -> Entry:
    try:
        return Entry(path, file_id(path), read(path))
    except BadInput as exc:
        return Entry(path, file_id(path), None, exc.message)


def all_files() -> list[Path]:
    """Every entry of the folder, uncapped (what reset --all removes); a folder among them is listed as damaged, and
    reset says it could not remove it."""
    base = folder()
    return sorted(base.glob("*.json")) if base.is_dir() else []


def files() -> list[Path]:
    return all_files()[:MAX_FILES]


def stored(host: HostProfile, model: str) -> tuple[Calibration, ...]:
    """Every calibration kept for this host and model (the planner picks the one of the plan's exact key).

    The wizard re-plans on every keystroke: the folder is read again only when its entries change (every write is
    an atomic rename, which moves the folder's mtime), not on each plan."""
    base = folder()
    try:
        stamp = base.stat().st_mtime_ns
    except OSError:
        return ()
    return _stored(str(base), stamp, host_key(host), model)


@lru_cache(maxsize=16)
def _stored(base: str, stamp: int, key: str, model: str) -> tuple[Calibration, ...]:
    cals = [read(p) for p in sorted(Path(base).glob(f"{_stem(key, model)}*.json"))[:MAX_FILES]]
    return tuple(c for c in cals if c.key.host_key == key and c.key.model == model)


def find(ident: str) -> list[Path]:
    """The files whose id (file_id: read from the name, damaged or not) starts with `ident` (4 to 12 hex digits)."""
    if not re.fullmatch(r"[0-9a-f]{4,12}", ident):
        raise BadInput(f"{ident!r}: not a calibration id (ktwizard calibration list shows them)")
    return [p for p in all_files() if file_id(p).startswith(ident)]


def calibrate(plan: Plan, decode: list[tuple[int, int, float]], deployment: str, image: str = "") -> Calibration | None:
    """Compare measured aggregate decode (context, concurrency, tok/s) with the saved plan's forecast (uncalibrated)
    at the nearest grid point, and keep the factor under the plan's key (with the image the server really ran)."""
    f = plan.forecast
    if f is None or not plan.host_key or not f.decode:
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
    import datetime  # only a calibration being written is dated

    cal = Calibration(
        key=key_of(plan, image),
        decode=round(factor, 3),
        deployment=deployment,
        date=datetime.date.today().isoformat(),
        rows=len(pairs),
    )
    write_atomic(path_of(cal), dump_json(cal))
    return cal
