"""plan(): HostProfile x ModelSpec x Goals -> Plan. Pure and fast: no I/O, closed-form arithmetic."""

from __future__ import annotations

from dataclasses import replace
from math import ceil
from typing import TYPE_CHECKING

from ktwizard.errors import BadInput
from ktwizard.families.registry import of as family_of
from ktwizard.host.imagetag import local_image
from ktwizard.host.profile import GPU, HostProfile
from ktwizard.models.presets import Recipe, SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.calibration import Calibration, factor_for, host_key, key_of
from ktwizard.planner.convert import conversion
from ktwizard.planner.flags import build_env, build_flags
from ktwizard.planner.goal_checks import gpus_for, validate
from ktwizard.planner.memory import host_budget
from ktwizard.planner.memory.budget import HostBudget, host_blocks
from ktwizard.planner.memory.sizing import Sizing
from ktwizard.planner.methods import LAYERWISE, LAYERWISE_GAPS, MethodChoice, choose_method, layerwise_supported
from ktwizard.planner.threads import ThreadPlan, plan_threads
from ktwizard.planner.types import Flag, Goals, GpuBudget, ModelRef, Plan
from ktwizard.planner.weights import download
from ktwizard.runtime import kernel_table, kernels, rules
from ktwizard.runtime.catalog import check_flags
from ktwizard.units import human

if TYPE_CHECKING:  # a routing recording's reader (zipfile, its unpickler) loads only where a recording is read
    from ktwizard.models.routing import RoutingCounts

AUTO_CONTEXT_CAP = 131072
MIN_CONTEXT = 4096
RATED_MEMORY = "the forecast's CPU side reads the host memory at its rating, not measured"
MEASURE_MEMORY = (
    "`ktwizard probe --bandwidth` measures it, or a host spec's memory.measured carries a measurement (memory can run "
    "far below its rating: ktransformers#1730's read at a quarter of it, docs/forecast.md)"
)


def _layerwise(spec: ModelSpec, choice: MethodChoice, goals: Goals) -> tuple[bool, Notice | None]:
    ok, reason = layerwise_supported(spec, choice.method)
    if goals.layerwise_prefill and not ok:
        raise BadInput(f"--layerwise-prefill: {reason}")
    if goals.layerwise_prefill is None and not ok and (choice.method in LAYERWISE or choice.method in LAYERWISE_GAPS):
        return False, Notice("info", f"Layerwise prefill is off: {reason}", "long prompts prefill on the CPU")
    return ok if goals.layerwise_prefill is None else goals.layerwise_prefill, None


def _auto(
    spec: ModelSpec, goals: Goals, gpus: tuple[GPU, ...], choice: MethodChoice, backend: str | None
) -> tuple[Sizing, list[Notice]]:
    """Settle layerwise prefill and the context length when the user left them to ktwizard."""
    want_layerwise, note = _layerwise(spec, choice, goals)
    notes = [note] if note else []
    context = goals.context or min(spec.max_context or AUTO_CONTEXT_CAP, AUTO_CONTEXT_CAP)

    def size(layerwise: bool, ctx: int) -> Sizing:
        return Sizing(spec, goals, gpus, choice.method, layerwise, ctx, backend)

    sizing = size(want_layerwise, context)
    if sizing.max_experts() < 0 and want_layerwise and goals.layerwise_prefill is None:
        alt = size(False, context)
        if alt.max_experts() >= 0:
            notes.append(
                Notice(
                    "warn",
                    "Layerwise prefill is off: one full MoE layer "
                    f"({human(ceil(spec.layer_routed_bytes / len(gpus)))} per GPU) does not fit",
                    "long prompts prefill on the CPU (slower); add a GPU or shorten the context to turn it on",
                )
            )
            sizing = alt
    if sizing.max_experts() < 0 and goals.context is None:
        # Shrink the context before refusing (peer-memory-estimators §5.2 rule 7), by bisection in 1024-token
        # steps: every phase grows with the context, so the longest that fits is one boundary.
        lo, hi = MIN_CONTEXT // 1024, context // 1024
        if size(sizing.layerwise, lo * 1024).max_experts() >= 0:
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if size(sizing.layerwise, mid * 1024).max_experts() >= 0 else (lo, mid - 1)
            sizing = size(sizing.layerwise, lo * 1024)
            notes.append(
                Notice(
                    "warn",
                    f"Context shortened to {sizing.context} tokens so that {goals.concurrency} request(s) fit in GPU "
                    "memory",
                    "add GPU memory, use --kv-dtype fp8_e4m3, or lower --concurrency for longer contexts",
                )
            )
    return sizing, notes


def plan(
    host: HostProfile,
    spec: ModelSpec,
    goals: Goals,
    hints: SglangHints | None = None,
    recipe: Recipe | None = None,
    trial: bool = False,
    calibrations: tuple[Calibration, ...] = (),
    routing: RoutingCounts | None = None,
    advise: bool = True,
) -> Plan:
    """The plan. `trial=True` is the fit search asking only whether goals fit: no forecast, layer-wise placement or
    nested search is made for it. `advise=False` leaves out what trial plans of other goals would say (big wins, the
    changes that would fit): the same plan, made in a fraction of the time, for a what-if field as it is typed."""
    validate(goals, spec)
    gpus, tp_note = gpus_for(host, goals, spec)
    hints = hints or SglangHints()
    if goals.tool_call_parser or goals.reasoning_parser:  # chosen over the model's own (verify's relaunch)
        hints = replace(
            hints,
            tool_call_parser=goals.tool_call_parser or hints.tool_call_parser,
            reasoning_parser=goals.reasoning_parser or hints.reasoning_parser,
        )
    choice: MethodChoice = choose_method(spec, host.cpu.flags, goals.method)
    sizing, notes = _auto(spec, goals, gpus, choice, hints.attention_backend)
    if tp_note:
        notes.insert(0, tp_note)
    fit = sizing.fit()
    gpu_experts = goals.gpu_experts if goals.gpu_experts is not None else max(0, fit.experts)
    budgets = tuple(sizing.budget(g, rank, gpu_experts) for rank, g in enumerate(gpus))
    mfs = sizing.mem_fraction_static(gpu_experts)
    threads = plan_threads(host)
    host_budgets = host_budget.host_budgets(
        host, spec, choice.method, threads, len(gpus), sizing.chunk, sizing.layerwise, gpu_experts
    )
    flags, why_notes = build_flags(spec, goals, hints, recipe, choice, sizing, threads, gpu_experts, mfs, gpus)
    check_flags(flags)
    overflows = _overflows(spec, choice.method, gpus, goals.kv_dtype or "auto", flags, budgets, host_budgets)
    notes += why_notes + _notes(goals, choice, sizing, budgets, gpus, threads, host.memory.total)
    fetch = download(spec, _model_path(goals, spec), host.disk)
    if fetch is not None:
        notes.insert(0, fetch)
    result = Plan(
        model=_model_ref(spec),
        host=host.hostname or host.source,
        goals=goals,
        method=choice.method,
        tp=len(gpus),
        gpus=tuple(g.index for g in gpus),
        gpu_experts=gpu_experts,
        max_total_tokens=sizing.pool.max_total_tokens,
        mem_fraction_static=mfs,
        flags=flags,
        env=build_env(gpus, threads, choice, goals.record_routing, spec),
        gpu_budgets=budgets,
        host_budgets=host_budgets,
        fits=fit.experts >= 0 and not overflows,
        overflows=tuple(overflows),
        notices=tuple(notes),
        image=goals.image or local_image(host, choice.cpu_variant),
        model_path=_model_path(goals, spec),
        served_name=str(next(f.value for f in flags if f.name == "--served-model-name")),
        binding=f"GPU {fit.gpu}, {fit.phase}" if fit.phase else "",
        host_key=host_key(host),
    )
    if trial:
        return result
    if result.fits:  # a plan that does not fit runs at no speed: it gets no forecast
        result = _with_forecast(result, host, spec, sizing.context, calibrations, routing)
    if family_of(spec).layer_placement(spec):
        from ktwizard.planner.memory.layers import place_layers

        result = replace(result, layers=place_layers(host, spec, result.gpus, sizing.context, goals.concurrency))
    return _advised(result, host, spec, hints, recipe) if advise else result


def _overflows(
    spec: ModelSpec,
    method: str,
    gpus: tuple[GPU, ...],
    kv_dtype: str,
    flags: tuple[Flag, ...],
    budgets: tuple[GpuBudget, ...],
    host_budgets: tuple[HostBudget, ...],
) -> list[str]:
    """Why the plan cannot run, the gravest first: what the runtime refuses before loading, at load or at the first
    forward, then each GPU and host memory region that is over (a plan with any exits 3, with no speed)."""
    capabilities = tuple(g.compute_capability for g in gpus)
    family = family_of(spec)
    refusals: list[str | None] = [
        family.gpu_problem(spec, capabilities),  # the family's own GPU list (GLM-5-Next)
        *reversed(family.start_problems(spec, method, capabilities, kv_dtype)),  # its start-up rules
        kernels.gpu_problem(spec, capabilities),  # the checkpoint's format on this GPU, refused at load
        rules.startup_problem(spec),  # the runtime stops before loading anything
        rules.loader_problem(spec, method),  # the plan cannot run whatever the memory says
    ]
    if not refusals[0] and not refusals[-3]:  # else it never reaches a kernel
        rendered = {f.name: f.value for f in flags}
        refusals.insert(0, kernel_table.arch_problem(spec, rendered, capabilities))  # dies at the first forward (#49)
    memory = [
        f"GPU {b.gpu} ({b.name}) is over at the {b.binding} phase by {human(b.margin - b.free)}: "
        f"{human(b.used)} needed of {human(b.total)}, {human(b.margin)} kept free"
        for b in budgets
        if not b.fits
    ]
    return [p for p in refusals if p] + memory + _host_overflows(host_budgets)


def _host_overflows(host_budgets: tuple[HostBudget, ...]) -> list[str]:
    out = []
    for label, hb in host_blocks(host_budgets):
        where, _, node = label.partition(" = ")  # "host RAM = NUMA node 0": one node, one figure for both
        if not hb.fits:
            # fits once loaded, not while loading: the kernel's OOM killer ends the server on the last layers
            loading = hb.item("loader peak (one layer)")
            when = (
                " only while loading (the OOM killer would end the server mid-load: kt-kernel holds one layer's "
                "loader tensors and staging on top of the loaded layers)"
            )
            out.append(
                f"{where} is over by {human(-hb.free)}{when if hb.free + loading >= 0 else ''}: {human(hb.used)} "
                f"needed of {human(hb.capacity)} usable"
                + (f" ({node}, the only node, is the same RAM)" if node else "")
            )
    return out


def _model_ref(spec: ModelSpec) -> ModelRef:
    return ModelRef(
        id=spec.id,
        name=spec.name or spec.id,
        source=spec.source,
        exact=spec.exact,
        architecture=spec.architecture,
        routed_experts=spec.routed_experts,
    )


def _with_forecast(
    result: Plan,
    host: HostProfile,
    spec: ModelSpec,
    context: int,
    calibrations: tuple[Calibration, ...],
    routing: RoutingCounts | None,
) -> Plan:
    """The plan with its decode and prefill forecast, corrected only by a bench of exactly its key."""
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.model import forecast

    goals = result.goals
    hit = None
    if routing is not None:  # the GPU's share of routed calls under the plan's placement, from the recording
        from ktwizard.planner.placement import placement_report

        report = placement_report(routing, spec, result.gpu_experts, goals.expert_stats or "routing file")
        hit = report.frequency if goals.placement == "frequency" else report.uniform
    setup = setup_from_plan(host, spec, result, hit)  # what is rendered: chunk, threshold, threads, pools
    cal = factor_for(key_of(result), calibrations)
    fc = forecast(setup, context, goals.concurrency, cal.decode if cal else 1.0, cal.line if cal else "")
    result = replace(result, forecast=fc)
    if not fc.gpu_known:  # never a silent assumption: the plan says what it took for a card it does not know
        fix = (
            "probe the host itself (NVML's memory bus width and clock give the bandwidth), or state "
            "memory_bus_width and memory_clock_mhz for the card in the host spec"
        )
        result = replace(result, notices=(*result.notices, Notice("warn", fc.gpu_note, fix)))
    if setup.measured_bps is None:  # nor for the memory: its rating is all the CPU side rests on
        result = replace(result, notices=(*result.notices, Notice("info", RATED_MEMORY, MEASURE_MEMORY)))
    return result


def _advised(result: Plan, host: HostProfile, spec: ModelSpec, hints: SglangHints, recipe: Recipe | None) -> Plan:
    """The plan with what trial plans of other goals say: the changes that would fit, or the big wins."""
    from ktwizard.planner import wins

    goals = result.goals
    replan = lambda g: plan(host, spec, g, hints, recipe, trial=True)  # noqa: E731
    if not result.fits:
        from ktwizard.planner.fit import suggest

        trial_of = lambda h, sp, g, hi: plan(h, sp, g, hi, trial=True)  # noqa: E731
        hints_now = wins.fitting_alternatives(host, spec, goals, trial_of)
        suggestions = tuple(suggest(host, spec, goals, replan))
        return replace(result, suggestions=suggestions, notices=(*result.notices, *hints_now))
    found = (
        wins.method_wins(host, spec, result, replan)
        + wins.context_wins(host, spec, result, replan)
        + wins.chunk_wins(host, spec, result, replan)
    )
    return replace(result, notices=(*result.notices, *found))


def _notes(
    goals: Goals,
    choice: MethodChoice,
    sizing: Sizing,
    budgets: tuple[GpuBudget, ...],
    gpus: tuple[GPU, ...],
    threads: ThreadPlan,
    ram_total: int,
) -> list[Notice]:
    notes = []
    convert = conversion(sizing.spec, choice, goals, threads, ram_total)
    if convert is not None:
        notes.append(convert)
    if not goals.weights:
        notes.append(
            Notice(
                "info",
                "No --weights folder given: the rendered paths are placeholders",
                "pass --weights DIR (the checkpoint folder) to render runnable commands",
            )
        )
    guessed = [g for g in gpus if g.memory_total_estimated]
    if guessed:
        notes.append(
            Notice(
                "warn",
                f"GPU {', '.join(str(g.index) for g in guessed)} ({guessed[0].name}) is not a card ktwizard knows: "
                f"its total is an estimate ({human(guessed[0].memory_total)}, the stated size less 1/16 for ECC and "
                "the driver)",
                "plan on the machine itself (ktwizard probe --save) for the total NVML reports",
            )
        )
    if not sizing.backend_known and sizing.spec.attention.mla:
        notes.append(
            Notice(
                "info",
                "No attention backend is set for this model: budgeted as flashinfer (its workspace and long-prompt "
                "K/V decompression)",
                "the budget holds for SGLang's other backends too",
            )
        )
    mla = sum(i.bytes for i in budgets[0].items if i.name == "MLA prefix K/V")
    if mla and budgets[0].binding == "longest prompt":
        notes.append(
            Notice(
                "info",
                f"Long prompts decompress {human(mla)} of K/V per GPU for attention over the prefix "
                f"({sizing.backend}); that phase limits the GPU experts",
                "--attention-backend triton or --disable-chunked-prefix-cache avoids it at some prefill speed",
            )
        )
    return notes


def _model_path(goals: Goals, spec: ModelSpec) -> str:
    return goals.weights or f"/models/{spec.id}"
