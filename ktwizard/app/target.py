"""Which server is NAME? One answer for every command: a deployment's record, the plan its launch kept (typed), its
URL and API key file; or a URL as given. An unknown name is the same line everywhere, whatever the Docker engine's
state (an unreachable engine is not the user's mistake about a name)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktwizard.errors import BadInput, KtwizardError

if TYPE_CHECKING:  # a dashboard resolves names without loading the planner (its footprint)
    from ktwizard.deploy.records import Deployment
    from ktwizard.planner.types import Plan


@dataclass(frozen=True)
class Target:
    url: str
    name: str | None = None  # the deployment's name, when it was given by name
    record: Deployment | None = None
    plan: Plan | None = None  # the plan its launch kept beside the record
    container: str | None = None  # a container to watch (Docker deployments only)

    @property
    def key_file(self) -> str | None:
        return self.plan.goals.api_key_file if self.plan is not None else None

    def headers(self, key_file: str | None = None) -> dict[str, str]:
        """What a request to this server carries: the API key (of `key_file`, else the file its launch kept, else
        $KTWIZARD_API_KEY) and the Basic authorization remembered for its URL."""
        from ktwizard.apikey import auth_headers
        from ktwizard.urlauth import headers_for

        return headers_for(self.url, auth_headers(key_file or self.key_file))


def saved_plan(name: str) -> Plan | None:
    """The plan a launch kept beside the record, as a Plan (never a raw dict: a renamed field fails here, loudly)."""
    from ktwizard.deploy import records

    data = records.load_extra(name, "plan")
    if data is None:
        return None
    from ktwizard.planner.types import Plan

    return Plan.load(data, f"the plan kept for {name}")


def resolve(ref: str, with_plan: bool = True) -> Target:
    """NAME | URL → Target. A name without a record may still be a container ktwizard labelled (its URL from the
    port label); anything else is "no deployment"."""
    if "://" in ref:
        from ktwizard.urlauth import parse_url

        return Target(url=parse_url(ref, "URL").rstrip("/"))
    from ktwizard.deploy import records
    from ktwizard.render.names import check_name

    check_name(ref)
    rec = records.load(ref)
    if rec is not None:
        from ktwizard.urlauth import parse_url

        url = parse_url(rec.url, f"the record of {ref} has the URL")  # a record is a file anyone could edit
        plan = saved_plan(ref) if with_plan else None
        return Target(url, ref, rec, plan, ref if rec.kind == "docker" else None)
    from ktwizard.deploy.labels import label_port

    port = label_port(container_of(ref).labels)
    if port is None:
        raise BadInput(f"{ref}: its io.ktwizard.port label is missing or not a port; give its URL")
    return Target(f"http://127.0.0.1:{port}", ref, None, None, ref)


def container_of(name: str) -> Any:
    """The Docker container of deployment `name`: refused for a native one, "no deployment" when the engine has
    none of that name or cannot be reached while no record names it."""
    from ktwizard.deploy import records
    from ktwizard.deploy.engine import connect, find_managed

    rec = records.load(name)
    if rec is not None and rec.kind == "native":
        raise BadInput(f"{name} runs natively, not in a container (ktwizard stop {name}; ktwizard logs {name})")
    try:
        client = connect()
    except KtwizardError:
        if rec is None:
            raise records.no_deployment(name) from None
        raise
    try:
        return find_managed(client, name)
    except BadInput as exc:
        if rec is None and exc.message.startswith("no container"):
            raise records.no_deployment(name) from None
        raise


def log_file(name: str) -> Path | None:
    """The log of a native server of that name: its record's, or the one a failed native launch left behind."""
    from ktwizard import folders
    from ktwizard.deploy import records

    rec = records.load(name)
    if rec is not None:
        return Path(rec.log_path) if rec.kind == "native" and rec.log_path else None
    left = folders.logs() / f"{name}.log"
    return left if left.is_file() else None


def watch(found: Target, *, interval: float = 1.0, gpus: bool = True, record: str | None = None, predicted=None) -> Any:
    """The monitor of a target, one way for every front end (`ktwizard monitor NAME` and the wizard's Monitor):
    its container, or a native server's log file and process group, and the plan's peaks kept in its record (or
    `predicted` when given). A wizard that built its own watch showed a native server with an empty log pane."""
    from ktwizard.monitor.session import Watch

    peaks = predicted
    if peaks is None and found.record is not None and found.record.planned_peaks:
        peaks = dict(found.record.planned_peaks)
    return Watch(
        url=found.url,
        container=found.container,
        interval=interval,
        gpus=gpus,
        predicted=peaks,
        record=record,
        deployment=found.name,
        native=native_of(found.record),
    )


def native_of(rec: Deployment | None) -> tuple[str | None, int | None]:
    """(log file, process group) of a native deployment's record, else (None, None): the group only while it is
    the recorded process (a PID reused by another program is not watched)."""
    from ktwizard.deploy.procid import DEPLOYMENT_ENV, running_as_recorded

    if rec is None or rec.kind != "native":
        return None, None
    return rec.log_path, rec.pid if running_as_recorded(rec.pid, rec.pid_start, (DEPLOYMENT_ENV, rec.name)) else None
