"""Every folder ktwizard writes to, in one place (README: "Where ktwizard writes"). XDG variables are respected, so
tests and users can move them; nothing else in the package builds these paths."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, *default: str) -> Path:
    return Path(os.environ.get(var) or os.path.join(os.path.expanduser("~"), *default)) / "ktwizard"


def state() -> Path:
    """Records of what runs (deployments, fleets) and the native servers' logs."""
    return _xdg("XDG_STATE_HOME", ".local", "state")


def deployments() -> Path:
    return state() / "deployments"


def fleets() -> Path:
    return state() / "fleets"


def logs() -> Path:
    return state() / "logs"


def data() -> Path:
    """What measurements leave behind: bench calibrations, routing recordings."""
    return _xdg("XDG_DATA_HOME", ".local", "share")


def calibration() -> Path:
    return data() / "calibration"


def placement() -> Path:
    return data() / "placement"


def config() -> Path:
    """What a person sets: config.yaml and saved profiles."""
    return _xdg("XDG_CONFIG_HOME", ".config")


def cache() -> Path:
    """What ktwizard rebuilds whenever it is missing: the bundled catalogue as read and built (ktwizard/kept.py)."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def models() -> Path:
    """Where `ktwizard download` puts a checkpoint when no --dir is given: one folder per repository."""
    return data() / "models"
