"""Checks before anything is created: port free, weights present, the plan still fits."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

from ktwizard.errors import BadInput, KtwizardError
from ktwizard.planner.types import Plan


def check_port(bind: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((bind, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise KtwizardError(f"port {port} on {bind} is in use; choose another --port or stop what listens there") from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise BadInput(f"--bind {bind}: no such address on this machine") from None
            raise KtwizardError(f"cannot bind {bind}:{port} ({exc.strerror})") from None


def check_weights(plan: Plan) -> None:
    path = Path(plan.model_path)
    if not plan.goals.weights:
        raise BadInput("launch needs the checkpoint: pass --weights DIR (the folder with config.json and *.safetensors)")
    if not path.is_dir():
        raise BadInput(f"--weights {path}: no such folder")
    if not (path / "config.json").exists():
        raise BadInput(f"--weights {path}: no config.json there; is this the checkpoint folder (for Hugging Face caches, the snapshot folder)?")
    if not any(path.glob("*.safetensors")):
        raise BadInput(f"--weights {path}: no *.safetensors files; the download looks incomplete")
    kt = plan.flag("--kt-weight-path")
    if isinstance(kt, str) and kt != plan.model_path and not Path(kt).is_dir():
        raise BadInput(f"{plan.method} reads converted CPU weights from {kt}, which does not exist: convert them first or pass --kt-weights")
