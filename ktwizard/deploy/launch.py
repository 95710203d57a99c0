"""Start a planned server, follow it to ready, and when it fails say why. Shared by the Docker and native runners."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Protocol, TextIO

from ktwizard.deploy.compare import compare, comparison_text, pool_shortfall
from ktwizard.deploy.diagnose import Diagnosis, diagnose
from ktwizard.deploy.phases import StartupTracker
from ktwizard.deploy.records import Deployment, forget, save
from ktwizard.errors import KtwizardError
from ktwizard.planner.types import Plan

DEFAULT_TIMEOUT = 3600.0  # a 600 GB checkpoint loads for tens of minutes; never give up at 60 s


@dataclass(frozen=True)
class LaunchOptions:
    name: str
    port: int
    bind: str = "127.0.0.1"
    image: str | None = None
    gpus: tuple[int, ...] | None | str = "plan"  # "plan": the plan's GPUs; None: no GPUs
    detach: bool = False
    yes: bool = False
    keep_on_failure: bool = False
    timeout_s: float = DEFAULT_TIMEOUT
    env: dict[str, str] = field(default_factory=dict)
    memory: str | None = None
    python: str = "python3"
    native: bool = False  # run python -m sglang.launch_server here instead of a container
    labels: dict[str, str] = field(default_factory=dict)  # more container labels (a fleet marks its replicas)


class ServerProcess(Protocol):
    """What the follow loop needs from a container or a child process."""

    def new_lines(self) -> list[str]: ...
    def status(self) -> tuple[bool, int | None, bool]: ...  # (running, exit code, OOM-killed)
    def remove(self) -> None: ...  # stop and delete what was created
    def deployment(self) -> Deployment: ...


class LaunchFailed(KtwizardError):
    def __init__(self, diagnosis: Diagnosis, tracker: StartupTracker) -> None:
        super().__init__(diagnosis.line())
        self.diagnosis = diagnosis
        self.tracker = tracker


def answers_health(url: str, timeout: float = 5.0) -> bool:
    """The server answers /health with 200 (sglang answers it without an API key)."""
    import httpx

    from ktwizard import httpcap

    try:  # `timeout` is a deadline: a server dripping its headers is not healthy
        return httpcap.get(f"{url}/health", timeout, cap=httpcap.ERROR_CAP)[0] == 200
    except (httpx.HTTPError, httpx.InvalidURL, httpcap.CapExceeded):  # a record's port `abc`: not an HTTPError
        return False


def follow_startup(
    proc: ServerProcess, plan: Plan, opts: LaunchOptions, out: TextIO = sys.stderr
) -> tuple[Deployment, StartupTracker]:
    """Phases with elapsed time until the server is ready and answers HTTP; a diagnosis otherwise."""
    from dataclasses import replace

    tracker = StartupTracker()
    # the plan's peaks go into the record: a dashboard marks them without loading the planner
    deployment = replace(proc.deployment(), planned_peaks=tuple(sorted(plan.predicted_peaks().items())))
    said: tuple[int, int] | None = None
    try:
        while True:
            for line in proc.new_lines():
                event = tracker.feed(line)
                if event:
                    print(f"  {event.at:7.1f}s  {event.phase}", file=out, flush=True)
                if tracker.shards and tracker.shards != said:  # weights load for tens of minutes: show progress
                    said = tracker.shards
                    elapsed = time.monotonic() - tracker.started
                    print(f"  {elapsed:7.1f}s    shards {said[0]}/{said[1]}", file=out, flush=True)
            running, code, oom = proc.status()
            if not running:
                for line in proc.new_lines():
                    tracker.feed(line)
                raise LaunchFailed(diagnose(code, oom, tracker), tracker)
            if tracker.ready and answers_health(deployment.url):
                break
            if time.monotonic() - tracker.started > opts.timeout_s:
                raise LaunchFailed(diagnose(None, False, tracker, timed_out=opts.timeout_s), tracker)
            time.sleep(0.2)
        short = pool_shortfall(plan, tracker.figures)
        if short is not None:  # a server that cannot hold the goals is not a success with a printed difference
            raise LaunchFailed(short, tracker)
    except LaunchFailed:
        if opts.keep_on_failure:
            print(
                f"kept {deployment.name} for inspection (ktwizard logs {deployment.name}; ktwizard stop "
                f"{deployment.name})",
                file=out,
            )
        else:
            proc.remove()
        raise
    except KeyboardInterrupt:
        _interrupted(proc, deployment, ready=False, out=out)
        raise
    except Exception as exc:  # noqa: BLE001 - the Docker connection dropped, the log vanished: never an orphan
        left = clean_up(proc, deployment)
        raise KtwizardError(
            f"lost track of {deployment.name} while it started ({exc.__class__.__name__}); {left}"
        ) from None
    try:
        save(deployment)
    except OSError as exc:  # a full disk or a read-only state folder: no record means an orphan, so no server
        left = clean_up(proc, deployment)
        raise KtwizardError(f"the deployment record could not be written ({exc.strerror or exc}); {left}") from None
    print(f"ready in {time.monotonic() - tracker.started:.1f}s at {deployment.url}", file=out)
    print(comparison_text(compare(plan, tracker.figures)), file=out, end="")
    return deployment, tracker


def _interrupted(proc: ServerProcess, deployment: Deployment, ready: bool, out: TextIO) -> None:
    """Ctrl-C: ask whether to stop or leave it; without a terminal, never leave a half-started server."""
    leave = ready
    if sys.stdin is not None and sys.stdin.isatty():
        try:
            answer = input(f"\nStop and remove {deployment.name}? [S]top / [l]eave running: ").strip().lower()
        except (EOFError, KeyboardInterrupt):
            answer = "s"
        leave = answer.startswith("l")
    if leave:
        save(deployment)
        print(
            f"left {deployment.name} running at {deployment.url}; stop it with: ktwizard stop {deployment.name}",
            file=out,
        )
    else:
        proc.remove()
        print(f"stopped and removed {deployment.name}", file=out)


def stay_attached(proc: ServerProcess, deployment: Deployment, out: TextIO = sys.stdout) -> None:
    """Without --detach: stream the log until the server exits or Ctrl-C."""
    try:
        while True:
            for line in proc.new_lines():
                print(line, file=out, flush=True)
            running, code, oom = proc.status()
            if not running:
                # never leave an exited server behind: its container and record go, and the line says so
                left = clean_up(proc, deployment)
                raise KtwizardError(
                    f"{deployment.name} exited with code {code}" + (" (OOM-killed)" if oom else "") + f"; {left}"
                )
            time.sleep(0.2)
    except KeyboardInterrupt:
        _interrupted(proc, deployment, ready=True, out=sys.stderr)


def clean_up(proc: ServerProcess, deployment: Deployment) -> str:
    """Remove what a failed deployment left; say what was removed, or what to remove by hand."""
    try:
        proc.remove()
    except Exception as exc:  # noqa: BLE001 - the engine itself may be gone: say what is left
        return (
            f"{deployment.name} could not be removed ({exc.__class__.__name__}): remove it with docker rm -f "
            f"{deployment.name} (or ktwizard stop {deployment.name})"
        )
    forget(deployment.name)
    return f"removed {deployment.name} and its record"
