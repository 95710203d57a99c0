"""Deployment names and ktwizard's label: the rule every record, container and log file name obeys.

Apart from render/docker.py so that reading a record (the dashboard, ps, stop) does not load the planner."""

from __future__ import annotations

import re

from ktwizard.errors import BadInput

LABEL = "io.ktwizard"
# Docker's own rule for container names, kept short; also safe as a file name for native records and logs.
NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}")


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise BadInput(f"--name {name!r}: use 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit")
    return name
