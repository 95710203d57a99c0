"""Fleets ktwizard started: which replicas and which router, so stop/status/monitor find exactly those."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ktwizard.records_store import RecordStore


@dataclass(frozen=True)
class RouterRecord:
    kind: str  # native | docker
    url: str
    metrics_url: str
    pid: int | None = None
    container: str | None = None
    log_path: str | None = None
    pid_start: int | None = None  # the router process's start time (procid.start_ticks)


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
    from ktwizard import folders

    return folders.fleets()


def _check(name: str) -> str:
    from ktwizard.fleet.plan import check_fleet_name

    return check_fleet_name(name)


STORE: RecordStore[FleetRecord] = RecordStore(fleets_dir, FleetRecord, _check)


def save(rec: FleetRecord) -> Path:
    return STORE.save(rec.name, rec)


def load(name: str) -> FleetRecord | None:
    return STORE.load(name)


def forget(name: str) -> None:
    STORE.forget(name)


def require(name: str, flag: str = "") -> FleetRecord:
    """The record of a fleet ktwizard launched, or bad input naming it."""
    from ktwizard.errors import BadInput

    rec = load(name)
    if rec is None:
        raise BadInput(
            f"{flag + ' ' if flag else ''}{name}: no such fleet (ktwizard fleet launch records the fleets it starts)"
        )
    return rec
