"""`--native`: python -m sglang.launch_server as a child in its own process group, logging to a file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from ktwizard.deploy.launch import LaunchOptions
from ktwizard.deploy.records import Deployment, state_dir
from ktwizard.planner.types import Plan
from ktwizard.render.args import argv


class NativeProcess:
    def __init__(self, plan: Plan, opts: LaunchOptions) -> None:
        from ktwizard.deploy.preflight import check_port, check_weights

        check_port(opts.bind, opts.port)
        check_weights(plan)
        self.plan, self.opts = plan, opts
        logs = state_dir().parent / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{opts.name}.log"
        env = {**os.environ, **{e.name: e.value for e in plan.env}, **opts.env}
        args = argv(plan, {"--port": str(opts.port), "--host": opts.bind})
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - the child writes it for its whole life
        self.proc = subprocess.Popen(
            [opts.python, "-m", "sglang.launch_server", *args],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.reader = open(self.log_path, "rb")  # noqa: SIM115
        self.buf = b""

    def new_lines(self) -> list[str]:
        self.buf += self.reader.read()
        *done, self.buf = self.buf.replace(b"\r", b"\n").split(b"\n")
        return [d.decode("utf-8", "replace") for d in done]

    def status(self) -> tuple[bool, int | None, bool]:
        code = self.proc.poll()
        if code is None:
            return True, None, False
        time.sleep(0.1)
        return False, (128 - code if code < 0 else code), False

    def remove(self) -> None:
        stop_group(self.proc.pid)
        self.log.close()

    def deployment(self) -> Deployment:
        host = "127.0.0.1" if self.opts.bind in ("0.0.0.0", "::") else self.opts.bind
        return Deployment(
            name=self.opts.name,
            kind="native",
            url=f"http://{host}:{self.opts.port}",
            plan_digest=self.plan.digest,
            model=self.plan.model.id,
            pid=self.proc.pid,
            log_path=str(self.log_path),
        )


def stop_group(pid: int, grace: float = 20.0) -> None:
    """SIGTERM the server's process group, then SIGKILL what is left after the grace period."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
