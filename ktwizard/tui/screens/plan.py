"""Step 3: the plan, re-planned on every what-if change."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import (
    Footer,
    Header,
    Input,
    Label,
    Select,
    Static,
)

from ktwizard.errors import KtwizardError
from ktwizard.planner.types import Goals
from ktwizard.tui.screens.base import WizardStep
from ktwizard.tui.widgets import budget_text, flags_table, notes_text

ADVICE_AFTER_S = 0.4  # a field at rest this long gets the plan's advice


class PlanScreen(WizardStep):
    STEP = "3 Plan"
    _advice: Timer | None = None
    advice_pending = False  # a field changed and its advice has not been drawn yet (ADVICE_AFTER_S)

    BINDINGS = [*WizardStep.BINDINGS, Binding("ctrl+f", "apply_fit", "apply the best fix", key_display="^f")]

    def action_apply_fit(self) -> None:
        """Take the best-ranked change that fits: its goals become the what-if fields."""
        plan = self.state.plan
        if plan is None or plan.fits or not plan.suggestions:
            self.notify("the plan fits" if plan is not None and plan.fits else "no single change fits")
            return
        best = plan.suggestions[0]
        self.state.goals = best.goals
        g = best.goals
        with self.prevent(Input.Changed, Select.Changed):
            self.query_one("#context", Input).value = str(g.context or "")
            self.query_one("#concurrency", Input).value = str(g.concurrency)
            self.query_one("#gpu-experts", Input).value = "" if g.gpu_experts is None else str(g.gpu_experts)
            self.query_one("#chunk", Input).value = str(g.chunked_prefill or "")
            self.query_one("#threshold", Input).value = str(g.prefill_threshold or "")
            self.query_one("#gpus", Input).value = ",".join(map(str, g.gpus)) if g.gpus else ""
            self.query_one("#kv", Select).value = g.kv_dtype if g.kv_dtype != "bf16" else "auto"
            self.query_one("#method", Select).value = g.method or ""
        self.replan()
        self.notify(f"applied {best.change}")

    def compose(self) -> ComposeResult:
        g = self.state.goals
        yield Header(show_clock=False)
        with Grid(id="whatif"):
            for label, widget in (
                ("context (tokens)", Input(str(g.context or ""), placeholder="auto", id="context")),
                ("concurrency", Input(str(g.concurrency), id="concurrency")),
                (
                    "GPU experts / layer",
                    Input("" if g.gpu_experts is None else str(g.gpu_experts), placeholder="auto", id="gpu-experts"),
                ),
                ("prefill chunk", Input(str(g.chunked_prefill or ""), placeholder="auto", id="chunk")),
                (
                    "layerwise from (tokens)",
                    Input(str(g.prefill_threshold or ""), placeholder="auto", id="threshold"),
                ),
                ("GPUs", Input(",".join(map(str, g.gpus or ())), placeholder="all", id="gpus")),
                (
                    "KV cache",
                    Select(
                        [("bf16", "auto"), ("fp8 e4m3", "fp8_e4m3")],
                        value=g.kv_dtype if g.kv_dtype != "bf16" else "auto",
                        allow_blank=False,
                        id="kv",
                    ),
                ),
                ("kt-method", Select([("native", "")], value="", allow_blank=False, id="method")),
            ):
                with Vertical(classes="field"):
                    yield Label(label)
                    yield widget
        with VerticalScroll(id="plan-body"):
            yield Static(id="verdict")
            yield Static(id="budget")
            yield Static(id="suggestions")
            yield Static(id="notes")
            yield Static(id="flags")
        yield Footer(compact=True)  # every key fits 80 columns

    def on_mount(self) -> None:
        super().on_mount()
        from ktwizard.planner.methods import runnable_methods

        methods = runnable_methods(self.host.cpu.flags)
        self.query_one("#method", Select).set_options([("native", "")] + [(m, m) for m in methods])
        self.replan()

    def goals(self) -> Goals:
        from ktwizard.inputs import goals_from_fields

        def value(id_: str) -> str:
            widget = self.query_one(f"#{id_}")
            v = widget.value if isinstance(widget, Input | Select) else ""
            return "" if v in (None, Select.BLANK) else str(v)

        fields = {
            key: value(id_)
            for key, id_ in (
                ("context", "context"),
                ("concurrency", "concurrency"),
                ("gpu_experts", "gpu-experts"),
                ("chunked_prefill", "chunk"),
                ("prefill_threshold", "threshold"),
                ("gpus", "gpus"),
                ("kv_dtype", "kv"),
                ("method", "method"),
            )
        }
        return goals_from_fields(self.state.goals, fields)

    @on(Input.Changed)
    @on(Select.Changed)
    def changed(self) -> None:
        if self.is_mounted:
            # every keystroke re-plans at once without advice (plan() under 2 ms, benchmarks/plan.py); the advice
            # (big wins, fixes that fit: trial plans of other goals) follows once the field rests
            self.replan(advise=False)
            if self._advice is not None:
                self._advice.stop()
            self._advice = self.set_timer(ADVICE_AFTER_S, self.replan)
            self.advice_pending = True

    def replan(self, advise: bool = True) -> None:
        from ktwizard.app.planning import make_plan
        from ktwizard.render.table import verdict

        if advise:
            self.advice_pending = False

        verdict_w = self.query_one("#verdict", Static)
        try:
            goals = self.goals()
            model = self.state.model()
            result = make_plan(self.host, model, goals, advise=advise)
        except KtwizardError as exc:
            verdict_w.update(Text(exc.message, style="red"))
            return
        self.state.goals, self.state.plan = goals, result
        then = (
            "\nnext: ^n (or n) opens the Launch step (image, name, port, runner); l there launches"
            if result.fits
            else ""
        )
        verdict_w.update(
            Text(
                verdict(result) + "".join(f"\n  ! {o}" for o in result.overflows) + then,
                style="bold green" if result.fits else "bold red",
            )
        )
        self.query_one("#budget", Static).update(budget_text(result, width=max(16, min(60, self.size.width - 40))))
        sug = (
            Text(
                "\n".join(
                    ("^f " if i == 0 else "   ") + f"{s.change}: {s.effect}" for i, s in enumerate(result.suggestions)
                )
            )
            if result.suggestions
            else Text("")
        )
        self.query_one("#suggestions", Static).update(sug)
        self.query_one("#notes", Static).update(notes_text(result))
        if result.fits:
            self.query_one("#flags", Static).update(flags_table(result))
        else:  # no arguments to copy for a server the budget says runs out of memory: what to change instead
            from ktwizard.render.table import not_launchable

            self.query_one("#flags", Static).update(Text(not_launchable(result, "^f applies {change}"), style="yellow"))

    def action_next(self) -> None:
        if self.state.plan is not None and self.state.plan.fits:
            from ktwizard.tui.screens.launch import LaunchScreen  # the next step loads when it is reached

            self.app.push_screen(LaunchScreen())
