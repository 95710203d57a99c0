"""Fleets ktwizard started: which replicas and which router, so stop/status/monitor find exactly those."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from ktwizard.serial import dump_json, from_data, read_structured, write_atomic


@dataclass(frozen=True)
class RouterRecord:
    kind: str  # native | docker
    url: str
    metrics_url: str
    pid: int | None = None
    container: str | None = None
    log_path: str | None = None


@dataclass(frozen=True)
class ReplicaRecord:
    name: str  # the replica's deployment name (its container, its record)
    url: str
    host: str  # the machine it was planned for


@dataclass(frozen=True)
class FleetRecord:
    name: str
    model: str
    policy: str
    router: RouterRecord
    replicas: tuple[ReplicaRecord, ...]


def fleets_dir() -> Path:
    from ktwizard.deploy.records import state_dir

    return state_dir().parent / "fleets"


def _path(name: str) -> Path:
    from ktwizard.fleet.plan import check_fleet_name

    return fleets_dir() / f"{check_fleet_name(name)}.json"


def save(rec: FleetRecord) -> Path:
    path = _path(rec.name)
    write_atomic(path, dump_json(rec))
    return path


def load(name: str) -> FleetRecord | None:
    path = _path(name)
    return from_data(FleetRecord, read_structured(path), str(path)) if path.exists() else None


def forget(name: str) -> None:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        _path(name).unlink()
