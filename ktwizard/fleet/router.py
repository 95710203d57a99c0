"""The sglang-router command line for a fleet: static worker URLs (Docker, compose) or Kubernetes discovery."""

from __future__ import annotations

from ktwizard.fleet.plan import FleetPlan

ROUTER_MODULE = "sglang_router.launch_router"
# The router's own default waits 600 s for workers; KT replicas are already ready when it starts.
WORKER_STARTUP_TIMEOUT_S = 120
# Its defaults (a check every 60 s, out after 3 failures) keep sending to a dead replica for three minutes; a KT
# replica's /health is cheap, so check every 5 s and drop it after 2 failures.
HEALTH = ["--health-check-interval-secs", "5", "--health-failure-threshold", "2"]


def router_args(fleet: FleetPlan, workers: list[str], host: str, port: int | None = None) -> list[str]:
    """launch_router's flags with a fixed worker list."""
    return [
        "--host",
        host,
        "--port",
        str(port or fleet.router_port),
        "--worker-urls",
        *workers,
        "--policy",
        fleet.policy,
        "--prometheus-host",
        host,
        "--prometheus-port",
        str(fleet.metrics_port),
        "--worker-startup-timeout-secs",
        str(WORKER_STARTUP_TIMEOUT_S),
        *HEALTH,
        "--log-level",
        "info",
    ]


def discovery_args(fleet: FleetPlan, selector: dict[str, str], worker_port: int) -> list[str]:
    """launch_router's flags in Kubernetes: workers found by pod label in the router's own namespace."""
    return [
        "--host",
        "0.0.0.0",
        "--port",
        str(fleet.router_port),
        "--policy",
        fleet.policy,
        "--service-discovery",
        "--selector",
        *(f"{k}={v}" for k, v in selector.items()),
        "--service-discovery-port",
        str(worker_port),
        "--service-discovery-namespace",
        "$(POD_NAMESPACE)",
        "--prometheus-host",
        "0.0.0.0",
        "--prometheus-port",
        str(fleet.metrics_port),
        *HEALTH,
    ]
