"""The wizard's screens: Host -> Model -> Plan -> Launch -> Monitor. Each calls the same functions the CLI does."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Header,
    Input,
    Label,
    Log,
    OptionList,
    Select,
    Static,
    TabbedContent,
    TabPane,
    TextArea,
)
from textual.widgets.option_list import Option

from ktwizard.errors import KtwizardError
from ktwizard.tui.widgets import budget_text, host_cards, warnings_text


class Step(Screen):
    STEP = ""
    BINDINGS = [Binding("escape", "app.back", "back"), Binding("ctrl+n,n", "next", "next", key_display="^n")]

    def on_screen_resume(self) -> None:
        self.app.sub_title = self.STEP

    def on_mount(self) -> None:
        self.app.sub_title = self.STEP

    @property
    def state(self):
        return self.app.state


class HostScreen(Step):
    STEP = "1 Host"
    BINDINGS = [*Step.BINDINGS, Binding("r", "reprobe", "re-probe")]

    def compose(self) -> ComposeResult:
        from ktwizard.host.spec import bundled_hosts

        yield Header(show_clock=False)
        with VerticalScroll():
            yield Select([("this machine (probe)", "")] + [(n, n) for n in bundled_hosts()], prompt="host", value=self.state.host_ref or "", id="host-select", allow_blank=False)
            yield Grid(id="cards")
            yield Static(id="host-warnings")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        if self.state.host is None:
            self.call_after_refresh(self.action_reprobe)  # paint first, then probe (2 cores: do not compete)
        else:
            self.show()

    def show(self) -> None:
        grid = self.query_one("#cards", Grid)
        grid.remove_children()
        for title, body in host_cards(self.state.host):
            card = Static(body, classes="card")
            card.border_title = title
            grid.mount(card)
        self.query_one("#host-warnings", Static).update(warnings_text(self.state.host))

    @work(thread=True, exclusive=True)
    def action_reprobe(self) -> None:
        from ktwizard.host.probe import probe

        host = probe()
        self.app.call_from_thread(self._probed, host, None)

    def _probed(self, host, ref) -> None:
        self.state.host, self.state.host_ref, self.state.plan = host, ref, None
        self.show()

    @on(Select.Changed, "#host-select")
    def pick(self, event: Select.Changed) -> None:
        if (event.value or None) == self.state.host_ref:
            return  # the initial value, or no change
        if event.value in ("", Select.BLANK):
            if self.state.host_ref:
                self.action_reprobe()
            return
        from ktwizard.host.spec import load_host

        self._probed(load_host(str(event.value)), str(event.value))

    def action_next(self) -> None:
        if self.state.host is not None:
            self.app.push_screen(ModelScreen())


class ModelScreen(Step):
    STEP = "2 Model"

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal():
            with Vertical(id="model-left"):
                yield Input(placeholder="search presets", id="search")
                yield OptionList(id="presets")
            with Vertical(id="model-right"):
                yield Label("or a local checkpoint folder")
                yield Input(placeholder="/models/DeepSeek-V3", id="model-dir")
                yield Button("inspect", id="inspect")
                yield Label("weights folder the server loads")
                yield Input(placeholder="/models/...", id="weights")
                yield Static(id="model-info")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.fill("")
        self.query_one("#search", Input).focus()

    def marks(self, preset) -> str:
        from ktwizard.errors import BadInput
        from ktwizard.planner import memory as M
        from ktwizard.planner.methods import choose_method

        host = self.state.host
        try:
            choice = choose_method(preset.spec(), host.cpu.flags, None)
        except BadInput:
            return "  ✗ no CPU method"
        spec = preset.spec()
        ram = M.cpu_bytes_per_expert(spec, choice.method) * spec.routed_experts * spec.moe_layer_count
        return "  ✗ RAM too small" if ram > host.memory.usable else ""

    def fill(self, text: str) -> None:
        from ktwizard.models.presets import all_presets

        ol = self.query_one("#presets", OptionList)
        ol.clear_options()
        for p in all_presets().values():
            if text.lower() in f"{p.id} {p.name} {p.family}".lower():
                s = p.spec()
                fmt = s.expert_format
                short = {"fp8_block": "FP8", "fp8_channel": "FP8/ch", "int4_group": f"INT4 g{fmt.block}"}.get(fmt.kind, fmt.kind.upper())
                ol.add_option(Option(f"{p.id:22} {s.params_total / 1e9:5.0f}B {short:8}{self.marks(p)}", id=p.id))

    @on(Input.Changed, "#search")
    def search(self, event: Input.Changed) -> None:
        self.fill(event.value)

    @on(OptionList.OptionSelected, "#presets")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.state.preset, self.state.model_dir = event.option.id, None
        self.query_one("#model-info", Static).update(f"preset {event.option.id}")
        self.action_next()

    @on(Button.Pressed, "#inspect")
    @work(thread=True, exclusive=True)
    def inspect(self) -> None:
        from ktwizard.models.inspect import inspect_checkpoint

        folder = self.query_one("#model-dir", Input).value.strip()
        try:
            result = inspect_checkpoint(folder)
            msg = Text(f"{result.spec.architecture}: {result.files} files, {result.tensors} tensors, exact bytes\n" + "\n".join(result.notes))
            self.state.model_dir, self.state.preset = folder, None
        except KtwizardError as exc:
            msg = Text(exc.message, style="red")
        self.app.call_from_thread(self.query_one("#model-info", Static).update, msg)

    def action_next(self) -> None:
        weights = self.query_one("#weights", Input).value.strip() or None
        self.state.goals = replace(self.state.goals, weights=weights)
        if self.state.preset or self.state.model_dir:
            self.app.push_screen(PlanScreen())


class PlanScreen(Step):
    STEP = "3 Plan"

    def compose(self) -> ComposeResult:
        g = self.state.goals
        yield Header(show_clock=False)
        with Grid(id="whatif"):
            yield Input(str(g.context or ""), placeholder="context (auto)", id="context")
            yield Input(str(g.concurrency), placeholder="concurrency", id="concurrency")
            yield Input(str(g.gpu_experts if g.gpu_experts is not None else ""), placeholder="GPU experts (auto)", id="gpu-experts")
            yield Input(",".join(map(str, g.gpus)) if g.gpus else "", placeholder="GPUs (all)", id="gpus")
            yield Select([("bf16", "auto"), ("fp8 e4m3", "fp8_e4m3")], value=g.kv_dtype if g.kv_dtype != "bf16" else "auto", allow_blank=False, id="kv")
            yield Select([("native", "")], value="", allow_blank=False, id="method")
        with VerticalScroll():
            yield Static(id="verdict")
            yield Static(id="budget")
            yield Static(id="suggestions")
            yield DataTable(id="flags", zebra_stripes=True, cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        for id_, title in (("context", "context"), ("concurrency", "concurrency"), ("gpu-experts", "GPU experts/layer"), ("gpus", "GPUs"),
                           ("kv", "KV cache"), ("method", "kt-method")):
            self.query_one(f"#{id_}").border_title = title
        self.query_one("#flags", DataTable).add_columns("flag", "value", "why")
        from ktwizard.host.isa import kt_variant
        from ktwizard.planner.methods import runnable

        methods = [m for m in ("RAWINT4", "FP8", "FP8_PERCHANNEL", "BF16", "MXFP4", "AMXINT4", "AMXINT8") if runnable(m, kt_variant(self.state.host.cpu.flags))[0]]
        self.query_one("#method", Select).set_options([("native", "")] + [(m, m) for m in methods])
        self.replan()

    def goals(self):
        from ktwizard.inputs import parse_gpus

        def num(id_: str) -> int | None:
            v = self.query_one(f"#{id_}", Input).value.strip()
            return int(v) if v else None

        method = self.query_one("#method", Select).value
        return replace(self.state.goals, context=num("context"), concurrency=num("concurrency") or 1, gpu_experts=num("gpu-experts"),
                       gpus=parse_gpus(self.query_one("#gpus", Input).value.strip() or None),
                       kv_dtype=str(self.query_one("#kv", Select).value), method=str(method) if method else None)

    @on(Input.Changed)
    @on(Select.Changed)
    def changed(self) -> None:
        if self.is_mounted:
            self.replan()

    def replan(self) -> None:
        from ktwizard.planner.core import plan
        from ktwizard.render.table import verdict

        verdict_w = self.query_one("#verdict", Static)
        try:
            goals = self.goals()
            model = self.state.model()
            result = plan(self.state.host, model.spec, goals, model.hints, model.recipe)
        except ValueError:
            verdict_w.update(Text("give whole numbers for context, concurrency and GPU experts", style="red"))
            return
        except KtwizardError as exc:
            verdict_w.update(Text(exc.message, style="red"))
            return
        self.state.goals, self.state.plan = goals, result
        verdict_w.update(Text(verdict(result) + "".join(f"\n  ! {o}" for o in result.overflows), style="bold green" if result.fits else "bold red"))
        self.query_one("#budget", Static).update(budget_text(result, width=max(16, min(60, self.size.width - 34))))
        sug = Text("\n".join(f"try {s.change}: {s.effect}" for s in result.suggestions)) if result.suggestions else Text("")
        self.query_one("#suggestions", Static).update(sug)
        table = self.query_one("#flags", DataTable)
        table.clear()
        for f in result.flags:
            table.add_row(f.name, "" if f.value is True else str(f.value), f.why)

    def action_next(self) -> None:
        if self.state.plan is not None and self.state.plan.fits:
            self.app.push_screen(LaunchScreen())


FORMATS = ("args", "shell", "docker", "compose", "clients")


class LaunchScreen(Step):
    STEP = "4 Launch"
    BINDINGS = [*Step.BINDINGS, Binding("c", "copy", "copy"), Binding("s", "save", "save to file"), Binding("l", "launch", "launch")]

    def compose(self) -> ComposeResult:
        from ktwizard.render.formats import render

        plan = self.state.plan
        yield Header(show_clock=False)
        with TabbedContent(id="formats"):
            for fmt in FORMATS:
                with TabPane(fmt, id=f"tab-{fmt}"):
                    yield TextArea(render(plan, fmt), read_only=True, id=f"text-{fmt}")
        with Horizontal(id="launch-opts"):
            yield Input(plan.image or "", placeholder="image", id="image")
            yield Input(f"ktwizard-{plan.model.id}".replace(".", "-"), placeholder="name", id="name")
            yield Select([("GPUs from the plan", "plan"), ("no GPUs (stand-in)", "none")], value="plan", allow_blank=False, id="gpu-mode")
            yield Input(str(plan.goals.port), placeholder="port", id="port")
            yield Input("", placeholder="extra env K=V,K=V", id="env")
        yield Static(id="image-status")
        yield Log(id="launch-log", max_lines=200)
        yield Footer()

    def current(self) -> str:
        tab = self.query_one("#formats", TabbedContent).active or "tab-args"
        return self.query_one(f"#text-{tab[4:]}", TextArea).text

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.current())
        self.notify("copied to the clipboard")

    def action_save(self) -> None:
        from ktwizard.serial import write_atomic
        from ktwizard.tui.state import profiles_dir

        tab = (self.query_one("#formats", TabbedContent).active or "tab-args")[4:]
        path = profiles_dir().parent / "rendered" / f"{self.state.plan.model.id}.{tab}"
        write_atomic(path, self.current())
        self.notify(f"saved {path}")

    def action_launch(self) -> None:
        self.launch_worker()

    @work(thread=True, exclusive=True)
    def launch_worker(self) -> None:
        import io

        from ktwizard.deploy.docker_proc import start_container
        from ktwizard.deploy.launch import LaunchOptions, follow_startup

        plan = self.state.plan
        env = dict(kv.split("=", 1) for kv in self.query_one("#env", Input).value.split(",") if "=" in kv)
        mode = self.query_one("#gpu-mode", Select).value
        port = int(self.query_one("#port", Input).value.strip() or plan.goals.port)
        opts = LaunchOptions(name=self.query_one("#name", Input).value.strip(), port=port, bind=plan.goals.bind,
                             image=self.query_one("#image", Input).value.strip() or None, gpus=None if mode == "none" else "plan", yes=True, env=env)
        log = self.query_one("#launch-log", Log)

        class Lines(io.TextIOBase):
            def write(self, s: str) -> int:
                for line in s.splitlines():
                    if line.strip():
                        self_app.call_from_thread(log.write_line, line)
                return len(s)

        self_app = self.app
        try:
            proc = start_container(plan, opts, out=Lines())
            deployment, _ = follow_startup(proc, plan, opts, out=Lines())
        except KtwizardError as exc:
            self.app.call_from_thread(log.write_line, f"FAILED: {exc.message}")
            self.app.call_from_thread(self.notify, exc.message, severity="error", timeout=10)
            return
        from ktwizard.tui.monitor_app import MonitorScreen

        predicted = {b.gpu: sum(i.bytes for i in b.items if i.name != "headroom") for b in plan.gpu_budgets}
        self.app.call_from_thread(self.app.push_screen, MonitorScreen(url=deployment.url, container=deployment.name if deployment.kind == "docker" else None,
                                                                       predicted=predicted, gpus=self.app.gpus))
