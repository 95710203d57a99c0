"""fleet launch and stop on this machine's engine: replicas as labelled containers, then the router in front.

Any failure removes everything the launch started; `stop` removes everything the fleet started and nothing else.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO

from ktwizard.deploy.launch import ServerProcess, clean_up
from ktwizard.deploy.records import Deployment
from ktwizard.errors import BadInput, KtwizardError
from ktwizard.fleet import records
from ktwizard.fleet.compose import FLEET_LABEL, replica_name
from ktwizard.fleet.constants import DEFAULT_ROUTER_IMAGE
from ktwizard.fleet.plan import FleetPlan
from ktwizard.fleet.records import FleetRecord, ReplicaRecord
from ktwizard.fleet.routers import DockerRouter, NativeRouter, RouterProcess, wait_ready


@dataclass(frozen=True)
class FleetOptions:
    image: str | None = None
    gpus: str | None = "plan"  # "plan": each replica's planned GPUs; None: request none
    router: str = "native"  # native | docker
    router_image: str = DEFAULT_ROUTER_IMAGE
    bind: str = "127.0.0.1"  # where the router listens; the replicas stay on loopback
    detach: bool = False
    yes: bool = False
    timeout_s: float = 3600.0
    python: str = "python3"
    memory: str | None = None
    env: tuple[tuple[str, str], ...] = ()


class Started:
    """What a launch has started so far, removed in reverse order when anything fails."""

    def __init__(self) -> None:
        self.replicas: list[tuple[ServerProcess, Deployment]] = []
        self.router: RouterProcess | None = None

    def remove_all(self) -> str:
        left = []
        if self.router is not None:
            try:
                self.router.remove()
            except Exception as exc:  # noqa: BLE001 - say what is left, never stop half-way
                left.append(f"the router ({exc.__class__.__name__})")
        for proc, dep in reversed(self.replicas):
            said = clean_up(proc, dep)
            if "could not" in said:
                left.append(dep.name)
        gone = len(self.replicas) + (self.router is not None) - len(left)
        return f"removed {gone} started part(s)" + (f"; left: {', '.join(left)}" if left else "")


def launch_fleet(fleet: FleetPlan, opts: FleetOptions, out: TextIO = sys.stderr) -> FleetRecord:
    from ktwizard.deploy.launch import follow_startup
    from ktwizard.deploy.runners import launch_options, start

    if not fleet.fits:
        from ktwizard.errors import EXIT_NO_FIT

        raise KtwizardError("the fleet plan does not fit: " + "; ".join(fleet.overflows), EXIT_NO_FIT)
    from ktwizard.host.ports import check_port

    check_port(opts.bind, fleet.router_port)
    check_port("127.0.0.1", fleet.metrics_port)
    started = Started()
    try:
        procs = []
        for r in fleet.replicas:  # all start loading at once; followed one by one below
            ro = launch_options(
                r.plan,
                name=replica_name(fleet, r.name),
                port=r.port,
                bind="127.0.0.1",
                image=opts.image,
                gpus=opts.gpus,
                detach=True,
                yes=opts.yes,
                timeout_s=opts.timeout_s,
                python=opts.python,
                memory=opts.memory,
                env=dict(opts.env),
                labels={FLEET_LABEL: fleet.name},
            )
            proc = start(r.plan, ro, out=out)
            started.replicas.append((proc, proc.deployment()))
            procs.append((r, ro, proc))
        for r, ro, proc in procs:
            print(f"{r.name} ({r.plan.host}, port {r.port}):", file=out, flush=True)
            follow_startup(proc, r.plan, ro, out=out)
        workers = [dep.url for _, dep in started.replicas]
        if opts.router == "docker":
            from ktwizard.deploy.engine import connect

            started.router = DockerRouter(fleet, workers, opts.bind, opts.router_image, connect())
        else:
            from ktwizard import folders

            started.router = NativeRouter(fleet, workers, opts.bind, folders.logs())
        rec = FleetRecord(
            name=fleet.name,
            model=fleet.model.id,
            policy=fleet.policy,
            router=started.router.record(),
            replicas=tuple(
                ReplicaRecord(dep.name, dep.url, r.plan.host)
                for r, (_, dep) in zip(fleet.replicas, started.replicas, strict=True)
            ),
        )
        wait_ready(started.router, rec.router.url, len(workers))
        records.save(rec)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {started.remove_all()}", file=out)
        raise
    except BaseException as exc:
        if not started.replicas:  # nothing was created: the error as it is
            raise
        said = started.remove_all()
        message = exc.message if isinstance(exc, KtwizardError) else f"{exc.__class__.__name__}: {exc}"
        code = exc.exit_code if isinstance(exc, KtwizardError) else 1
        raise KtwizardError(f"{message}; {said}", code) from None
    print(
        f"fleet {fleet.name}: {len(workers)} replica(s) behind sglang-router ({fleet.policy}) at {rec.router.url}/v1; "
        f"router metrics {rec.router.metrics_url}/metrics; ktwizard monitor --fleet {fleet.name}; "
        f"ktwizard fleet stop {fleet.name}",
        file=out,
    )
    return rec


def stop_fleet(name: str, out: TextIO = sys.stderr) -> list[str]:
    """Remove the router, every replica and the record; also any container labelled with this fleet."""
    from ktwizard.deploy.native_proc import stop_labelled, stop_owned
    from ktwizard.deploy.procid import FLEET_ENV

    try:
        rec, corrupt = records.load(name), False
    except BadInput:  # the labels are the truth, the record a cache: an unreadable one still stops everything
        rec, corrupt = None, True
    removed: list[str] = []
    notes: list[str] = []
    label = (FLEET_ENV, name)
    if rec is not None and rec.router.kind == "native":
        why = stop_owned(rec.router.pid, rec.router.pid_start, label, grace=10.0)
        if why is None:
            removed.append("router (process)")
        elif why != "already gone":
            notes.append(f"router process not signalled: {why}")
    elif rec is None and stop_labelled(label, grace=10.0):
        removed.append("router (process, found by its label)")
    from ktwizard.deploy import records as deployments
    from ktwizard.deploy.engine import connect

    for c in connect().containers.list(all=True, filters={"label": [f"{FLEET_LABEL}={name}"]}):
        c.remove(force=True)
        removed.append(c.name)
        deployments.forget(c.name)
    for r in rec.replicas if rec else ():
        deployments.forget(r.name)
    if rec is None and not removed and not corrupt:
        raise BadInput(f"no fleet named {name} (ktwizard fleet status lists what a record names)")
    records.forget(name)
    said = f"stopped fleet {name}: removed {', '.join(removed) or 'its record'}"
    if corrupt:
        said += " (its record was unreadable: found by label, record cleared)"
    print("; ".join([said, *notes]), file=out)
    return removed


def serve_attached(rec: FleetRecord, out: TextIO = sys.stdout, poll_s: float = 1.0) -> None:
    """Without --detach: report replicas that go down or come back until Ctrl-C, then stop the fleet."""
    from ktwizard.fleet.status import engine_or_none, fleet_status

    last: dict[str, bool] = {}
    client = engine_or_none()  # one connection for the whole watch, not one per poll
    try:
        while True:
            st = fleet_status(rec, client=client)
            for w in st.replicas:
                if last.get(w.name, True) != w.healthy:
                    print(f"{w.name}: {'healthy again' if w.healthy else 'DOWN: ' + w.state}", file=out, flush=True)
                last[w.name] = w.healthy
            if not st.router_up:
                stop_fleet(rec.name)
                raise KtwizardError(f"the router of {rec.name} exited; stopped the fleet")
            time.sleep(poll_s)
    except KeyboardInterrupt:
        stop_fleet(rec.name)
