"""The real sglang-router, run for a fleet: a local process (`native`) or a container from a local image (`docker`)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from ktwizard.deploy.procid import FLEET_ENV, start_ticks
from ktwizard.errors import KtwizardError
from ktwizard.fleet.compose import FLEET_LABEL
from ktwizard.fleet.plan import FleetPlan
from ktwizard.fleet.records import RouterRecord
from ktwizard.fleet.router import ROUTER_MODULE, router_args
from ktwizard.render.clients import server_url
from ktwizard.render.names import LABEL

READY_TIMEOUT_S = 120.0


class RouterProcess(Protocol):
    def running(self) -> bool: ...
    def log_tail(self) -> str: ...
    def remove(self) -> None: ...
    def record(self) -> RouterRecord: ...


def _urls(fleet: FleetPlan, bind: str) -> tuple[str, str]:
    return server_url(bind, fleet.router_port), server_url(bind, fleet.metrics_port)


class NativeRouter:
    def __init__(self, fleet: FleetPlan, workers: list[str], bind: str, log_dir: Path) -> None:
        if importlib.util.find_spec("sglang_router") is None:
            raise KtwizardError(
                "--router native runs the sglang-router package, which is not installed here: pip install "
                "'ktwizard[fleet]' (or sglang-router), or use --router docker with a router image"
            )
        self.fleet, self.bind = fleet, bind
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{fleet.name}-router.log"
        with open(self.log_path, "wb") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", ROUTER_MODULE, *router_args(fleet, workers, bind)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stop takes the whole router down
                env={**os.environ, FLEET_ENV: fleet.name},  # its label: found again if the record is lost
            )

    def running(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self) -> str:
        try:
            return _last_line(self.log_path.read_bytes()[-4000:].decode("utf-8", "replace"))
        except OSError:
            return ""

    def remove(self) -> None:
        from ktwizard.deploy.native_proc import stop_group

        stop_group(self.proc.pid, grace=10.0)

    def record(self) -> RouterRecord:
        url, metrics = _urls(self.fleet, self.bind)
        return RouterRecord(
            "native", url, metrics, pid=self.proc.pid, log_path=str(self.log_path), pid_start=start_ticks(self.proc.pid)
        )


class DockerRouter:
    def __init__(self, fleet: FleetPlan, workers: list[str], bind: str, image: str, client: Any) -> None:
        import docker

        self.fleet, self.bind, self.name = fleet, bind, f"{fleet.name}-router"
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            raise KtwizardError(
                f"router image {image} is not on this machine: build one with sglang-router installed "
                "(a Python image plus `pip install sglang-router`) or use --router native"
            ) from None
        from ktwizard.deploy.docker_proc import check_name

        check_name(client, self.name, replace=False)
        self.container = None
        try:
            self.container = client.containers.create(
                image,
                command=["python3", "-m", ROUTER_MODULE, *router_args(fleet, workers, bind)],
                name=self.name,
                # host networking: the replicas publish on this machine's loopback, where the router reaches them
                network_mode="host",
                labels={f"{LABEL}.managed": "true", FLEET_LABEL: fleet.name, f"{LABEL}.role": "router"},
                restart_policy={"Name": "no"},
                detach=True,
            )
            self.container.start()
        except BaseException as exc:
            self.remove()
            if isinstance(exc, docker.errors.APIError):
                raise KtwizardError(
                    f"the Docker engine refused the router container: {exc.explanation or exc}"
                ) from None
            raise

    def running(self) -> bool:
        import docker

        try:
            self.container.reload()  # type: ignore[union-attr]
            return bool(self.container.attrs["State"].get("Running"))  # type: ignore[union-attr]
        except docker.errors.DockerException:
            return False

    def log_tail(self) -> str:
        try:
            return _last_line(self.container.logs(tail=20).decode("utf-8", "replace"))  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - the container may be gone already
            return ""

    def remove(self) -> None:
        import docker

        if self.container is not None:
            with contextlib.suppress(docker.errors.DockerException):
                self.container.remove(force=True)

    def record(self) -> RouterRecord:
        url, metrics = _urls(self.fleet, self.bind)
        return RouterRecord("docker", url, metrics, container=self.name)


def _last_line(text: str) -> str:
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", x).strip() for x in text.splitlines() if x.strip()]
    return lines[-1][:300] if lines else ""


def wait_ready(router: RouterProcess, url: str, workers: int, timeout: float = READY_TIMEOUT_S) -> None:
    """Until the router is ready with every worker healthy; a reason when it exits or never gets there."""
    import httpx

    from ktwizard import httpcap

    deadline = time.monotonic() + timeout
    seen = "no answer"
    while time.monotonic() < deadline:
        if not router.running():
            raise KtwizardError(f"sglang-router exited while starting: {router.log_tail() or 'no log'}")
        try:  # each answer within 3 s in all, headers included, and nesting without end is not an answer
            status, body = httpcap.get(f"{url}/workers", 3.0)
            listed = httpcap.parse_json(body, "/workers").get("workers", []) if status == 200 else []
            healthy = sum(1 for w in listed if isinstance(w, dict) and w.get("is_healthy"))
            seen = f"{healthy} of {workers} workers healthy"
            if healthy >= workers and httpcap.get(f"{url}/readiness", 3.0)[0] == 200:
                return
        except (httpx.HTTPError, httpcap.CapExceeded, ValueError, AttributeError, TypeError):
            pass
        time.sleep(0.3)
    raise KtwizardError(f"sglang-router was not ready after {timeout:.0f}s ({seen}): {router.log_tail() or 'no log'}")
