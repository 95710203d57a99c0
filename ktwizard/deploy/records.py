"""Deployments ktwizard started, kept under the user's state directory so stop/logs/monitor find them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.records_store import RecordStore


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
    pid_start: int | None = None  # the process's start time (procid.start_ticks): a reused PID is not ours
    # (GPU, the plan's peak in bytes): what a dashboard marks on the bars, read without the planner (its footprint)
    planned_peaks: tuple[tuple[int, int], ...] = ()
    # what it really runs, which a launch may set apart from the plan: a bench calibrates only plans of that image,
    # and never from a server given no GPUs (a stand-in measures nothing about the host's GPUs)
    image: str = ""  # the container's image ("" for a native server: the plan's)
    no_gpus: bool = False  # launched with --gpus none


def state_dir() -> Path:
    from ktwizard import folders

    return folders.deployments()


def _check(name: str) -> str:
    """A plain deployment name: a record never lands outside the state folder."""
    from ktwizard.render.names import check_name

    return check_name(name)


EXTRAS = ("plan", "peak", "verify")  # kept beside the record: the plan it ran, the peak check's and verify's reports
STORE: RecordStore[Deployment] = RecordStore(state_dir, Deployment, _check, EXTRAS)


def save(d: Deployment) -> Path:
    return STORE.save(d.name, d)


def load(name: str) -> Deployment | None:
    return STORE.load(name)


class NoDeployment(BadInput):
    """A name nothing answers to: no record, no labelled process, no labelled container."""


def no_deployment(name: str) -> NoDeployment:
    """The one line for a name nothing answers to, in every command."""
    return NoDeployment(f"{name}: no deployment of that name (ktwizard ps lists them)")


def names() -> list[str]:
    return STORE.names()


def save_extra(name: str, kind: str, text: str) -> None:
    STORE.save_text(name, kind, text)


def load_extra(name: str, kind: str) -> Any:
    """The saved plan or peak report of a deployment as data; None when there is none."""
    return STORE.load_raw(name, kind)


def forget(name: str) -> None:
    STORE.forget(name)
