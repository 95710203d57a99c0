"""Step 4: every rendering, and the launch that follows the server to ready."""

from __future__ import annotations

from typing import TextIO, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.widgets import (
    Footer,
    Header,
    Input,
    Label,
    RichLog,
    Select,
    Static,
    TabbedContent,
    TabPane,
    Tabs,
    TextArea,
)

from ktwizard.errors import KtwizardError
from ktwizard.tui.screens.base import Step
from ktwizard.tui.state import WizardHost


class LaunchScreen(Step):
    STEP = "4 Launch"
    NEXT = False  # the last step: launching is its way on
    BINDINGS = [
        *Step.BINDINGS,
        Binding("ctrl+t", "formats", "formats", key_display="^t"),
        Binding("c", "copy", "copy"),
        Binding("s", "save", "save to file"),
        Binding("l", "launch", "launch…"),
    ]
    LETTERS = Step.LETTERS | {"copy", "save", "launch"}

    def compose(self) -> ComposeResult:
        from ktwizard.render.docker import container_name
        from ktwizard.render.formats import TABS

        plan = self.plan
        yield Header(show_clock=False)
        with TabbedContent(id="formats"):
            for fmt in TABS:
                with TabPane(fmt.name, id=f"tab-{fmt.name}"):
                    yield TextArea(fmt.render(plan), read_only=True, id=f"text-{fmt.name}")
        with Grid(id="launch-opts"):
            with Vertical(classes="field"):
                yield Label("image")
                yield Input(plan.image or "", placeholder="sglang-kt:local", id="image")
            with Vertical(classes="field"):
                yield Label("name")
                yield Input(container_name(plan), id="name")
            with Vertical(classes="field"):
                yield Label("GPUs")
                yield Select(
                    [("from the plan", "plan"), ("none (stand-in)", "none")],
                    value="plan",
                    allow_blank=False,
                    id="gpu-mode",
                )
            with Vertical(classes="field"):
                yield Label("port")
                yield Input(str(plan.goals.port), id="port")
            with Vertical(classes="field"):
                yield Label("environment")
                yield Input("", placeholder="K=V,K=V", id="env")
        yield Static(id="image-status")
        yield RichLog(id="launch-log", max_lines=400, wrap=True, markup=False, highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#launch-log", RichLog).border_title = "launch log (phases, plan vs actual, peak check, clients)"

    def current(self) -> str:
        tab = self.query_one("#formats", TabbedContent).active or "tab-args"
        return self.query_one(f"#text-{tab[4:]}", TextArea).text

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.current())
        self.notify("copied to the clipboard")

    def action_save(self) -> None:
        from ktwizard.profiles import profiles_dir
        from ktwizard.render.formats import BY_NAME
        from ktwizard.serial import write_atomic

        fmt = BY_NAME[(self.query_one("#formats", TabbedContent).active or "tab-args")[4:]]
        path = profiles_dir().parent / "rendered" / f"{self.plan.model.id}-{fmt.name}{fmt.suffix}"
        write_atomic(path, self.current())
        self.notify(f"saved {path}")

    def action_formats(self) -> None:
        self.query_one("#formats", TabbedContent).query_one(Tabs).focus()

    def action_launch(self) -> None:
        """A launch loads hundreds of GB: it asks first."""
        from ktwizard.tui.confirm import Confirm

        plan = self.plan
        name = self.query_one("#name", Input).value.strip()
        question = (
            f"Launch {plan.model.name} as {name or 'the default name'}?\n\nIt loads the weights from "
            f"{plan.model_path} ({plan.method}, {plan.gpu_experts} GPU experts per layer) and may take tens of "
            "minutes."
        )
        self.app.push_screen(Confirm(question, yes="Launch"), self._confirmed)

    def _confirmed(self, yes: bool | None) -> None:
        if yes:
            self.launch_worker()

    @work(thread=True, exclusive=True)
    def launch_worker(self) -> None:
        import io

        from ktwizard.deploy.launch import follow_startup
        from ktwizard.deploy.peak import run_peak_check
        from ktwizard.deploy.runners import launch_options, start
        from ktwizard.inputs import parse_count, parse_env

        plan = self.plan
        log = self.query_one("#launch-log", RichLog)
        try:
            port = self.query_one("#port", Input).value.strip()
            opts = launch_options(
                plan,
                name=self.query_one("#name", Input).value.strip() or None,
                port=parse_count(port, "port", 1, 65535) if port else None,
                image=self.query_one("#image", Input).value.strip() or None,
                gpus=None if self.query_one("#gpu-mode", Select).value == "none" else "plan",
                env=parse_env([kv for kv in self.query_one("#env", Input).value.split(",") if kv.strip()]),
            )
        except KtwizardError as exc:
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return

        class Lines(io.TextIOBase):
            def write(self, s: str) -> int:
                for line in s.splitlines():
                    if line.strip():
                        self_app.call_from_thread(log.write, line)
                return len(s)

        self_app = self.app
        try:
            out = cast(TextIO, Lines())
            proc = start(plan, opts, out=out)
            deployment, _ = follow_startup(proc, plan, opts, out=out)
            run_peak_check(plan, proc, deployment, opts, out=out)
            from dataclasses import replace

            from ktwizard.render.clients import clients_text

            served = replace(plan, goals=replace(plan.goals, port=opts.port, bind=opts.bind))
            out.write(f"{deployment.name} ready at {deployment.url}; Esc in the monitor comes back to this summary\n")
            out.write(clients_text(served))
        except KtwizardError as exc:
            self.app.call_from_thread(log.write, f"FAILED: {exc.message}")
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        from ktwizard.tui.monitor_app import MonitorScreen

        predicted = plan.predicted_peaks()
        self.app.call_from_thread(
            self.app.push_screen,
            MonitorScreen(
                url=deployment.url,
                container=deployment.name if deployment.kind == "docker" else None,
                predicted=predicted,
                gpus=cast(WizardHost, self.app).gpus,
                deployment=deployment.name,
            ),
        )
