from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
HOSTS = TESTS / "fixtures" / "hosts"
SHARED = REPO.parent / "shared"


@pytest.fixture(params=sorted(p.name for p in HOSTS.iterdir() if p.is_dir()))
def host_dir(request) -> Path:
    return HOSTS / request.param


def run_cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `python -m ktwizard` as a user would, with its real exit code and output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "ktwizard", *args], capture_output=True, text=True, env=full_env, timeout=timeout)
