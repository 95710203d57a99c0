"""The Launch step's progress view of app/chain's events (download → convert → launch → verify) and its words for
verify's verdicts and the relaunches they offer; the step itself (launch.py) runs the job and holds the keys."""

from __future__ import annotations

import io
from typing import Any


class EventLog:
    """Chain events into the launch log (from the worker thread): each step's start, outcome and lines as they come,
    verify's as `verify: …`; the counted progress (bytes, layers) live in the log's border, and a line a tenth."""

    def __init__(self, app: Any, log: Any) -> None:
        self.app, self.log = app, log
        self.tenth: dict[str, int] = {}

    def write(self, line: str) -> None:
        self.app.call_from_thread(self.log.write, line)

    def show(self, event: Any) -> None:
        from ktwizard.app.chain import status

        if event.state == "progress" and event.total and not event.text:
            if event.step == "verify":
                return
            self.app.call_from_thread(setattr, self.log, "border_subtitle", status(event))
            tenth = event.done * 10 // event.total
            if self.tenth.get(event.step) != tenth:
                self.tenth[event.step] = tenth
                self.write(status(event))
            return
        if event.step == "verify" and event.state == "progress":
            self.write(f"verify: {event.text}")
            return
        if event.state in ("done", "failed", "skipped"):
            self.app.call_from_thread(setattr, self.log, "border_subtitle", status(event))
        self.write(status(event))

    def lines(self) -> io.TextIOBase:
        """A stream for launch's own lines (phases, plan vs actual, the peak check)."""
        view = self

        class Lines(io.TextIOBase):
            def write(self, s: str) -> int:
                for line in s.splitlines():
                    if line.strip():
                        view.write(line)
                return len(s)

        return Lines()


def verified_text(report: Any, offers: tuple = ()) -> str:
    """The verdict of the checks: all passed, or which failed and what to do (a relaunch with a fix, `r`)."""
    failed = report.failed
    if not failed:
        return f"verify: every check passed ({len(report.verdicts)})"
    names = ", ".join(v.name for v in failed)
    head = f"verify: {len(failed)} of {len(report.verdicts)} checks failed ({names}): the 'try:' under each says "
    head += "what to change"
    if offers:
        return (
            head
            + "; r relaunches with one of these, re-planned:\n"
            + "\n".join(f"  {i}. relaunch with {o.change.label} (for {o.check})" for i, o in enumerate(offers, 1))
        )
    return head + "; Esc back to the Plan step (another kt-method, TP 1), then l relaunches"


def wizard_fetch(state: Any, plan: Any) -> Any:
    """What the wizard's launch downloads first: the preset's checkpoint, when its folder is absent or unfinished
    (a checkpoint folder the user chose is launched as it is)."""
    from ktwizard.app.chain import Fetch, needs_download
    from ktwizard.models.presets import all_presets

    preset = all_presets().get(state.preset or "")
    if state.model_dir or preset is None or not preset.hf_repos:
        return None
    fetch = Fetch(preset=state.preset)
    return fetch if needs_download(fetch, plan.goals) else None


def question(plan: Any, name: str, fetch: Any, spec: Any) -> str:
    """The confirmation before a launch: what it downloads and converts first, what it loads, and its steps."""
    from ktwizard.app.chain import steps_for, target_folder

    steps = steps_for(plan, fetch)
    first = ""
    if fetch is not None:
        from ktwizard.planner.weights import checkpoint_bytes
        from ktwizard.units import human

        size = human(checkpoint_bytes(spec))
        first += f"It first downloads the checkpoint (about {size}) into {target_folder(fetch, plan.goals)}. "
    if "convert" in steps:
        first += f"It converts the CPU weights for {plan.method} with kt-kernel's converter. "
    return (
        f"Launch {plan.model.name} as {name or 'the default name'}?\n\n{first}It loads the weights from "
        f"{plan.model_path} ({plan.method}, {plan.gpu_experts} GPU experts per layer) and may take tens of "
        f"minutes; then verify checks that it serves.\n\nSteps: {' → '.join(steps)}"
    )
