"""Deployments ktwizard started, kept under the user's state directory so stop/logs/monitor find them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ktwizard.serial import dump_json, from_data, read_structured, write_atomic


@dataclass(frozen=True)
class Deployment:
    name: str
    kind: str  # docker | native
    url: str
    plan_digest: str
    model: str
    container_id: str | None = None
    pid: int | None = None
    log_path: str | None = None


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "ktwizard" / "deployments"


def save(d: Deployment) -> Path:
    path = state_dir() / f"{d.name}.json"
    write_atomic(path, dump_json(d))
    return path


def load(name: str) -> Deployment | None:
    path = state_dir() / f"{name}.json"
    return from_data(Deployment, read_structured(path)) if path.exists() else None


def forget(name: str) -> None:
    (state_dir() / f"{name}.json").unlink(missing_ok=True)
