"""A fleet's live view: the router's routing table and counters, and each replica's own server and container."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ktwizard.monitor.router import RouterSample, RouterSampler
from ktwizard.monitor.samples import Alert, Sample


@dataclass(frozen=True)
class ReplicaSample:
    name: str
    url: str
    host: str
    routed: bool  # the router holds it healthy
    routed_ok: float
    routed_failed: float
    sample: Sample  # its own /metrics and container

    @property
    def down(self) -> bool:
        srv, box = self.sample.server, self.sample.container
        return (srv is not None and not srv.up) or (box is not None and box.ended)


@dataclass(frozen=True)
class FleetSample:
    t: float
    name: str
    router_url: str
    router: RouterSample
    replicas: tuple[ReplicaSample, ...]
    machine: Sample  # this machine's GPUs and host memory, once for all replicas
    alerts: tuple[Alert, ...] = ()

    @property
    def degraded(self) -> bool:
        return not self.router.ready or any(r.down or not r.routed for r in self.replicas)


class FleetMonitor:
    def __init__(self, record, gpus: bool = True) -> None:
        from ktwizard.monitor.session import Monitor

        self.record = record
        self.router = RouterSampler(record.router.url, record.router.metrics_url)
        self.replicas = [(r, Monitor(url=r.url, container=r.name, gpus=False)) for r in record.replicas]
        self.machine = Monitor(gpus=gpus)

    def sample(self) -> FleetSample:
        from ktwizard.textsafe import scrubbed

        router = scrubbed(self.router.sample())  # the router's JSON names workers and errors: shown as text
        reps = []
        alerts = []
        if not router.up:
            alerts.append(Alert("error", f"the router is down: {router.error}"))
        elif not router.ready:
            alerts.append(Alert("error", "the router has no healthy worker"))
        for rec, mon in self.replicas:
            s = mon.sample(frozenset({"container", "server"}))
            view = router.worker(rec.url)
            rep = ReplicaSample(
                rec.name,
                rec.url,
                rec.host,
                bool(view and view.healthy),
                view.routed_ok if view else 0.0,
                view.routed_failed if view else 0.0,
                s,
            )
            if rep.down:
                state = s.container.state if s.container is not None and s.container.state != "running" else "down"
                alerts.append(
                    Alert(
                        "error",
                        f"replica {rec.name} is {state}"
                        + ("; the router still routes to it" if rep.routed else "; the router dropped it"),
                    )
                )
            elif router.up and not rep.routed:
                alerts.append(Alert("warn", f"replica {rec.name} answers but the router does not route to it"))
            reps.append(rep)
        machine = self.machine.sample(frozenset({"gpu", "host"}))
        return FleetSample(
            time.time(), self.record.name, self.record.router.url, router, tuple(reps), machine, tuple(alerts)
        )


def fleet_text(s: FleetSample) -> str:
    r = s.router
    state = "ready" if r.ready else ("up, no healthy worker" if r.up else f"DOWN ({r.error})")
    out = [
        f"fleet {s.name}: router {state} at {s.router_url}"
        + (f", {r.requests:.0f} requests routed" if r.requests is not None else "")
    ]
    from ktwizard.monitor.view import server_words

    for rep in s.replicas:
        srv = rep.sample.server
        said = ""
        if srv is not None and srv.up:
            w = server_words(srv)
            said = f"decode {w.decode}, running {w.running}, KV {w.kv}, "
        out.append(
            f"  {rep.name}: {'DOWN' if rep.down else 'up'}, {'routed' if rep.routed else 'not routed'}, {said}"
            f"routed ok {rep.routed_ok:.0f} / failed {rep.routed_failed:.0f}"
        )
    out += [f"[{a.severity}] {a.text}" for a in s.alerts]
    return "\n".join(out) + "\n"
