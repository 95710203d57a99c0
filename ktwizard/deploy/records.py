"""Deployments ktwizard started, kept under the user's state directory so stop/logs/monitor find them."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _path(name: str) -> Path:
    """The record of `name`, which must be a plain deployment name: a record never lands outside the state folder."""
    from ktwizard.render.docker import check_name

    return state_dir() / f"{check_name(name)}.json"


def save(d: Deployment) -> Path:
    path = _path(d.name)
    write_atomic(path, dump_json(d))
    return path


def load(name: str) -> Deployment | None:
    path = _path(name)
    return from_data(Deployment, read_structured(path)) if path.exists() else None


EXTRAS = ("plan", "peak")  # what a launch keeps beside the record: the plan it ran, the peak check's report


def _extra(name: str, kind: str) -> Path:
    return state_dir() / f"{check(name)}.{kind}.json"


def check(name: str) -> str:
    from ktwizard.render.docker import check_name

    return check_name(name)


def save_extra(name: str, kind: str, text: str) -> None:
    write_atomic(_extra(name, kind), text)


def load_extra(name: str, kind: str) -> Any:
    """The saved plan or peak report of a deployment as data; None when there is none."""
    path = _extra(name, kind)
    return read_structured(path) if path.exists() else None


def forget(name: str) -> None:
    for path in (_path(name), *(_extra(name, k) for k in EXTRAS)):
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # nothing there: nothing to do
            path.unlink()
