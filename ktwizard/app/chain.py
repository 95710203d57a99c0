"""From a bare host to a verified server, as one job: download → convert (when the plan's method reads converted CPU
weights) → launch → verify. `launch --download` and the wizard's Launch step both run it, and both draw the same
events (`Event`) in their own progress view.

The plan is checked before the first byte (a plan that does not fit is refused, exit 3, before a 600 GB download);
each step's failure stops the job with one line naming the step, its exit code kept (2 bad input, 1 runtime). What a
failed step leaves is never taken as complete: a download stays marked pending (app/download), a conversion is
renamed into place only when whole (deploy/convert), and launch refuses both (deploy/preflight)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

from ktwizard.errors import BadInput, KtwizardError

if TYPE_CHECKING:
    from ktwizard.app.convert import ConvertResult
    from ktwizard.app.download import Downloaded
    from ktwizard.app.launch import Launched
    from ktwizard.deploy.launch import LaunchOptions
    from ktwizard.host.profile import HostProfile
    from ktwizard.planner.types import Goals, Plan
    from ktwizard.verify.verdict import Verdict

STEPS = ("download", "convert", "launch", "verify")
STATES = ("start", "progress", "done", "skipped", "failed")


@dataclass(frozen=True)
class Event:
    step: str  # one of STEPS
    state: str  # one of STATES
    text: str = ""
    done: int = 0  # bytes (download), layers (convert), checks (verify); 0 where nothing is counted
    total: int = 0


@dataclass(frozen=True)
class Fetch:
    """What the download step fetches: a preset's repository, or hf:ORG/NAME[@REV] (app/download.source)."""

    preset: str | None = None
    model: str | None = None


def fetch_for(preset: str | None, model: str | None) -> Fetch:
    """The download a `--preset` or `--model hf:` launch asks for; a local folder has nothing to download."""
    if model and not model.startswith("hf:"):
        raise BadInput(f"--download fetches a preset's checkpoint or --model hf:ORG/NAME, not the folder {model[:120]}")
    if not (preset or model):
        raise BadInput("--download needs --preset ID or --model hf:ORG/NAME[@REV] (a saved --plan names no repository)")
    return Fetch(preset, model)


def target_folder(fetch: Fetch, goals: Goals) -> Path:
    """Where the download lands: the plan's --weights, else ktwizard's data folder (models/NAME)."""
    from ktwizard.app.download import default_folder, source
    from ktwizard.models.hub import parse_ref

    if goals.weights:
        return Path(goals.weights).expanduser()
    return default_folder(parse_ref(source(fetch.preset, fetch.model)[0]).repo)


def needs_download(fetch: Fetch | None, goals: Goals) -> bool:
    """Whether the wizard's launch should download first: the folder is absent, holds no weights yet, or a download
    into it did not finish (a cheap look, no Hub). A folder the user filled otherwise is taken as it is."""
    if fetch is None:
        return False
    from ktwizard.models.completeness import incomplete_reason

    folder = target_folder(fetch, goals)
    if not folder.is_dir() or not any(folder.glob("*.safetensors")):
        return True
    return incomplete_reason(folder) is not None


def needs_convert(plan: Plan) -> bool:
    """The plan's method reads converted CPU weights and they are not there yet."""
    from ktwizard.deploy.convert import is_converted
    from ktwizard.planner.convert import CONVERTED

    kt = plan.flag("--kt-weight-path")
    return plan.method in CONVERTED and isinstance(kt, str) and not is_converted(Path(kt))


def steps_for(plan: Plan, fetch: Fetch | None, verify: bool = True) -> tuple[str, ...]:
    """The steps that will do work, for a front end to say before it starts (the wizard's confirmation)."""
    out = ["download"] if fetch is not None else []
    if needs_convert(plan) or (out and plan.method in ("AMXINT4", "AMXINT8")):
        out.append("convert")
    return (*out, "launch", *(("verify",) if verify else ()))


class _Step(contextlib.AbstractContextManager[None]):
    """One step's start, done or failed event; a failure re-raised as one line naming the step, its exit code
    kept."""

    def __init__(self, step: str, emit: Callable[[Event], None], text: str = "") -> None:
        self.step, self.emit = step, emit
        emit(Event(step, "start", text))

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            return
        if isinstance(exc, KtwizardError):
            self.emit(Event(self.step, "failed", exc.message))
            if exc.message.startswith(f"{self.step}: ") or self.step == "verify":
                return
            said = f"{self.step}: {exc.message}"
            raise (BadInput(said) if isinstance(exc, BadInput) else KtwizardError(said, exc.exit_code)) from None
        if isinstance(exc, KeyboardInterrupt):
            self.emit(Event(self.step, "failed", "interrupted"))


def _lines(step: str, emit: Callable[[Event], None]) -> TextIO:
    """A text stream whose lines become this step's progress events (launch writes its phases to one)."""
    import io

    class Lines(io.TextIOBase):
        def write(self, s: str) -> int:
            for line in s.splitlines():
                if line.strip():
                    emit(Event(step, "progress", line))
            return len(s)

    return cast(TextIO, Lines())


@contextlib.contextmanager
def chain(
    plan: Plan,
    replan: Callable[[Goals], Plan],
    options: Callable[[Plan], LaunchOptions],
    *,
    fetch: Fetch | None,
    on_event: Callable[[Event], None],
    host: HostProfile | None = None,
    out: TextIO | None = None,
    peak_check: bool = True,
    peak_tokens: int | None = None,
    verify_timeout: float | None = None,
) -> Iterator[Launched]:
    """Every step in order; the body runs while the launched server is held (as app.launch.launch). `plan` is what
    the front end would launch; `replan` its planner bound to its host and model (app.planning.make_plan), asked
    again only once the download has put the checkpoint in place; `options` makes the launch options for the plan
    as finally made (its weights the downloaded folder)."""
    from ktwizard.app.launch import launch
    from ktwizard.app.planning import launchable

    emit = on_event
    plan = launchable(plan)  # exit 3 before the first byte
    if fetch is not None:  # asked for: a folder already complete is said so in a moment (the Hub's listing)
        folder = target_folder(fetch, plan.goals)
        with _Step("download", emit, f"into {folder}"):
            got = _download(fetch, folder, emit)
        emit(Event("download", "done", f"{got.folder}: complete and verified", got.total, got.total))
        if plan.goals.weights != str(got.folder):
            plan = launchable(replan(replace(plan.goals, weights=str(got.folder))))
    else:
        emit(Event("download", "skipped", "not asked (--download fetches the checkpoint)"))
    if needs_convert(plan):
        with _Step("convert", emit, f"{plan.method} CPU weights into {plan.flag('--kt-weight-path')}"):
            done = _convert(plan, host, emit)
        emit(Event("convert", "done", f"{done.output}: {done.layers} layers", done.layers, done.layers))
    else:
        why = "already converted" if plan.method in ("AMXINT4", "AMXINT8") else f"{plan.method} reads the checkpoint"
        emit(Event("convert", "skipped", why))
    opts = options(plan)
    checks: list[int] = []
    total = _checks()

    def on_verdict(name: str, verdict: Verdict | None) -> None:
        from ktwizard.app.verify import line

        if verdict is None:
            if not checks:
                emit(Event("launch", "done", "ready"))
                emit(Event("verify", "start"))
            emit(Event("verify", "progress", f"checking {name}", len(checks), total))
            return
        checks.append(1)
        emit(Event("verify", "progress", line(verdict), len(checks), total))

    with _Step("launch", emit, opts.name):
        stack = contextlib.ExitStack()
        launched = stack.enter_context(
            launch(
                plan,
                opts,
                out=out if out is not None else _lines("launch", emit),
                peak_check=peak_check,
                peak_tokens=peak_tokens,
                verify_timeout=verify_timeout,
                on_verdict=on_verdict,
            )
        )
    with stack:
        if launched.verified is None:
            emit(Event("launch", "done", f"ready at {launched.deployment.url}"))
            emit(Event("verify", "skipped", "--no-verify"))
        elif launched.verified.passed:
            emit(Event("verify", "done", f"every check passed ({len(launched.verified.verdicts)})"))
        else:
            names = ", ".join(v.name for v in launched.verified.failed)
            emit(Event("verify", "failed", f"{len(launched.verified.failed)} check(s) failed: {names}"))
        yield launched


def _checks() -> int:
    from ktwizard.verify.checks import CHECKS

    return len(CHECKS)


def _download(fetch: Fetch, folder: Path, emit: Callable[[Event], None]) -> Downloaded:
    from ktwizard.app.download import download

    last = [-1]

    def on_bytes(done: int, total: int) -> None:
        pct = done * 100 // total if total else 100
        if pct != last[0]:  # one event a percent, not one a chunk
            last[0] = pct
            emit(Event("download", "progress", "", done, total))

    return download(
        fetch.preset,
        fetch.model,
        str(folder),
        progress=False,
        say=lambda text: emit(Event("download", "progress", text)),
        on_bytes=on_bytes,
    )


def _convert(plan: Plan, host: HostProfile | None, emit: Callable[[Event], None]) -> ConvertResult:
    from ktwizard.app.convert import convert

    kt = plan.flag("--kt-weight-path")
    return convert(
        plan.model_path,
        plan.method,
        str(kt) if isinstance(kt, str) else None,
        host=host,
        say=lambda text: emit(Event("convert", "progress", text)),
        on_layer=lambda done, total: emit(Event("convert", "progress", "", done, total)),
    )


def status(event: Event) -> str:
    """One event as one line of the progress view, the same words in the CLI and the wizard."""
    from ktwizard.units import human

    n = STEPS.index(event.step) + 1 if event.step in STEPS else 0
    head = f"[{n}/{len(STEPS)} {event.step}]"
    if event.state == "progress" and event.total and not event.text:
        pct = event.done * 100 // event.total
        amount = (
            f"{human(event.done)} of {human(event.total)}"
            if event.step == "download"
            else f"{event.done} of {event.total} {'layers' if event.step == 'convert' else 'checks'}"
        )
        return f"{head} {amount} ({pct}%)"
    word = {"start": "…", "done": "done", "skipped": "skipped", "failed": "FAILED"}.get(event.state, "")
    return " ".join(x for x in (head, word, event.text) if x)
