"""Step 4: every rendering, and the launch that follows the server to ready."""

from __future__ import annotations

from typing import TextIO, cast

from rich.text import Text
from textual import on, work
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
from ktwizard.planner.types import Plan
from ktwizard.tui.screens.base import WizardStep
from ktwizard.tui.state import WizardHost


class LaunchScreen(WizardStep):
    launched_plan: Plan | None = None
    STEP = "4 Launch"
    NEXT = False  # the last step: launching is its way on
    BINDINGS = [
        *WizardStep.BINDINGS,
        Binding("ctrl+t", "formats", "formats", key_display="^t"),
        Binding("c", "copy", "copy"),
        Binding("s", "save", "save tab"),
        Binding("l", "launch", "launch"),
        Binding("m", "monitor", "monitor"),
        Binding("b", "routing", "routing"),
        Binding("f", "frequency", "freq. relaunch"),
    ]
    LETTERS = WizardStep.LETTERS | {"copy", "save", "launch", "monitor", "routing", "frequency"}

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        state = cast(WizardHost, self.app).state
        if action in ("monitor", "routing") and state.launched is None:
            return False  # nothing launched yet: no key in the footer
        if action == "frequency" and state.routing is None:
            return False  # nothing recorded yet
        return super().check_action(action, parameters)

    def _headers(self) -> dict[str, str]:
        from ktwizard.apikey import auth_headers
        from ktwizard.urlauth import headers_for

        d = cast(WizardHost, self.app).state.launched
        assert d is not None
        return headers_for(d.url, auth_headers(self.plan.goals.api_key_file))

    def _log(self, line: str) -> None:
        self.app.call_from_thread(self.query_one("#launch-log", RichLog).write, line)

    @work(thread=True, exclusive=True)
    def action_routing(self) -> None:
        """A short decode measurement, then routing recorded on the running server, then the placement verdict."""
        from ktwizard.app.placement import record_routing

        state = cast(WizardHost, self.app).state
        d, plan = state.launched, self.launched_plan
        if d is None or plan is None or not plan.goals.record_routing:
            self._log("routing: nothing launched with the recorder on")
            return
        try:
            done = record_routing(d.url, self._headers(), plan, state.model())
        except KtwizardError as exc:
            self._log(f"routing: {exc.message}")
            return
        state.rate_before, state.routing = done.rate_before, done.path
        self._log(f"decode: {done.rate_before:.1f} tok/s for one stream ({plan.goals.placement} placement)")
        self._log(done.verdict)
        self.app.call_from_thread(self.refresh_bindings)

    def action_frequency(self) -> None:
        """Stop the server and launch it again with frequency placement from the recording; bench it again."""
        from ktwizard.app.placement import frequency_plan

        state = cast(WizardHost, self.app).state
        if state.routing is None or state.launched is None:
            return
        try:  # the recording is read and checked against the model as the command line does
            state.plan = frequency_plan(self.host, state.model(), self.launched_plan or self.plan, state.routing)
        except KtwizardError as exc:
            self.notify(exc.message, severity="error")
            return
        self.relaunch_worker(state.launched.name, self.shown(), state.rate_before)

    @work(thread=True, exclusive=True, group="relaunch")
    def relaunch_worker(self, name: str, plan: Plan, before: float | None) -> None:
        from ktwizard.deploy.stop import stop_deployment

        self._log(stop_deployment(name))
        self.app.call_from_thread(self.launch_worker, plan, before)

    def action_monitor(self) -> None:
        """Back to the monitor of what this wizard launched (Esc there comes back here): the watch `ktwizard monitor
        NAME` opens (app.target), so a native server's log and process are watched too."""
        from ktwizard.app.target import resolve, watch
        from ktwizard.tui.monitor_app import MonitorScreen

        d = cast(WizardHost, self.app).state.launched
        if d is None:
            self.notify("nothing launched yet: l launches", severity="warning")
            return
        try:
            found = resolve(d.name, with_plan=False)
        except KtwizardError as exc:
            self.notify(exc.message, severity="error")
            return
        plan = self.launched_plan or self.plan
        gpus = cast(WizardHost, self.app).gpus
        self.app.push_screen(MonitorScreen(watch(found, gpus=gpus, predicted=plan.predicted_peaks())))

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
            with Vertical(classes="field"):
                yield Label("runner")
                yield Select(
                    [("auto", "auto"), ("Docker", "docker"), ("native", "native")],
                    value="auto",  # Docker when this machine's engine answers, else python -m sglang.launch_server
                    allow_blank=False,
                    id="runner",
                )
        yield Static(id="image-status")
        yield RichLog(id="launch-log", max_lines=400, wrap=True, markup=False, highlight=False)
        yield Footer(compact=True)  # every key fits 80 columns

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#launch-log", RichLog).border_title = "launch log (phases, plan vs actual, peak check, clients)"

    def shown(self) -> Plan:
        """The plan as the options typed below would launch it: name, port, image and environment (a value that
        is not valid yet keeps the plan's own, and says why)."""
        from dataclasses import replace

        from ktwizard.inputs import parse_count, parse_env
        from ktwizard.planner.types import EnvVar
        from ktwizard.render.names import check_name

        plan, problems = self.recording(), []
        goals = plan.goals
        name = self.query_one("#name", Input).value.strip()
        try:
            goals = replace(goals, name=check_name(name) if name else None)
        except KtwizardError as exc:
            problems.append(exc.message)
        port = self.query_one("#port", Input).value.strip()
        try:
            if port:
                goals = replace(goals, port=parse_count(port, "port", 1, 65535))
        except KtwizardError as exc:
            problems.append(exc.message)
        flags = tuple(replace(f, value=goals.port) if f.name == "--port" else f for f in plan.flags)
        image = self.query_one("#image", Input).value.strip() or plan.image
        env = plan.env
        try:
            extra = parse_env([kv for kv in self.query_one("#env", Input).value.split(",") if kv.strip()])
            env = tuple(e for e in env if e.name not in extra) + tuple(
                EnvVar(k, v, "set on the Launch step") for k, v in extra.items()
            )
        except KtwizardError as exc:
            problems.append(exc.message)
        status = self.query_one("#image-status", Static)
        status.update(Text("; ".join(problems), style="red") if problems else "")
        status.display = bool(problems)  # an empty line would take a row from the rendering at 24 rows
        return replace(plan, goals=goals, flags=flags, image=image, env=env)

    def recording(self) -> Plan:
        """The plan a wizard launch runs: with the routing recorder on (as `plan --record-routing DIR` renders it),
        so `b` can suggest a placement from this server's own traffic. Planned through app.planning as the plan step
        is, so the launched plan keeps its bench calibration."""
        from dataclasses import replace

        from ktwizard.app.planning import make_plan
        from ktwizard.bench.routing import placement_dir

        plan = self.plan
        if plan.goals.record_routing:
            return plan
        folder = str(placement_dir() / plan.model.id / "raw")
        return make_plan(self.host, self.state.model(), replace(plan.goals, record_routing=folder))

    @on(Input.Changed, "#name, #port, #image, #env")
    def rerender(self) -> None:
        """The tabs show what `l` will launch, as it is typed."""
        from ktwizard.render.formats import TABS

        plan = self.shown()
        for fmt in TABS:
            try:
                text = fmt.render(plan)
            except KtwizardError as exc:
                text = f"# {exc.message}"
            self.query_one(f"#text-{fmt.name}", TextArea).load_text(text)

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
            self.launch_worker(self.shown())  # exactly what the tabs show

    @work(thread=True, exclusive=True)
    def launch_worker(self, plan: Plan, before: float | None = None) -> None:
        import io

        from ktwizard.app.launch import docker_gpu_problem, launch, runs_natively
        from ktwizard.deploy.runners import launch_options
        from ktwizard.inputs import parse_count, parse_env
        from ktwizard.verify.spec import DEFAULT_TIMEOUT_S

        log = self.query_one("#launch-log", RichLog)
        runner = str(self.query_one("#runner", Select).value)
        gpus = self.query_one("#gpu-mode", Select).value != "none"
        here = self.host if not self.state.host_ref else None  # a recorded host says nothing of this machine
        native, why = runs_natively(runner, gpus, here)
        if why:
            self.app.call_from_thread(log.write, why)
        problem = None if native else docker_gpu_problem(gpus)
        if problem:  # the fix in this step's own fields, not the command line's --gpus none
            fix = f"{problem}: set GPUs to 'none (stand-in)' or the runner to 'native' above, then l again"
            self.app.call_from_thread(log.write, f"FAILED: {fix}")
            self.app.call_from_thread(self.notify, fix, severity="error", timeout=10)
            return
        try:
            port = self.query_one("#port", Input).value.strip()
            opts = launch_options(
                plan,
                name=self.query_one("#name", Input).value.strip() or None,
                port=parse_count(port, "port", 1, 65535) if port else None,
                image=self.query_one("#image", Input).value.strip() or None,
                gpus="plan" if gpus else None,
                env=parse_env([kv for kv in self.query_one("#env", Input).value.split(",") if kv.strip()]),
                native=native,
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
            # the CLI's launch: plan and peak report kept by the record, then verify's checks, each as it runs
            with launch(plan, opts, out=out, verify_timeout=DEFAULT_TIMEOUT_S, on_verdict=checking(out)) as done:
                deployment = done.deployment
            if done.verified is not None:
                out.write(verified_text(done.verified) + "\n")
            from ktwizard.render.clients import clients_text

            out.write(f"{deployment.name} ready at {deployment.url}; Esc in the monitor comes back to this summary\n")
            out.write(clients_text(done.plan))
        except KtwizardError as exc:
            self.app.call_from_thread(log.write, f"FAILED: {exc.message}")
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        cast(WizardHost, self.app).state.launched = deployment
        self.launched_plan = plan  # what runs now: b records with its recorder folder, f relaunches from it
        if before is not None:  # a relaunch to compare: the same measurement as before it
            from ktwizard.app.placement import compare

            try:
                out.write(compare(deployment.url, self._headers(), before, plan.goals.placement) + "\n")
            except KtwizardError as exc:
                out.write(f"decode after the relaunch: {exc.message}\n")
        from textual.worker import get_current_worker

        if get_current_worker().is_cancelled:  # the wizard is closing: no monitor to open under its exit
            return
        self.app.call_from_thread(self.refresh_bindings)
        self.app.call_from_thread(self.action_monitor)


def checking(out: TextIO):
    """verify's progress on the Launch step: the check that starts, then its verdict (and what to try)."""
    from ktwizard.app.verify import line

    def progress(name: str, verdict) -> None:
        out.write((f"verify: checking {name}…" if verdict is None else "verify: " + line(verdict)) + "\n")

    return progress


def verified_text(report) -> str:
    """The verdict of the checks: all passed, or which failed and that each line above says what to try."""
    failed = report.failed
    if not failed:
        return f"verify: every check passed ({len(report.verdicts)})"
    names = ", ".join(v.name for v in failed)
    return (
        f"verify: {len(failed)} of {len(report.verdicts)} checks failed ({names}): the 'try:' under each says what "
        "to change; Esc back to the Plan step (another kt-method, TP 1), then l relaunches"
    )
