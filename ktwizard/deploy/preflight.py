"""Checks before anything is created: port free (host.ports), weights present."""

from __future__ import annotations

from pathlib import Path

from ktwizard.errors import BadInput
from ktwizard.host.ports import check_port
from ktwizard.planner.types import Plan

__all__ = ["check_port", "check_weights"]


def check_weights(plan: Plan) -> None:
    path = Path(plan.model_path)
    if not plan.goals.weights:
        raise BadInput(
            "launch needs the checkpoint: pass --weights DIR (the folder with config.json and *.safetensors)"
        )
    if not path.is_dir():
        raise BadInput(f"--weights {path}: no such folder")
    from ktwizard.models.completeness import incomplete_reason

    unfinished = incomplete_reason(path)
    if unfinished is not None:
        raise BadInput(f"--weights {path}: {unfinished}")
    if not (path / "config.json").exists():
        raise BadInput(
            f"--weights {path}: no config.json there; is this the checkpoint folder (for Hugging Face caches, the "
            "snapshot folder)?"
        )
    if not any(path.glob("*.safetensors")):
        raise BadInput(f"--weights {path}: no *.safetensors files; the download looks incomplete")
    kt = plan.flag("--kt-weight-path")
    if isinstance(kt, str) and kt != plan.model_path and not Path(kt).is_dir():
        raise BadInput(
            f"{plan.method} reads converted CPU weights from {kt}, which does not exist: convert them first or pass "
            "--kt-weights"
        )
