"""`docker run` and compose renderings: the recipe's container options, ports on 127.0.0.1 unless asked otherwise."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ktwizard.inputs import url_host
from ktwizard.planner.types import Plan
from ktwizard.render.args import container_argv, container_paths, flag_groups
from ktwizard.render.names import LABEL, check_name
from ktwizard.runtime.release import RECORDER_DIR

DEFAULT_IMAGE = "sglang-kt:local"


def container_name(plan: Plan) -> str:
    """The deployment's name, the same in every rendering and at launch: the one asked for, else ktwizard-<model>."""
    if plan.goals.name:
        return plan.goals.name
    return "ktwizard-" + (re.sub(r"[^a-zA-Z0-9_.-]+", "-", plan.model.id).strip("-.") or "model")[:53]


@dataclass(frozen=True)
class ContainerSpec:
    """Everything the engine is asked for; rendered as `docker run`, compose, or given to the Docker SDK."""

    name: str
    image: str
    command: tuple[str, ...]
    env: dict[str, str]
    mounts: tuple[tuple[str, str], ...]  # (host path, container path), read-only
    port: int
    bind: str
    gpus: tuple[int, ...] | None  # None: no GPUs requested
    labels: dict[str, str]
    shm_size: str | None = None
    writable: tuple[tuple[str, str], ...] = ()  # (host, inside) mounted read-write: the routing recorder's folder


ROUTING_DIR = "/routing"  # inside the container: SGLang's expert-distribution recorder writes here


def container_spec(
    plan: Plan,
    name: str | None = None,
    image: str | None = None,
    gpus: tuple[int, ...] | None | str = "plan",
    bind: str | None = None,
    port: int | None = None,
    python: str = "python3",
) -> ContainerSpec:
    from ktwizard.apikey import IN_CONTAINER, server_command

    port = port or plan.goals.port
    key = plan.goals.api_key_file
    mounts = tuple((host, inside) for host, inside in container_paths(plan).items())
    mounts += ((key, IN_CONTAINER),) if key else ()
    env = {e.name: e.value for e in plan.env}
    writable: tuple[tuple[str, str], ...] = ()
    if plan.goals.record_routing:  # the recorder writes its dumps where ktwizard placement record fetches them
        writable = ((plan.goals.record_routing, ROUTING_DIR),)
        env[RECORDER_DIR] = ROUTING_DIR
    return ContainerSpec(
        name=check_name(name or container_name(plan)),
        image=image or plan.image or DEFAULT_IMAGE,
        command=tuple(server_command(python, container_argv(plan, port), IN_CONTAINER if key else None)),
        env=env,
        mounts=mounts,
        writable=writable,
        port=port,
        bind=bind or plan.goals.bind,
        gpus=plan.gpus if gpus == "plan" else gpus,  # type: ignore[arg-type]
        labels={
            f"{LABEL}.managed": "true",
            f"{LABEL}.plan": plan.digest,
            f"{LABEL}.model": plan.model.id,
            f"{LABEL}.port": str(port),
        },
    )


def docker_text(plan: Plan) -> str:
    c = container_spec(plan)
    q = shlex.quote
    parts = ["docker run --rm", f"--name {q(c.name)}", "--ipc=host", "--cap-add=SYS_NICE", "--ulimit memlock=-1"]
    if c.gpus is not None:
        parts += ["--runtime=nvidia", "--gpus " + q(f'"device={",".join(map(str, c.gpus))}"')]
    parts += [f"-v {q(f'{h}:{i}:ro')}" for h, i in c.mounts]
    parts += [f"-v {q(f'{h}:{i}:rw')}" for h, i in c.writable]
    parts += [f"-e {q(f'{k}={v}')}" for k, v in c.env.items()]
    parts += [f"-p {q(f'{url_host(c.bind)}:{c.port}:{c.port}')}"]
    parts += [f"--label {q(f'{k}={v}')}" for k, v in c.labels.items()]
    parts.append(q(c.image))
    head = 4 if c.command[1] == "-c" else 3  # python -c LAUNCHER KEYFILE, or python -m sglang.launch_server
    parts.append(" ".join(q(x) for x in c.command[:head]))
    parts += [" ".join(q(x) for x in group) for group in flag_groups(list(c.command[head:]))]
    return " \\\n  ".join(parts) + "\n"


def compose_service(c: ContainerSpec) -> dict:
    """One compose service for a container spec: the same options as `docker run` and the SDK launch."""
    service: dict = {
        "image": c.image,
        "container_name": c.name,
        "command": list(c.command),
        "environment": c.env,
        "ipc": "host",
        "cap_add": ["SYS_NICE"],
        "ulimits": {"memlock": -1},
        "ports": [f"{url_host(c.bind)}:{c.port}:{c.port}"],
        "volumes": [{"type": "bind", "source": h, "target": i, "read_only": True} for h, i in c.mounts]
        + [{"type": "bind", "source": h, "target": i} for h, i in c.writable],
        "labels": c.labels,
        "restart": "no",
    }
    if c.gpus is not None:
        service["deploy"] = {
            "resources": {
                "reservations": {
                    "devices": [{"driver": "nvidia", "device_ids": [str(g) for g in c.gpus], "capabilities": ["gpu"]}]
                }
            }
        }
    return service


def compose_text(plan: Plan) -> str:
    from ktwizard.render.quote import compose_literal
    from ktwizard.serial import dump_yaml

    return dump_yaml(compose_literal({"services": {"sglang": compose_service(container_spec(plan))}}))
