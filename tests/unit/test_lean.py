"""What the terminal dashboard leaves unloaded (cli/lean.py): the Docker SDK still works without it, says nothing
about it, and what a target needs (TLS for https, paramiko for an ssh engine) stays loadable."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import sys
from ktwizard.cli.lean import leave_unloaded
leave_unloaded(sys.argv[1])
import docker, requests, hashlib
assert hashlib.sha256(b"x").hexdigest().startswith("2d711642")  # Python's own sha256, not OpenSSL's
print(sorted(m for m in ("ssl", "_hashlib", "charset_normalizer", "paramiko") if sys.modules.get(m) is not None))
try:
    import ssl
    print("ssl loadable")
except ImportError:
    print("ssl absent")
"""


def probe(url: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"} | env
    return subprocess.run([sys.executable, "-c", PROBE, url], capture_output=True, text=True, env=environ, timeout=60)


def test_a_plain_http_dashboard_loads_the_docker_sdk_without_openssl_or_charset_guessing_and_without_a_warning():
    out = probe("http://127.0.0.1:30000")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # requests' "no charset detector" warning is expected here and silenced
    assert out.stdout.splitlines() == ["[]", "ssl absent"]


def test_an_https_target_keeps_tls():
    out = probe("https://example.invalid")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "ssl loadable"


def test_an_engine_over_ssh_keeps_paramiko_loadable():
    code = "import sys; from ktwizard.cli import lean; lean.leave_unloaded(None); print('paramiko' in sys.modules)"
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    ssh = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={**os.environ, "DOCKER_HOST": "ssh://user@engine"},
    )  # fmt: skip
    assert here.stdout.strip() == "True" and ssh.stdout.strip() == "False"
