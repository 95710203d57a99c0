"""GPU sizing for one (host, model, goals, method) combination: the ledger per GPU, the most GPU experts that keep
every phase inside every card with its margin, and the --mem-fraction-static that sizes the KV pool exactly.

How SGLang sizes the pool (model_runner.py:402, :907-932; model_runner_kv_cache_mixin.py:280-286, :627-636):
  T      = free memory after the CUDA context (the minimum over TP ranks), not the card size
  budget = (free memory after all weights) - T x (1 - mfs), divided by the cell size, capped by --max-total-tokens
With the cap in force, everything allocated later (CUDA graphs, workspaces, the layerwise layer, activations,
attention temporaries) comes out of T - weights - pool: mfs is only a floor for that remainder. So ktwizard caps
the pool at exactly what the goals need, picks the smallest mfs whose budget covers that cap with a margin (the
pool never silently shrinks), and checks the remainder against each phase's own peak.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil, floor

from ktwizard.families.registry import of as family_of
from ktwizard.host.cards import card_reserve
from ktwizard.host.profile import GPU
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import constants as C
from ktwizard.planner.memory import dsv4_layerwise, linear_state, margin, steps
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory import ledger as L
from ktwizard.planner.memory.budget import PHASES, TIE_ORDER, BudgetItem, GpuBudget
from ktwizard.planner.memory.steps import StepLiveSet
from ktwizard.planner.types import Goals
from ktwizard.runtime import rules
from ktwizard.units import human


def layerwise_threshold(method: str, spec: ModelSpec) -> int:
    # Values the KT docs and the seed recipe tested: 400 for Kimi RAWINT4, 1024 for the large MLA FP8 models,
    # 2048 for BF16/FP8 GQA models (kt-cli-and-flags.md §2.4).
    if method == "RAWINT4":
        return 400
    return 1024 if spec.attention.mla else 2048


@dataclass(frozen=True)
class Fit:
    """The most GPU experts per layer every phase allows, and where that limit comes from."""

    experts: int  # -1: not even zero fit
    gpu: int
    phase: str


class Sizing:
    def __init__(
        self,
        spec: ModelSpec,
        goals: Goals,
        gpus: tuple[GPU, ...],
        method: str,
        layerwise: bool,
        context: int,
        backend: str | None,
    ) -> None:
        self.spec, self.goals, self.gpus, self.method = spec, goals, gpus, method
        self.tp = len(gpus)
        self.context = context
        self.tokens = context * goals.concurrency  # what the plan promises the pool holds
        t_min = min(g.memory_total for g in gpus)
        chunk, graph_bs = M.sglang_defaults(t_min, self.tp)
        self.chunk_default = chunk
        if goals.chunked_prefill:
            chunk = goals.chunked_prefill  # the user's choice: the ledger below budgets its activations at it
        elif layerwise and t_min >= 80 * 2**30:
            chunk = max(chunk, 16384)  # the recipe's tested value on a 96 GB card: long prefills in fewer chunks
        self.chunk = max(512, min(chunk, self.tokens))
        self.graph_bs = max(1, min(graph_bs, goals.concurrency))
        family = family_of(spec)
        if forced := family.graph_max_bs():  # GLM-5-Next: server_args.py:1656-1662 captures 1, 2 and 4 whatever
            self.graph_bs = forced
        self.layerwise = layerwise
        self.threshold = goals.prefill_threshold or layerwise_threshold(method, spec)  # the user's, else KT's
        self.backend = backend or "flashinfer"  # unknown: budget as if it took the costlier flashinfer paths
        self.backend_known = backend is not None
        # DeepSeek sparse attention: the runtime settles the KV dtype itself (families/dsa.py, GLM-5-Next's GPU
        # profile); budget that one
        capabilities = tuple(g.compute_capability for g in gpus)
        self.dsa_kv = family.dsa_kv(spec, capabilities, min(g.cc_major for g in gpus), goals.kv_dtype)
        # a checkpoint that names its KV dtype (ModelOpt); a family whose runtime fixes the dtype is not asked
        self.checkpoint_kv = None if family.fixed_kv(spec) else rules.checkpoint_kv(spec, goals.kv_dtype)
        if self.dsa_kv:
            fp8 = self.dsa_kv.fp8
        elif self.checkpoint_kv:
            fp8 = self.checkpoint_kv[0] == "fp8_e4m3"
        else:
            fp8 = goals.kv_dtype == "fp8_e4m3"
        self.pool = L.kv_pool(spec, self.tokens, self.tp, 1 if fp8 else 2, self.chunk, goals.concurrency)
        self.state_pool = linear_state.state_pool(spec, self.tp, goals.concurrency)
        self.state = self.state_pool.allocated if self.state_pool else 0
        # DeepSeek-V4: layerwise prefill keeps the loaded experts beside the converted copy, except on SM100 (TRT-LLM
        # converts in place, mxfp4_deepseek.py:82, :404-)
        self.keep_raw = rules.is_dsv4(spec) and layerwise and any(g.compute_capability != "10.0" for g in gpus)
        self.per_expert = M.gpu_expert_bytes(spec, 1, self.tp, self.keep_raw)
        self.int4 = steps.Int4Layer.layerwise(spec, method) if layerwise else None
        # DeepSeek-V4 MXFP4: the full-expert layer the runtime keeps depends on the GPU (dsv4_layerwise)
        self.dsv4_layerwise = dsv4_layerwise.applies(spec, method, layerwise)
        self._fit: Fit | None = None
        self._budgets: dict[tuple[object, ...], GpuBudget] = {}
        self._after: list[BudgetItem] | None = None

    # --- the ledger of one GPU -----------------------------------------------------------------------------------

    def before(self, g: GPU) -> list[BudgetItem]:
        reserve, measured, others = M.driver_and_others(g)
        items = [
            BudgetItem(
                "driver reserve",
                reserve,
                "NVML v2 reserved memory of this GPU"
                if measured
                else (
                    f"a public nvidia-smi -q capture of this card ({g.name})"
                    if card_reserve(g.name)
                    else "not stated for this card: the idle H200's (NVML v2, driver 580)"
                ),
                "before",
                not measured,
                source="NVML nvmlDeviceGetMemoryInfo_v2 .reserved",
            ),
            BudgetItem("other processes", others, "memory other processes already hold on this GPU (NVML)", "before"),
            BudgetItem(
                "CUDA context",
                C.CUDA_CONTEXT,
                "torch CUDA context, measured on an H200 (621 MiB)",
                "before",
                True,
                source="srt/model_executor/model_runner.py:402 (memory measured after it)",
            ),
        ]
        if self.tp > 1:
            items.append(
                BudgetItem(
                    "NCCL buffers",
                    C.NCCL_PER_TP * self.tp,
                    "NCCL and custom all-reduce buffers: SGLang's own reserve heuristic, tp/8 GiB (server_args.py:1383 "
                    "sizes --mem-fraction-static by it; not an allocation it makes itself)",
                    "before",
                    True,
                )
            )
        return items

    def weights(self, rank: int, experts: int) -> list[BudgetItem]:
        spec, tp = self.spec, self.tp
        items = [
            BudgetItem(
                "non-expert weights",
                M.non_expert_per_rank(spec, tp),
                f"attention, dense MLP, shared experts, embeddings, lm_head (÷{tp} TP; norms, router replicated), "
                + ("exact from safetensors headers" if spec.exact else "from the preset's tensor inventory"),
                "weights",
                source="srt/model_executor/model_runner.py load_model",
            ),
            L.mla_absorbed_copies(spec, tp),
            L.gpu_experts(spec, experts, tp, self.keep_raw),
            L.staging_buffer(spec, self.chunk, rank),
            L.recorder_buffer(spec, bool(self.goals.record_routing)),
        ]
        return [i for i in items if i is not None]

    def kv(self) -> list[BudgetItem]:
        items = [
            BudgetItem(
                "KV pool",
                self.pool.bytes,
                self.pool.why,
                "kv",
                source="srt/model_executor/model_runner_kv_cache_mixin.py:280-286, :627-636",
            ),
            L.request_table(self.goals.concurrency, self.context),
        ]
        sp = self.state_pool
        if sp:
            items.append(
                BudgetItem(
                    "linear-attention state pool",
                    sp.allocated,
                    f"--max-mamba-cache-size {sp.slots} ({linear_state.slots_per_request(self.spec)} per running "
                    "request) + 1 "
                    f"slots x {sp.per_request} B (conv bf16 + SSM fp32 state of {linear_state.linear_layers(self.spec)}"
                    " linear-attention layers, this rank); without the flag the runtime would give it 0.9/1.9 of "
                    "the KV budget",
                    "kv",
                    source="srt/model_executor/model_runner_kv_cache_mixin.py:288-347, :590-603; "
                    "srt/mem_cache/memory_pool.py:244-262; srt/configs/mamba_utils.py:116-170",
                )
            )
        return items

    def ready(self) -> list[BudgetItem]:
        graphs = self.decode_steps(self.graph_bs)
        captured = M.captured_batch_sizes(self.graph_bs)
        per_bs = family_of(self.spec).graph_bs_per_request()
        pool = max(s.bytes for s in graphs)
        items = [
            L.flashinfer_workspace(self.backend),
            BudgetItem(
                "flashinfer wrapper workspaces",
                (4 + per_bs * len(captured)) * C.FLASHINFER_INT_WORKSPACE,
                f"8 MiB int workspace per wrapper: prefill, decode and {per_bs} per captured batch size "
                f"({len(captured)} sizes up to {self.graph_bs}: {', '.join(map(str, captured))})",
                "ready",
                True,
                source="flashinfer_mla_backend.py:384 / flashinfer_backend.py:557-560 (one decode wrapper per "
                "captured size, two for sliding-window models); server_args.py:1431-1459 (the sizes)",
            )
            if self.backend == "flashinfer"
            else None,
            BudgetItem(
                "CUDA graphs",
                pool + self.graph_bs * C.GRAPH_PER_BS,
                f"the graphs share one memory pool holding the decode step at batch {self.graph_bs} "
                f"({human(pool)}), plus 2 MiB per captured batch size (SGLang's coefficient)",
                "ready",
                True,
                source="srt/model_executor/cuda_graph_runner.py (one graph memory pool); server_args.py:1379",
            ),
            BudgetItem("cuBLAS workspace", C.CUBLAS_WORKSPACE, "measured on an H200 (66 MiB)", "ready", True),
        ]
        return [i for i in items if i is not None]

    def decode_steps(self, requests: int) -> tuple[StepLiveSet, StepLiveSet]:
        return (
            # each request may reach the context: the page table a sparse indexer scores (the captured width)
            steps.attention_step(self.spec, self.tp, requests, 0, self.backend, extend=False, longest=self.context),
            steps.moe_step(self.spec, self.tp, requests, gpu_path=True, cpu_path=True, restore=None, requests=requests),
        )

    def prefill_steps(self, tokens: int, prefixes: tuple[int, ...]) -> tuple[StepLiveSet, StepLiveSet]:
        """The attention step at the costliest of the batch's prefix sums, and the MoE step of `tokens` tokens."""
        c, ctx = self.goals.concurrency, self.context
        riders = ctx * (c - 1)  # every other request rides with its whole context (runtime())

        def longest(p: int) -> int:  # the longest request: a rider, or the prompt itself over its own prefix
            return min(ctx, max(ctx if c > 1 else 0, p - riders + tokens))

        attn = max(
            (steps.attention_step(self.spec, self.tp, tokens, p, self.backend, longest=longest(p)) for p in prefixes),
            key=lambda s: s.bytes,
        )
        layerwise = self.layerwise and tokens >= self.threshold
        moe = steps.moe_step(
            self.spec,
            self.tp,
            tokens,
            gpu_path=True,  # the GPU experts' (or the layerwise layer's) caches: sized by tokens, not by experts
            cpu_path=not layerwise,
            restore=self.int4 if layerwise else None,
            requests=self.goals.concurrency,
        )
        return attn, moe

    def chunk_cost(self, chunk: int) -> int:
        """What a --chunked-prefill-size costs on a GPU that depends on it: the longest prompt's larger step (its
        last chunk over its own prefix, every other request riding) plus the KT staging buffer (rank 0,
        kt_ep_wrapper.py:5268-5279). For a plan choosing its chunk size: compare chunk_cost(a) - chunk_cost(b)."""
        c, ctx = self.goals.concurrency, self.context
        riders = ctx * (c - 1)
        attn, moe = self.prefill_steps(chunk + c - 1, (riders, riders + max(0, ctx - chunk)))
        return max(attn.bytes, moe.bytes) + chunk * self.spec.hidden * 2

    def runtime(self) -> list[BudgetItem]:
        c, ctx = self.goals.concurrency, self.context
        items: list[BudgetItem] = []
        if self.layerwise:
            items += self.layerwise_items()
        items.append(L.allocator_overhead())
        riders = ctx * (c - 1)  # --enable-mixed-chunk: every other request decodes inside the prefill batch
        short = min(self.threshold + 1, self.tokens)
        items += L.step_items("short prompt", *self.prefill_steps(short, (riders,)))
        # the longest prompt's first chunk and its last (own prefix: the context less one chunk)
        last_prefix = max(0, ctx - self.chunk)
        items += L.step_items("longest prompt", *self.prefill_steps(self.chunk + c - 1, (riders, riders + last_prefix)))
        items += L.step_items("decode", *self.decode_steps(c))
        return items

    def layerwise_items(self) -> list[BudgetItem]:
        """The full-expert layer layerwise prefill keeps. The ledger after the weights is shared by every GPU, so
        on a mix of architectures the costliest path's items stand for all."""
        generic = L.layerwise_layer(self.spec, self.method, self.tp)
        if not self.dsv4_layerwise:
            return generic
        paths = [dsv4_layerwise.items(self.spec, self.tp, g.compute_capability) or generic for g in self.gpus]
        return max(paths, key=lambda its: sum(i.bytes for i in its))

    def reservation(self, g: GPU) -> int:
        """What the runtime subtracts on this GPU before profiling the KV pool (dsv4_layerwise.reservation)."""
        return dsv4_layerwise.reservation(self.spec, self.tp, g.compute_capability) if self.dsv4_layerwise else 0

    def _key(self, g: GPU, rank: int) -> tuple[object, ...]:
        # GPUs alike in size, use and rank role have the same ledger: 8 identical cards are sized twice, not 8 times
        return (g.memory_total, M.driver_and_others(g), g.memory_total_estimated, rank == 0)

    def budget(self, g: GPU, rank: int, experts: int) -> GpuBudget:
        key = (*self._key(g, rank), experts)
        shared = self._budgets.get(key)
        if shared is None:
            if self._after is None:  # what start-up and the prompts allocate is the same for every GPU and count
                self._after = self.kv() + self.ready() + self.runtime()
            items = self.before(g) + self.weights(rank, experts) + self._after
            bare = GpuBudget(
                gpu=g.index,
                name=g.name,
                total=g.memory_total,
                items=tuple(items),
                total_estimated=g.memory_total_estimated,
            )
            # kept free: the uncertainty of the estimates alive at a phase, at the phase where it is largest (the
            # estimates do not grow with the GPU experts, so the search's closed form still holds)
            kept = max(
                (margin.parts(bare.items, bare.phase_items(p)) for p in PHASES),
                key=lambda ps: sum(x.bytes for x in ps),
            )
            shared = self._budgets[key] = replace(
                bare,
                margin=sum(x.bytes for x in kept),
                margin_parts=tuple((x.name, x.bytes, x.why) for x in kept),
            )
        if (shared.gpu, shared.name) == (g.index, g.name):
            return shared
        alike = replace(shared, gpu=g.index, name=g.name)
        alike.__dict__["phases"] = shared.phases  # the same items have the same peaks (GpuBudget.phases is cached)
        return alike

    # --- the search ----------------------------------------------------------------------------------------------

    def fit(self) -> Fit:
        """Every phase grows by per_expert per GPU expert: the limit is a closed form per (GPU, phase)."""
        if self._fit is None:
            best: Fit | None = None
            peaks: dict[tuple[object, ...], tuple[tuple[str, int], ...]] = {}
            for rank, g in enumerate(self.gpus):
                base = self.budget(g, rank, 0)
                key = self._key(g, rank)
                if key not in peaks:
                    peaks[key] = tuple((p.phase, p.bytes) for p in base.phases)
                for phase, peak in peaks[key]:
                    room = g.memory_total - base.margin - peak
                    n = floor(room / self.per_expert)  # negative when over: the worst phase binds
                    # equal limits: the phase a prompt reaches last is named (budget.TIE_ORDER)
                    later = best is not None and TIE_ORDER.index(phase) > TIE_ORDER.index(best.phase)
                    if best is None or n < best.experts or (n == best.experts and g.index == best.gpu and later):
                        best = Fit(n, g.index, phase)
            assert best is not None
            self._fit = Fit(min(best.experts, self.spec.routed_experts), best.gpu, best.phase)
        return self._fit

    def max_experts(self) -> int:
        return self.fit().experts

    def mem_fraction_static(self, experts: int) -> float:
        """The smallest mfs (to 0.001) whose pool budget covers the cap plus a margin on every rank."""
        budgets = [self.budget(g, rank, experts) for rank, g in enumerate(self.gpus)]
        after_ctx = [b.total - b.phase_bytes("load") + b.phase_bytes_of("weights") for b in budgets]
        t = min(after_ctx)
        # the runtime profiles free memory less T x (1 - mfs) less its MXFP4 layerwise reservation (memory_profiler.py
        # :160-176, model_runner.py:593-607): the budget must cover the pool after that reservation too
        after_weights = min(
            free - b.phase_bytes_of("weights") - self.reservation(g)
            for free, b, g in zip(after_ctx, budgets, self.gpus, strict=True)
        )
        # the runtime takes slots x per request off the budget before sizing the KV pool (:283-286, :342-347)
        need = self.pool.bytes + (self.state_pool.counted if self.state_pool else 0)
        need += max(C.KV_POOL_MARGIN_MIN, int(need * C.KV_POOL_MARGIN_FRACTION))
        return max(0.01, min(0.999, ceil((1 - (after_weights - need) / t) * 1000) / 1000))
