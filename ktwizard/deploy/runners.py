"""Launch options with their defaults and checks, and the runner they choose: one path for the CLI and the wizard."""

from __future__ import annotations

import re
import sys
from typing import TextIO

from ktwizard.deploy.launch import LaunchOptions, ServerProcess
from ktwizard.errors import BadInput
from ktwizard.planner.types import Plan
from ktwizard.render.docker import container_name
from ktwizard.render.names import check_name

# Docker's reference grammar, kept to what tags and digests use: registry[:port]/path:tag@sha256:...
IMAGE = re.compile(
    r"[a-z0-9][a-z0-9._/-]{0,200}(:[0-9]{1,5}/[a-z0-9._/-]+)?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(@sha256:[0-9a-f]{64})?"
)
MEMORY = re.compile(r"[0-9]{1,15}[bkmgBKMG]?")


def launch_options(
    plan: Plan, name: str | None = None, port: int | None = None, bind: str | None = None, **rest: object
) -> LaunchOptions:
    """LaunchOptions with the plan's defaults (name, port, address) and every value checked."""
    port = port or plan.goals.port
    if not 1 <= port <= 65535:
        raise BadInput(f"--port {port}: not a TCP port (1-65535)")
    image = rest.get("image")
    if isinstance(image, str) and not IMAGE.fullmatch(image):
        raise BadInput(f"--image {image!r}: not an image reference such as sglang-kt:local or registry/name:tag")
    memory = rest.get("memory")
    if isinstance(memory, str) and not MEMORY.fullmatch(memory):
        raise BadInput(f"--memory {memory!r}: give a size such as 700g, 512m or 1073741824")
    return LaunchOptions(name=check_name(name or container_name(plan)), port=port, bind=bind or plan.goals.bind, **rest)  # type: ignore[arg-type]


def start(plan: Plan, opts: LaunchOptions, out: TextIO = sys.stderr) -> ServerProcess:
    """Start the server the way `opts` asks (a container through the Docker SDK, or a native process group)."""
    if opts.native:
        from ktwizard.deploy.native_proc import NativeProcess

        return NativeProcess(plan, opts)
    from ktwizard.deploy.docker_proc import start_container

    return start_container(plan, opts, out=out)
