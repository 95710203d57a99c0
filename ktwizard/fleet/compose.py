"""A fleet as one compose file: a service per replica, the router in front with the replicas as its workers."""

from __future__ import annotations

from ktwizard.apikey import IN_CONTAINER, ROUTER_LAUNCHER
from ktwizard.errors import BadInput
from ktwizard.fleet.constants import DEFAULT_ROUTER_IMAGE
from ktwizard.fleet.plan import FleetPlan
from ktwizard.fleet.router import ROUTER_MODULE, router_args
from ktwizard.inputs import url_host
from ktwizard.render.docker import compose_service, container_spec
from ktwizard.render.names import LABEL

FLEET_LABEL = f"{LABEL}.fleet"


def replica_name(fleet: FleetPlan, replica: str) -> str:
    return f"{fleet.name}-{replica}"


def _health(port: int) -> dict:
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=5)"
    return {
        "test": ["CMD", "python3", "-c", probe],
        "interval": "30s",
        "timeout": "10s",
        "retries": 3,
        # weights load for tens of minutes: unhealthy only after an hour of start-up
        "start_period": "3600s",
    }


def compose_fleet(
    fleet: FleetPlan, router_image: str = DEFAULT_ROUTER_IMAGE, image: str | None = None, monitoring: bool = False
) -> dict:
    if len(fleet.machines) > 1:
        raise BadInput(
            f"compose runs on one machine and this fleet spans {len(fleet.machines)}: use --format k8s, or plan "
            "each machine's replicas with its own --host"
        )
    services: dict[str, dict] = {}
    for r in fleet.replicas:
        c = container_spec(r.plan, name=replica_name(fleet, r.name), image=image, port=r.port)
        service = compose_service(c)
        service["labels"] = {**service["labels"], FLEET_LABEL: fleet.name}
        service["healthcheck"] = _health(r.port)
        services[r.name] = service
    workers = [f"http://{r.name}:{r.port}" for r in fleet.replicas]
    args = router_args(fleet, workers, "0.0.0.0")
    # Workers started with a key answer 401 to a router without one: the router calls them with --api-key
    # (sglang_router/router_args.py:826-830), which the launcher adds from the mounted file inside the process only
    key = next((r.plan.goals.api_key_file for r in fleet.replicas if r.plan.goals.api_key_file), None)
    services["router"] = {
        "image": router_image,
        "container_name": f"{fleet.name}-router",
        "command": ["python3", "-c", ROUTER_LAUNCHER, IN_CONTAINER, *args]
        if key
        else ["python3", "-m", ROUTER_MODULE, *args],
        **({"volumes": [{"type": "bind", "source": key, "target": IN_CONTAINER, "read_only": True}]} if key else {}),
        "ports": [
            f"{url_host(fleet.bind)}:{fleet.router_port}:{fleet.router_port}",
            f"127.0.0.1:{fleet.metrics_port}:{fleet.metrics_port}",
        ],
        "depends_on": {r.name: {"condition": "service_healthy"} for r in fleet.replicas},
        "labels": {f"{LABEL}.managed": "true", FLEET_LABEL: fleet.name, f"{LABEL}.role": "router"},
        "restart": "unless-stopped",
    }
    doc: dict = {"name": fleet.name.lower(), "services": services}
    if monitoring:
        from ktwizard.fleet.observability import add_monitoring

        add_monitoring(doc, fleet)
    return doc


def compose_fleet_text(
    fleet: FleetPlan, router_image: str = DEFAULT_ROUTER_IMAGE, image: str | None = None, monitoring: bool = False
) -> str:
    from ktwizard.render.quote import comment, compose_literal
    from ktwizard.serial import dump_yaml

    head = "# " + comment(
        f"ktwizard fleet {fleet.name}: {len(fleet.replicas)} replica(s) of {fleet.model.id} behind sglang-router "
        f"({fleet.policy}); clients use http://{fleet.bind}:{fleet.router_port}/v1"
    )
    return head + "\n" + dump_yaml(compose_literal(compose_fleet(fleet, router_image, image, monitoring)))
