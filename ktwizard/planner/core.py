"""plan(): HostProfile x ModelSpec x Goals -> Plan. Pure and fast: no I/O, closed-form arithmetic."""

from __future__ import annotations

from dataclasses import replace
from math import ceil

from ktwizard.errors import BadInput
from ktwizard.host.checks import numa_memory_trustworthy
from ktwizard.host.profile import GPU, HostProfile
from ktwizard.models.presets import Recipe, SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner import constants as C
from ktwizard.planner import memory as M
from ktwizard.planner.catalog import check_flags
from ktwizard.planner.flags import build_env, build_flags
from ktwizard.planner.methods import LAYERWISE, MethodChoice, choose_method
from ktwizard.planner.sizing import Sizing
from ktwizard.planner.threads import ThreadPlan, plan_threads
from ktwizard.planner.types import BudgetItem, Goals, GpuBudget, HostBudget, ModelRef, Plan
from ktwizard.units import human

AUTO_CONTEXT_CAP = 131072
MIN_CONTEXT = 4096


def _validate(goals: Goals, spec: ModelSpec) -> None:
    if goals.concurrency < 1 or goals.concurrency > 4096:
        raise BadInput(f"--concurrency {goals.concurrency}: give 1 to 4096 concurrent requests")
    if goals.context is not None:
        if goals.context < 1:
            raise BadInput(f"--context {goals.context}: the context length must be at least 1 token")
        if spec.max_context and goals.context > spec.max_context:
            raise BadInput(
                f"--context {goals.context}: {spec.name or spec.id} supports at most {spec.max_context} tokens"
            )
    if goals.gpu_experts is not None and not 0 <= goals.gpu_experts <= spec.routed_experts:
        raise BadInput(
            f"--gpu-experts {goals.gpu_experts}: a MoE layer has {spec.routed_experts} routed experts; give 0 to "
            f"{spec.routed_experts}"
        )
    if goals.kv_dtype not in ("auto", "bf16", "fp8_e4m3"):
        raise BadInput(f"--kv-dtype {goals.kv_dtype}: use auto, bf16 or fp8_e4m3")
    if not 1 <= goals.port <= 65535:
        raise BadInput(f"--port {goals.port}: not a TCP port")


def _gpus(host: HostProfile, goals: Goals, spec: ModelSpec) -> tuple[GPU, ...]:
    by_index = {g.index: g for g in host.gpus.devices}
    if goals.gpus is None:
        chosen = host.visible_gpus
        if not chosen:
            raise BadInput(
                f"no GPU to plan for ({host.gpus.reason or 'none found'}); SGLang-KT keeps attention on a GPU. "
                "Plan for another machine with --host (a saved profile, a bundled name or a hand-written spec)"
            )
    else:
        if not goals.gpus:
            raise BadInput("--gpus: name at least one GPU; SGLang-KT keeps attention on a GPU")
        missing = [i for i in goals.gpus if i not in by_index]
        if missing:
            have = ", ".join(map(str, sorted(by_index))) or "none"
            raise BadInput(f"--gpus: GPU {missing[0]} does not exist on this host (GPUs: {have})")
        chosen = tuple(by_index[i] for i in goals.gpus)
    tp = len(chosen)
    heads = spec.attention.heads
    if heads % tp:
        raise BadInput(
            f"--gpus: {tp} GPUs do not divide the model's {heads} attention heads; use a divisor of {heads} (1, 2, "
            "4, 8)"
        )
    if spec.attention.kind == "gqa" and spec.attention.kv_heads % tp and tp % spec.attention.kv_heads:
        raise BadInput(f"--gpus: {tp} GPUs and {spec.attention.kv_heads} KV heads cannot be split evenly")
    return chosen


def _auto(host, spec, goals, gpus, choice) -> tuple[Sizing, list[Notice]]:
    """Settle layerwise prefill and the context length when the user left them to ktwizard."""
    notes: list[Notice] = []
    layerwise_ok = choice.method in LAYERWISE
    want_layerwise = layerwise_ok if goals.layerwise_prefill is None else goals.layerwise_prefill
    if goals.layerwise_prefill and not layerwise_ok:
        raise BadInput(f"--layerwise-prefill: {choice.method} has no layerwise prefill path (native methods only)")
    context = goals.context or min(spec.max_context or AUTO_CONTEXT_CAP, AUTO_CONTEXT_CAP)
    sizing = Sizing(host, spec, goals, gpus, choice.method, want_layerwise, context)
    if sizing.max_experts() < 0 and want_layerwise and goals.layerwise_prefill is None:
        alt = Sizing(host, spec, goals, gpus, choice.method, False, context)
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
        # Shrink the context before refusing (peer-memory-estimators §5.2 rule 7) and say so.
        room = min(sizing.expert_room(g) + sum(i.bytes for i in sizing.kv()) for g in gpus)
        tokens = room // sizing.cell // goals.concurrency // 1024 * 1024
        if tokens >= MIN_CONTEXT:
            sizing = Sizing(host, spec, goals, gpus, choice.method, sizing.layerwise, tokens)
            while sizing.max_experts() < 0 and sizing.context > MIN_CONTEXT:  # chunk size follows the context
                sizing = Sizing(host, spec, goals, gpus, choice.method, sizing.layerwise, sizing.context - 1024)
            notes.append(
                Notice(
                    "warn",
                    f"Context shortened to {sizing.context} tokens so that {goals.concurrency} request(s) fit in GPU "
                    "memory",
                    "add GPU memory, use --kv-dtype fp8_e4m3, or lower --concurrency for longer contexts",
                )
            )
    return sizing, notes


def _host_budgets(
    host: HostProfile, spec: ModelSpec, method: str, threads: ThreadPlan, tp: int, chunk: int
) -> tuple[HostBudget, ...]:
    per_expert = M.cpu_bytes_per_expert(spec, method)
    all_experts = per_expert * spec.routed_experts * spec.moe_layer_count
    usable = host.memory.usable
    nodes = [n for n in host.numa_nodes if n.id in threads.nodes] or list(host.numa_nodes)
    trust = numa_memory_trustworthy(host) and not host.memory.cgroup_limit
    share = usable // max(1, len(host.numa_nodes))
    budgets = []
    os_reserve = max(C.OS_RESERVE_MIN, int(usable * C.OS_RESERVE_FRACTION))
    for n in nodes:
        cap = min(n.memory_total, share * 2) if trust and n.memory_total else share
        items = [
            BudgetItem(
                "CPU experts",
                all_experts // len(nodes),
                f"all {spec.routed_experts} x {spec.moe_layer_count} routed experts in {method} layout "
                f"({per_expert} B each), split over {len(nodes)} thread pool(s); RAM holds every expert whatever "
                "--kt-num-gpu-experts",
                "weights",
            ),
            BudgetItem(
                "OS share",
                os_reserve // len(host.numa_nodes),
                "kernel, page tables and other services: max(4 GiB, 4 %) over the nodes",
                "before",
                True,
            ),
        ]
        budgets.append(HostBudget(node=n.id, capacity=cap, items=tuple(items)))
    whole = [
        BudgetItem("CPU experts", all_experts, "sum over the NUMA nodes", "weights"),
        BudgetItem(
            "KT pinned buffers",
            C.KT_SHM_EXPERTS * 3 * per_expert * tp + chunk * spec.hidden * 2 * tp,
            "double-buffered experts in /dev/shm per TP rank (pinned) + pinned staging",
            "weights",
        ),
        BudgetItem(
            "server process",
            C.HOST_PROCESS,
            "Python, torch, CUDA and NCCL host libraries of the SGLang process",
            "before",
            True,
        ),
        BudgetItem(
            "page cache while loading",
            C.LOAD_PAGE_CACHE,
            "safetensors shards stream through the page cache at load",
            "weights",
            True,
        ),
        BudgetItem("OS reserve", os_reserve, "kernel, page tables and other services: max(4 GiB, 4 %)", "before", True),
    ]
    return (HostBudget(node=-1, capacity=usable, items=tuple(whole)), *budgets)


def plan(
    host: HostProfile, spec: ModelSpec, goals: Goals, hints: SglangHints | None = None, recipe: Recipe | None = None
) -> Plan:
    _validate(goals, spec)
    gpus = _gpus(host, goals, spec)
    choice: MethodChoice = choose_method(spec, host.cpu.flags, goals.method)
    sizing, notes = _auto(host, spec, goals, gpus, choice)
    tp = len(gpus)
    n_max = sizing.max_experts()
    fits = n_max >= 0
    gpu_experts = goals.gpu_experts if goals.gpu_experts is not None else max(0, min(n_max, spec.routed_experts))
    if goals.gpu_experts is not None and goals.gpu_experts > n_max:
        fits = False
    overflows: list[str] = []
    budgets = []
    mfs = 1.0
    for g in gpus:
        fixed, dyn, kv = sizing.fixed(g), sizing.dynamic(g), sizing.kv()
        experts = [
            BudgetItem(
                "GPU experts",
                M.gpu_expert_bytes(spec, gpu_experts, tp),
                f"{gpu_experts} per MoE layer x {spec.moe_layer_count} layers x {spec.expert_bytes_native} B "
                f"({spec.expert_format.describe()})" + (f" ÷ {tp} TP" if tp > 1 else ""),
                "weights",
            )
        ]
        b = GpuBudget(gpu=g.index, name=g.name, total=g.memory_total, items=tuple(fixed + experts + kv + dyn))
        budgets.append(b)
        if not b.fits:
            overflows.append(
                f"GPU {g.index} ({g.name}) is over by {human(-b.free)}: {human(b.used)} needed of {human(b.total)}"
            )
        dyn_bytes = sum(i.bytes for i in dyn)
        mfs = min(mfs, int((g.memory_total - dyn_bytes) / g.memory_total * 1000) / 1000)
    threads = plan_threads(host)
    host_budgets = _host_budgets(host, spec, choice.method, threads, tp, sizing.chunk)
    for hb in host_budgets:
        if not hb.fits:
            where = "host RAM" if hb.node < 0 else f"NUMA node {hb.node}"
            overflows.append(
                f"{where} is over by {human(-hb.free)}: {human(hb.used)} needed of {human(hb.capacity)} usable"
            )
            fits = False
    if not fits and not overflows:
        need = -sizing.expert_room(min(gpus, key=lambda g: sizing.expert_room(g)))
        overflows.append(
            f"GPU memory is short by {human(max(need, 0) + (goals.gpu_experts or 0) * sizing.per_expert_layer())} for "
            f"{sizing.context} tokens x {goals.concurrency} request(s)"
            + (f" with {goals.gpu_experts} GPU experts per layer" if goals.gpu_experts else "")
        )
    hints = hints or SglangHints()
    flags, why_notes = build_flags(spec, goals, hints, recipe, choice, sizing, threads, gpu_experts, mfs, gpus)
    check_flags(flags)
    env = build_env(gpus, threads, choice)
    notes += why_notes
    if choice.caveat:
        notes.append(Notice("warn", f"{choice.method} needs converted CPU weights", choice.caveat))
    if not goals.weights:
        notes.append(
            Notice(
                "info",
                "No --weights folder given: the rendered paths are placeholders",
                "pass --weights DIR (the checkpoint folder) to render runnable commands",
            )
        )
    ref = ModelRef(
        id=spec.id, name=spec.name or spec.id, source=spec.source, exact=spec.exact, architecture=spec.architecture
    )
    result = Plan(
        model=ref,
        host=host.hostname or host.source,
        goals=goals,
        method=choice.method,
        tp=tp,
        gpus=tuple(g.index for g in gpus),
        gpu_experts=gpu_experts,
        max_total_tokens=sizing.tokens,
        mem_fraction_static=mfs,
        flags=flags,
        env=env,
        gpu_budgets=tuple(budgets),
        host_budgets=host_budgets,
        fits=fits and not overflows,
        overflows=tuple(overflows),
        notices=tuple(notes),
        image=goals.image or (recipe.image if recipe else "") or "",
        model_path=_model_path(goals, spec),
        served_name=str(next(f.value for f in flags if f.name == "--served-model-name")),
    )
    from ktwizard.planner.forecast import forecast

    result = replace(result, forecast=forecast(host, spec, choice.method, gpu_experts, tp, gpus[0].name, 0, 1))
    if spec.architecture == "DeepseekV2ForCausalLM":
        from ktwizard.planner.layers import place_layers

        result = replace(result, layers=place_layers(host, spec, result.gpus, sizing.context, goals.concurrency))
    if not result.fits:
        from ktwizard.planner.fit import suggest

        result = replace(
            result, suggestions=tuple(suggest(host, spec, goals, lambda g: plan(host, spec, g, hints, recipe)))
        )
    return result


def _model_path(goals: Goals, spec: ModelSpec) -> str:
    return goals.weights or f"/models/{spec.id}"
