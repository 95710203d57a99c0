"""The Docker engine, once: connecting with a reason when it cannot, and finding the containers ktwizard labelled."""

from __future__ import annotations

from typing import Any

from ktwizard.errors import BadInput, KtwizardError
from ktwizard.render.names import LABEL

MANAGED = f"{LABEL}.managed"


def connect() -> Any:
    import docker

    try:
        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        from ktwizard.host.engine import probe_engine
        from ktwizard.host.root import Root

        engine = probe_engine(Root("/"))
        raise KtwizardError(
            f"cannot reach the Docker engine: {engine.reason if not engine.reachable else exc}"
        ) from None


def find_managed(client: Any, name: str) -> Any:
    """The container `name`, only if ktwizard labelled it."""
    import docker

    try:
        c = client.containers.get(name)
    except docker.errors.NotFound:
        raise BadInput(f"no container named {name}") from None
    if c.labels.get(MANAGED) != "true":
        raise BadInput(f"{name} was not started by ktwizard; ktwizard only stops and follows its own containers")
    return c
