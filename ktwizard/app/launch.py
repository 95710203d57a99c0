"""Launch, once for the CLI and the wizard: start → follow to ready → keep the plan (its key file, its peaks) beside
the record → peak check → keep its report. Whatever starts a server through here leaves what `chat`, `bench`,
`exporter`, `monitor` and `placement record` read."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TextIO

from ktwizard.app.kept import keep
from ktwizard.deploy.launch import LaunchOptions, ServerProcess
from ktwizard.deploy.peak import PeakReport
from ktwizard.deploy.records import Deployment
from ktwizard.errors import BadInput, KtwizardError
from ktwizard.host.profile import HostProfile
from ktwizard.planner.types import Plan
from ktwizard.verify.verdict import Report, Verdict


@dataclass(frozen=True)
class Launched:
    deployment: Deployment
    proc: ServerProcess
    plan: Plan  # as served: the port and address it really listens on
    peak: PeakReport | None
    verified: Report | None = None  # launch's last step (None: --no-verify)


def make_room(opts: LaunchOptions, out: TextIO = sys.stderr) -> None:
    """A native server still running under this name would be orphaned by a second one (its record overwritten,
    its log truncated): refuse, or stop it first with --yes. A container of the name is the engine's to refuse
    (docker_proc.check_name); a record whose server is gone is simply replaced."""
    from ktwizard.deploy import records
    from ktwizard.deploy.procid import DEPLOYMENT_ENV, running_as_recorded

    rec = records.load(opts.name)
    if rec is None:
        return
    if rec.kind == "native":
        alive = running_as_recorded(rec.pid, rec.pid_start, (DEPLOYMENT_ENV, opts.name))  # False for no PID
        what = f"natively (process group {rec.pid}) at {rec.url}"
    else:
        alive, what = opts.native, f"in its container at {rec.url}"  # a container is checked by the engine
    if not alive:
        return
    if not opts.yes:
        raise BadInput(
            f"{opts.name} is already running {what}: ktwizard stop {opts.name} first, or pass --yes to replace it "
            "(or choose another --name)"
        )
    from ktwizard.deploy.stop import stop_deployment

    print(stop_deployment(opts.name), file=out, flush=True)


def runs_natively(runner: str, gpus: bool = True, here: HostProfile | None = None) -> tuple[bool, str]:
    """The wizard's runner choice (with why): "auto" is Docker only where a container could get what the launch
    asks for: the engine answers and, when GPUs are requested, has the NVIDIA runtime and this machine has a GPU
    (`here`: this machine's probe, None for a recorded host); otherwise native (python -m sglang.launch_server)."""
    if runner != "auto":
        return runner == "native", ""
    from ktwizard.host.engine import probe_engine
    from ktwizard.host.root import Root

    engine = probe_engine(Root("/"))
    native = "launching natively (python -m sglang.launch_server)"
    if not engine.reachable:
        return True, f"no Docker engine here ({engine.reason}): {native}"
    if gpus and here is not None and not here.gpus.visible:
        seen = here.gpus.reason or "none visible"
        return True, f"this machine shows no GPU ({seen}), so no container gets one: {native}"
    if gpus and not engine.nvidia_runtime:
        return True, f"the Docker engine has no NVIDIA runtime, so no container gets a GPU: {native}"
    return False, ""


def docker_gpu_problem(gpus: bool) -> str | None:
    """Why a container launch asking for GPUs cannot get them here (no NVIDIA runtime in the engine), else None:
    each front end says it with its own fix (the CLI's --gpus none, the wizard's GPUs and runner fields)."""
    if not gpus:
        return None
    from ktwizard.host.engine import probe_engine
    from ktwizard.host.root import Root

    engine = probe_engine(Root("/"))
    if engine.reachable and not engine.nvidia_runtime:
        return "GPUs were requested but Docker has no NVIDIA runtime (nvidia-container-toolkit is not configured)"
    return None


@contextlib.contextmanager
def launch(
    plan: Plan,
    opts: LaunchOptions,
    *,
    out: TextIO = sys.stderr,
    peak_check: bool = True,
    peak_tokens: int | None = None,
    verify_timeout: float | None = None,
    on_verdict: Callable[[str, Verdict | None], None] | None = None,
) -> Iterator[Launched]:
    """The server started, ready, its plan kept and its peak checked; the name stays claimed (deploy.namelock: two
    launches of one name at once would leave two servers and one record) until the body ends."""
    from ktwizard.deploy.launch import follow_startup
    from ktwizard.deploy.namelock import launch_lock
    from ktwizard.deploy.peak import run_peak_check
    from ktwizard.deploy.runners import start

    make_room(opts, out)  # before the lock: --yes stops the running one, which the lock would refuse
    with contextlib.ExitStack() as claimed:
        try:  # the lock lives beside the records: a state folder that cannot be written stops the launch here
            claimed.enter_context(launch_lock(opts.name))
        except OSError as exc:
            raise KtwizardError(
                f"the deployment record could not be written ({exc.strerror or exc}); nothing was started"
            ) from None
        proc = start(plan, opts, out=out)
        deployment, _ = follow_startup(proc, plan, opts, out=out)
        keep(deployment.name, "plan", plan, out)
        peak = run_peak_check(plan, proc, deployment, opts, tokens=peak_tokens, out=out) if peak_check else None
        if peak is not None:
            keep(deployment.name, "peak", peak, out)
        served = replace(plan, goals=replace(plan.goals, port=opts.port, bind=opts.bind))
        verified = None
        if verify_timeout is not None:  # the last step: does it serve (answers, tool calls, reasoning)?
            from ktwizard.app.verify import verify_launched

            verified = verify_launched(served, deployment.name, deployment.url, verify_timeout, on_verdict)
        yield Launched(deployment, proc, served, peak, verified)
