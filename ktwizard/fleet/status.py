"""A fleet's state now: the router (up, ready, its routing table) and each replica (container, own health)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ktwizard.deploy.launch import answers_health
from ktwizard.fleet.records import FleetRecord
from ktwizard.monitor.router import RouterSample, RouterSampler


@dataclass(frozen=True)
class ReplicaState:
    name: str
    url: str
    host: str
    healthy: bool  # answers /health itself
    routed: bool  # the router holds it healthy
    state: str  # the container's or process's state, or why it is unknown
    routed_ok: float = 0.0
    routed_failed: float = 0.0


@dataclass(frozen=True)
class FleetStatus:
    name: str
    router_url: str
    router_up: bool
    router_ready: bool
    replicas: tuple[ReplicaState, ...]
    requests: float | None = None
    error: str | None = None

    @property
    def healthy(self) -> bool:
        return self.router_ready and all(r.healthy and r.routed for r in self.replicas)


def engine_or_none() -> Any:
    """The Docker engine, or None when it cannot be asked (status still answers from HTTP alone)."""
    try:
        from ktwizard.deploy.engine import connect

        return connect()
    except Exception:  # noqa: BLE001 - no engine, no permission: the HTTP half still answers
        return None


def _states(names: list[str], client: Any) -> dict[str, str]:
    """Container states by name; empty without an engine."""
    if client is None:
        return {}
    out = {}
    for n in names:
        try:
            c = client.containers.get(n)
            s = c.attrs["State"]
            out[n] = "running" if s.get("Running") else f"exited ({s.get('ExitCode')})"
        except Exception:  # noqa: BLE001 - removed by hand, or the engine went away
            out[n] = "gone"
    return out


def fleet_status(rec: FleetRecord, router: RouterSample | None = None, client: Any = "connect") -> FleetStatus:
    """`client`: an engine a polling caller keeps (or None); by default one is connected for this call."""
    router = router or RouterSampler(rec.router.url, rec.router.metrics_url).sample()
    states = _states([r.name for r in rec.replicas], engine_or_none() if client == "connect" else client)
    reps = []
    for r in rec.replicas:
        view = router.worker(r.url)
        healthy = answers_health(r.url, timeout=3.0)
        reps.append(
            ReplicaState(
                name=r.name,
                url=r.url,
                host=r.host,
                healthy=healthy,
                routed=bool(view and view.healthy),
                state=states.get(r.name, "running" if healthy else "unknown"),
                routed_ok=view.routed_ok if view else 0.0,
                routed_failed=view.routed_failed if view else 0.0,
            )
        )
    return FleetStatus(
        name=rec.name,
        router_url=rec.router.url,
        router_up=router.up,
        router_ready=router.ready,
        replicas=tuple(reps),
        requests=router.requests,
        error=router.error,
    )


def status_text(st: FleetStatus) -> str:
    router = "ready" if st.router_ready else ("up, not ready" if st.router_up else f"DOWN ({st.error})")
    if st.router_up and st.error:  # it answers, but not with a routing table
        router += f" ({st.error})"
    lines = [
        f"fleet {st.name}: router {router} at {st.router_url}"
        + (f", {st.requests:.0f} requests routed" if st.requests is not None else "")
    ]
    lines.append(f"  {'replica':<34} {'state':<12} {'health':<8} {'router':<9} {'ok':>6} {'failed':>6}")
    for r in st.replicas:
        lines.append(
            f"  {r.name[:34]:<34} {r.state[:12]:<12} {'ok' if r.healthy else 'DOWN':<8} "
            f"{'routing' if r.routed else 'dropped':<9} {r.routed_ok:>6.0f} {r.routed_failed:>6.0f}"
        )
    return "\n".join(lines) + "\n"
