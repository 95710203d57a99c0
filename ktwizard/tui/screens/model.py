"""Step 2: a preset or a local checkpoint, and the weights folder."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    Button,
    Footer,
    Header,
    Input,
    Label,
    OptionList,
    Static,
)
from textual.widgets.option_list import Option

from ktwizard.errors import KtwizardError
from ktwizard.tui.screens.base import WizardStep


class ModelScreen(WizardStep):
    STEP = "2 Model"
    BINDINGS = [*WizardStep.BINDINGS, Binding("down", "to_list", show=False)]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal():
            with Vertical(id="model-left"):
                yield Label("search presets (Enter/Down: list)")
                yield Input(placeholder="kimi, deepseek, qwen3…", id="search")
                yield OptionList(id="presets")
            with Vertical(id="model-right"):
                yield Label("or a checkpoint folder")
                yield Input(placeholder="/models/DeepSeek-V3", id="model-dir")
                yield Button("inspect", id="inspect")
                yield Label("weights folder")
                yield Input(self.state.goals.weights or "", placeholder="/models/...", id="weights")
                yield Static(id="model-info")
        yield Footer(compact=True)  # every key fits 80 columns

    def on_mount(self) -> None:
        super().on_mount()
        self.badges: dict[tuple[int, str], str] = {}
        self.fill("")
        self.query_one("#search", Input).focus()

    def marks(self, preset) -> str:
        """The domain's verdict for this host (planner/screening.screen), planned once per preset per screen."""
        from ktwizard.models.presets import recipe_for
        from ktwizard.planner.screening import screen

        key = (id(self.host), preset.id)  # the search refills the list on every key: plan each preset once
        if key not in self.badges:
            self.badges[key] = screen(preset.spec(), self.host, preset.sglang, recipe_for(preset.id)).badge
        return f"  {self.badges[key]}"

    def fill(self, text: str) -> None:
        from ktwizard.models.presets import all_presets

        ol = self.query_one("#presets", OptionList)
        ol.clear_options()
        for p in all_presets().values():
            if text.lower() in f"{p.id} {p.name} {p.family}".lower():
                s = p.spec()
                fmt = s.expert_format
                short = {"fp8_block": "FP8", "fp8_channel": "FP8/ch", "int4_group": f"INT4 g{fmt.block}"}.get(
                    fmt.kind, fmt.kind.upper()
                )
                ol.add_option(Option(f"{p.id:22} {s.params_total / 1e9:5.0f}B {short:8}{self.marks(p)}", id=p.id))

    @on(Input.Changed, "#search")
    def search(self, event: Input.Changed) -> None:
        self.fill(event.value)

    @on(Input.Submitted, "#search")
    def action_to_list(self) -> None:
        if self.focused is not self.query_one("#search"):
            return
        ol = self.query_one("#presets", OptionList)
        if ol.option_count:
            ol.focus()
            ol.highlighted = ol.highlighted or 0

    @on(OptionList.OptionSelected, "#presets")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        """A preset is chosen; the weights folder comes next, then ^n (never a jump past it)."""
        from ktwizard.models.presets import get_preset
        from ktwizard.planner.weights import download

        self.state.preset, self.state.model_dir = event.option.id, None
        info = Text(f"preset {event.option.id} chosen: give the weights folder the server loads (or leave it empty to "
                    "plan only), then ^n", style="green")  # fmt: skip
        spec = get_preset(str(event.option.id)).spec()
        folder = self.query_one("#weights", Input).value.strip() or f"/models/{spec.id}"
        fetch = download(spec, folder, None)
        if fetch is not None:  # the command on a line of its own: copied whole, never wrapped mid-word
            info += Text("\n" + fetch.text.split(": ", 1)[0] + ":\n") + Text(fetch.text.split(": ", 1)[1], "bold")
        self.query_one("#model-info", Static).update(info)
        self.query_one("#weights", Input).focus()

    @on(Input.Submitted, "#weights")
    def weights_given(self) -> None:
        self.action_next()

    @on(Button.Pressed, "#inspect")
    @work(thread=True, exclusive=True)
    def inspect(self) -> None:
        from ktwizard.inputs import inspect_source

        folder = self.query_one("#model-dir", Input).value.strip()
        try:
            result = inspect_source(folder)  # a folder, or hf:ORG/NAME read before downloading
            msg = Text(
                f"{result.spec.architecture}: {result.files} files, {result.tensors} tensors, exact bytes\n"
                + "\n".join(result.notes)
            )
            self.state.model_dir, self.state.preset = folder, None
        except KtwizardError as exc:
            msg = Text(exc.message, style="red")
        self.app.call_from_thread(self.query_one("#model-info", Static).update, msg)

    def action_next(self) -> None:
        # an inspected checkpoint folder is the weights the server loads, unless another folder is given
        local = self.state.model_dir if self.state.model_dir and not self.state.model_dir.startswith("hf:") else None
        weights = self.query_one("#weights", Input).value.strip() or local or self.state.goals.weights
        self.state.goals = replace(self.state.goals, weights=weights)
        if self.state.preset or self.state.model_dir:
            from ktwizard.tui.screens.plan import PlanScreen  # the next step loads when it is reached

            self.app.push_screen(PlanScreen())
        else:
            self.notify(
                "choose a preset first (Enter on the list), or inspect a local checkpoint folder", severity="warning"
            )
