"""Docker engine: reachable or why not, version, runtimes (is `nvidia` there?), CDI GPU devices.

The probe talks to the socket with the standard library's http.client rather than the docker SDK or httpx:
both cost over 0.2 s to import, and `ktwizard probe` has 0.5 s in all (docs/architecture.md budgets).
Launching uses the SDK.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from typing import Any

from ktwizard.host.profile import Engine
from ktwizard.host.root import Root

DEFAULT_SOCKET = "/var/run/docker.sock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


def socket_path(env: dict[str, str] | None = None) -> str | None:
    """The engine's unix socket from DOCKER_HOST, or the default; None for a TCP DOCKER_HOST."""
    host = (env if env is not None else os.environ).get("DOCKER_HOST", "")
    if not host:
        return DEFAULT_SOCKET
    if host.startswith("unix://"):
        return host[len("unix://") :]
    return None


def _get(path: str, url: str, timeout: float) -> Any:
    conn = _UnixConnection(path, timeout)
    try:
        conn.request("GET", url)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
        return json.loads(body)
    finally:
        conn.close()


def engine_from_info(version: dict[str, Any], info: dict[str, Any]) -> Engine:
    cdi = tuple(d.get("ID", "") for d in info.get("DiscoveredDevices") or [] if d.get("Source") == "cdi")
    return Engine(
        reachable=True,
        server_version=version.get("Version"),
        runtimes=tuple(sorted((info.get("Runtimes") or {}).keys())),
        default_runtime=info.get("DefaultRuntime"),
        cdi_devices=cdi,
    )


def probe_engine(root: Root, timeout: float = 1.0) -> Engine:
    if not root.live:
        recorded = root.read("docker-info.json")
        if recorded is None:
            return Engine(reachable=False, reason="not probed: recorded host without docker-info.json")
        data = json.loads(recorded)
        return engine_from_info(data.get("version", {}), data.get("info", {}))
    path = socket_path()
    if path is None:
        return Engine(
            reachable=False, reason=f"DOCKER_HOST={os.environ.get('DOCKER_HOST')} is not a unix socket; not probed"
        )
    try:
        os.stat(path)
    except FileNotFoundError:
        return Engine(
            reachable=False, reason=f"no Docker socket at {path}: Docker is not installed or dockerd is not running"
        )
    except PermissionError:
        pass  # the folder is closed to us: the connect below says so
    try:
        return engine_from_info(_get(path, "/version", timeout), _get(path, "/info", timeout))
    except PermissionError:
        return Engine(
            reachable=False,
            reason=f"permission denied on {path}: add your user to the 'docker' group (then log in again) or run as "
            "root",
        )
    except (ConnectionRefusedError, FileNotFoundError):
        return Engine(reachable=False, reason=f"dockerd is not answering on {path}: start it (systemctl start docker)")
    except (OSError, RuntimeError, ValueError) as exc:
        return Engine(reachable=False, reason=f"the Docker engine at {path} did not answer properly ({exc})")
