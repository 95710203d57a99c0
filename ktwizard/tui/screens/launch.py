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
    offers: tuple = ()  # app/relaunch.Offer: what the failed checks suggest relaunching with, re-planned
    tried: frozenset = frozenset()  # (option, value) pairs the relaunches ran: never offered back
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
        Binding("r", "relaunch_fix", "relaunch with fix"),
    ]
    LETTERS = WizardStep.LETTERS | {"copy", "save", "launch", "monitor", "routing", "frequency", "relaunch_fix"}

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        state = cast(WizardHost, self.app).state
        if action in ("monitor", "routing") and state.launched is None:
            return False  # nothing launched yet: no key in the footer
        if action == "frequency" and state.routing is None:
            return False  # nothing recorded yet
        if action == "relaunch_fix" and not (self.offers and state.launched is not None):
            return False  # no failed check with a fix that plans
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

    def action_relaunch_fix(self) -> None:
        """A failed check's fix: choose one, then the server is stopped and launched with the plan re-made with it."""
        from ktwizard.tui.confirm import Choose

        d = self.state.launched
        if not self.offers or d is None:
            return
        question = f"Verify failed. Stop {d.name} and launch it again, re-planned with one change:"
        labels = [f"relaunch with {o.change.label} (for {o.check})" for o in self.offers]
        self.app.push_screen(Choose(question, labels), self._fix_chosen)

    def _fix_chosen(self, index: int | None) -> None:
        d = self.state.launched
        if index is None or d is None or not 0 <= index < len(self.offers):
            return
        from ktwizard.app.relaunch import served

        offer, self.offers = self.offers[index], ()
        change, before = offer.change, self.launched_plan or self.plan
        self.tried |= {(change.option, change.value), (change.option, served(before, change.option))}
        self.state.plan = offer.plan  # the Plan step shows what runs now
        self.refresh_bindings()
        self.query_one("#launch-log", RichLog).write(f"relaunching {d.name} with {offer.change.label}")
        self.relaunch_worker(d.name, self.dress(offer.plan), None)

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
        return self.dress(self.recording(), show=True)

    def dress(self, plan: Plan, show: bool = False) -> Plan:
        """`plan` with the options typed below (a value not valid yet keeps the plan's own; `show`: say why)."""
        from dataclasses import replace

        from ktwizard.inputs import parse_count, parse_env
        from ktwizard.planner.types import EnvVar
        from ktwizard.render.names import check_name

        problems: list[str] = []
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
        if show:
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
        """A launch loads hundreds of GB (and may download and convert them first): it asks first."""
        from ktwizard.tui.confirm import Confirm
        from ktwizard.tui.screens.launching import question, wizard_fetch

        fetch = wizard_fetch(self.state, self.plan)
        name = self.query_one("#name", Input).value.strip()
        ask = question(self.plan, name, fetch, self.state.model().spec)
        self.app.push_screen(Confirm(ask, yes="Launch"), lambda yes: self._confirmed(yes, fetch))

    def _confirmed(self, yes: bool | None, fetch=None) -> None:
        if yes:
            self.launch_worker(self.shown(), fetch=fetch)  # exactly what the tabs show

    @work(thread=True, exclusive=True)
    def launch_worker(self, plan: Plan, before: float | None = None, fetch=None) -> None:
        from ktwizard.app.chain import chain
        from ktwizard.app.launch import docker_gpu_problem, runs_natively
        from ktwizard.app.planning import make_plan
        from ktwizard.app.relaunch import offers
        from ktwizard.deploy.runners import launch_options
        from ktwizard.inputs import parse_count, parse_env
        from ktwizard.tui.screens.launching import EventLog, verified_text
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
        port = self.query_one("#port", Input).value.strip()
        name = self.query_one("#name", Input).value.strip() or None
        image = self.query_one("#image", Input).value.strip() or None
        env = [kv for kv in self.query_one("#env", Input).value.split(",") if kv.strip()]

        def options(made: Plan):
            return launch_options(
                made,
                name=name,
                port=parse_count(port, "port", 1, 65535) if port else None,
                image=image,
                gpus="plan" if gpus else None,
                env=parse_env(env),
                native=native,
            )

        try:
            options(plan)
        except KtwizardError as exc:
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        view = EventLog(self.app, log)
        model = self.state.model()
        host, here_host = self.host, (None if self.state.host_ref else self.host)
        try:
            out = cast(TextIO, view.lines())
            # the CLI's launch --download: download and convert where needed, launch (plan and peak report kept by
            # the record), then verify's checks, each as it runs (app/chain)
            with chain(
                plan, lambda g: self.dress(make_plan(host, model, g)), options, fetch=fetch, on_event=view.show,
                host=here_host, out=out, verify_timeout=DEFAULT_TIMEOUT_S,
            ) as done:  # fmt: skip
                deployment = done.deployment
            found = offers(done.verified, done.plan, lambda g: make_plan(host, model, g), self.tried)
            if done.verified is not None:
                out.write(verified_text(done.verified, found) + "\n")
            from ktwizard.render.clients import clients_text

            out.write(f"{deployment.name} ready at {deployment.url}; Esc in the monitor comes back to this summary\n")
            out.write(clients_text(done.plan))
        except KtwizardError as exc:
            self.app.call_from_thread(log.write, f"FAILED: {exc.message}")
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        cast(WizardHost, self.app).state.launched = deployment
        self.launched_plan = done.plan  # what runs now: b records with its recorder folder, f relaunches from it
        self.offers = found
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
        if found:  # stay here: r relaunches with a fix
            fix = f"verify failed: r relaunches with {found[0].change.label}" + (" (or another)" if found[1:] else "")
            self.app.call_from_thread(self.notify, fix, severity="warning", timeout=10)
            return
        self.app.call_from_thread(self.action_monitor)
