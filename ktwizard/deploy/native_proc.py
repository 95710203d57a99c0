"""`--native`: python -m sglang.launch_server as a child in its own process group, logging to a file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ktwizard.deploy import patches, pyprobe
from ktwizard.deploy.launch import LaunchOptions
from ktwizard.deploy.logread import BLOCK, LINE_CAP
from ktwizard.deploy.procid import DEPLOYMENT_ENV, group_running, labelled, start_ticks, still_ours
from ktwizard.deploy.records import Deployment
from ktwizard.errors import KtwizardError
from ktwizard.planner.memory.constants import INT4_MARLIN_METHODS
from ktwizard.planner.types import Plan
from ktwizard.render.args import argv
from ktwizard.render.clients import server_url

# Where the target Python finds sglang, without importing it (an import takes seconds and a GPU's worth of setup).
_FIND_SGLANG = (
    "import importlib.util as u; s = u.find_spec('sglang'); "
    "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')"
)


PROBE_S = 30.0  # one question to the target Python, its children included


def check_layerwise_patch(plan: Plan, python: str, env: dict[str, str]) -> None:
    """Refuse an installed sglang-kt 0.7.2 whose RAWINT4 layerwise prefill would crash on the first long prompt."""
    if plan.method not in INT4_MARLIN_METHODS or plan.flag("--kt-gpu-prefill-token-threshold") is None:
        return
    found = pyprobe.ask(python, _FIND_SGLANG, env, PROBE_S)
    if found is None:
        return  # no such Python, or it hangs or prints without end: the launch itself reports it
    package = found.strip()
    source = Path(package) / patches.RELATIVE if package else None
    if source is None or not source.is_file():
        return
    if patches.state(source.read_text(errors="replace")) == "unpatched":
        raise KtwizardError(
            f"the installed sglang-kt ({package}) crashes on RAWINT4 layerwise prefill at the first prompt over "
            f"{plan.flag('--kt-gpu-prefill-token-threshold')} tokens (nn.Parameter of int32 weights requires "
            f"gradients, kt_ep_wrapper.py:2690): patch it with `{sys.executable} -m ktwizard.deploy.patches {source}` "
            "(the seed recipe's fix), or plan with --no-layerwise-prefill"
        )


# The target Python's torch and cuDNN releases, read from package metadata (importing torch takes seconds).
_VERSIONS = (
    "import importlib.metadata as m\n"
    "for name in ('torch', 'nvidia-cudnn-cu12'):\n"
    "    try:\n        print(m.version(name))\n"
    "    except m.PackageNotFoundError:\n        print('')"
)


def check_cudnn(plan: Plan, python: str, env: dict[str, str]) -> None:
    """Refuse a multimodal model that the installed sglang-kt 0.7.2 would refuse at start-up for its cuDNN."""
    from ktwizard.runtime import multimodal

    flags = {f.name: f.value for f in plan.flags}
    if not multimodal.starts_multimodal(plan.model.architecture, flags):
        return
    found = pyprobe.ask(python, _VERSIONS, env, PROBE_S)
    if found is None:
        return  # no such Python, or it hangs or prints without end: the launch itself reports it
    torch, cudnn = ([*found.splitlines(), "", ""])[:2]
    problem = multimodal.cudnn_problem(plan.model.architecture, flags, env, torch.strip(), cudnn.strip())
    if problem:
        raise KtwizardError(
            f"{problem}: install a newer one with `{python} -m pip install "
            f"nvidia-cudnn-cu12=={multimodal.FIX_CUDNN}` (the runtime's own advice), or launch the image, which has it"
        )


class NativeProcess:
    def __init__(self, plan: Plan, opts: LaunchOptions) -> None:
        from ktwizard.deploy.preflight import check_port, check_weights

        check_port(opts.bind, opts.port)
        check_weights(plan)
        env = {**os.environ, **{e.name: e.value for e in plan.env}, **opts.env, DEPLOYMENT_ENV: opts.name}
        check_layerwise_patch(plan, opts.python, env)
        check_cudnn(plan, opts.python, env)
        from ktwizard.apikey import server_command

        self.plan, self.opts = plan, opts
        from ktwizard import folders

        logs = folders.logs()
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{opts.name}.log"
        args = argv(plan, {"--port": str(opts.port), "--host": opts.bind})
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - the child writes it for its whole life
        self.proc = subprocess.Popen(
            server_command(opts.python, args, plan.goals.api_key_file),
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.reader = open(self.log_path, "rb")  # noqa: SIM115
        self.buf = b""
        self.cut = False  # the line being read was already cut at LINE_CAP: drop the rest of it

    def new_lines(self) -> list[str]:
        """The log's new whole lines, each at most LINE_CAP bytes: a server printing without a newline is read a
        block at a time and cut, never buffered without end."""
        out = []
        for _ in range(64):  # at most 64 MiB a call: a server writing faster than this is read on the next
            block = self.reader.read(BLOCK)
            *done, rest = (self.buf + block).replace(b"\r", b"\n").split(b"\n")
            for line in done:
                if not self.cut:
                    out.append(line[:LINE_CAP].decode("utf-8", "replace"))
                self.cut = False
            self.buf = rest
            if len(self.buf) > LINE_CAP:
                if not self.cut:
                    out.append(self.buf[:LINE_CAP].decode("utf-8", "replace") + " [cut]")
                self.buf, self.cut = b"", True
            if len(block) < BLOCK:
                break
        return out

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
        return Deployment(
            name=self.opts.name,
            kind="native",
            url=server_url(self.opts.bind, self.opts.port),
            plan_digest=self.plan.digest,
            model=self.plan.model.id,
            pid=self.proc.pid,
            log_path=str(self.log_path),
            pid_start=start_ticks(self.proc.pid),
            no_gpus=self.opts.gpus is None,
        )


def stop_owned(pid: int | None, start: int | None, label: tuple[str, str], grace: float = 20.0) -> str | None:
    """Stop the process group a record names if it is still the one ktwizard started; None when done, else why
    nothing was signalled (procid.still_ours)."""
    why = still_ours(pid, start, label)
    if why is None and pid is not None:
        stop_group(pid, grace)
    return why


def stop_labelled(label: tuple[str, str], grace: float = 20.0) -> list[int]:
    """Stop the groups of processes that carry `label` (found when the record is lost); the groups stopped."""
    groups = sorted({os.getpgid(p) for p in labelled(*label) if _alive(p)} - {os.getpgrp()})
    for g in groups:
        stop_group(g, grace)
    return groups


def _alive(pid: int) -> bool:
    try:
        os.getpgid(pid)
        return True
    except ProcessLookupError:
        return False


def stop_group(pid: int, grace: float = 20.0) -> None:
    """SIGTERM the server's process group, then SIGKILL what is left after the grace period."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not group_running(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
