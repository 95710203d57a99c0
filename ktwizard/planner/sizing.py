"""The fixed arithmetic of one (host, spec, goals, method) combination, per chosen GPU."""

from __future__ import annotations

from math import ceil

from ktwizard.host.profile import GPU, HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.planner import constants as C
from ktwizard.planner import memory as M
from ktwizard.planner.types import BudgetItem, Goals


def layerwise_threshold(method: str, spec: ModelSpec) -> int:
    # Values the KT docs and the seed recipe tested: 400 for Kimi RAWINT4, 1024 for the large MLA FP8 models,
    # 2048 for BF16/FP8 GQA models (kt-cli-and-flags.md §2.4).
    if method == "RAWINT4":
        return 400
    return 1024 if spec.attention.kind.startswith("mla") else 2048


class Sizing:
    """The fixed arithmetic of one (host, spec, goals, method) combination, per chosen GPU."""

    def __init__(
        self,
        host: HostProfile,
        spec: ModelSpec,
        goals: Goals,
        gpus: tuple[GPU, ...],
        method: str,
        layerwise: bool,
        context: int,
    ):
        self.spec, self.goals, self.gpus, self.method = spec, goals, gpus, method
        self.tp = len(gpus)
        self.context = context
        self.tokens = context * goals.concurrency
        t_min = min(g.memory_total for g in gpus)
        chunk, graph_bs = M.sglang_defaults(t_min, self.tp)
        self.chunk_default = chunk
        if layerwise and t_min >= 80 * 2**30:
            chunk = max(chunk, 16384)  # the recipe's tested value on a 96 GB card: long prefills in fewer chunks
        self.chunk = max(512, min(chunk, self.tokens))
        self.graph_bs = max(1, min(graph_bs, goals.concurrency))
        self.layerwise = layerwise
        self.kv_dtype_bytes = 1 if goals.kv_dtype == "fp8_e4m3" else 2
        self.cell = spec.kv_cell_bytes(self.tp, self.kv_dtype_bytes)
        self._room: dict[int, int] = {}

    def fixed(self, g: GPU) -> list[BudgetItem]:
        reserve, measured, others = M.driver_and_others(g)
        spec, tp = self.spec, self.tp
        items = [
            BudgetItem(
                "driver reserve",
                reserve,
                "NVML v2 reserved memory of this GPU" if measured else "measured on an idle H200 (NVML v2, driver 580)",
                "before",
                not measured,
            ),
            BudgetItem("other processes", others, "memory other processes already hold on this GPU (NVML)", "before"),
            BudgetItem(
                "CUDA context",
                C.CUDA_CONTEXT + C.CUBLAS_WORKSPACE,
                "torch CUDA context 621 MiB + cuBLAS workspace 66 MiB, measured on an H200",
                "before",
                True,
            ),
        ]
        if tp > 1:
            items.append(
                BudgetItem(
                    "NCCL buffers",
                    C.NCCL_PER_TP * tp,
                    "NCCL and custom all-reduce: SGLang reserves tp/8 GiB",
                    "before",
                    True,
                )
            )
        ne = M.non_expert_per_rank(spec, tp)
        items.append(
            BudgetItem(
                "non-expert weights",
                ne,
                f"attention, dense MLP, shared experts, embeddings, lm_head (÷{tp} TP; norms, router replicated), "
                + ("exact from safetensors headers" if spec.exact else "from the preset's tensor inventory"),
                "weights",
            )
        )
        items.append(
            BudgetItem(
                "KT staging buffer",
                self.chunk * spec.hidden * 2,
                f"shared CPU-expert input buffer: {self.chunk} tokens x hidden {spec.hidden} x bf16",
                "weights",
            )
        )
        return items

    def dynamic(self, g: GPU) -> list[BudgetItem]:
        spec = self.spec
        items = [
            BudgetItem(
                "CUDA graphs",
                C.GRAPH_BASE + self.graph_bs * C.GRAPH_PER_BS,
                f"capture up to batch {self.graph_bs}: SGLang's 512 MiB + 2 MiB per batch size",
                "runtime",
                True,
            ),
            BudgetItem(
                "activations",
                M.activation_bytes(spec, self.chunk, self.tp, self.goals.concurrency),
                f"prefill of a {self.chunk}-token chunk: hidden states, attention and expert intermediates, logits, "
                "attention workspace",
                "runtime",
                True,
            ),
        ]
        if self.layerwise:
            items.append(
                BudgetItem(
                    "layerwise-prefill layer",
                    ceil(spec.layer_routed_bytes / self.tp),
                    f"one full MoE layer ({spec.routed_experts} experts, {spec.expert_format.describe()}), allocated "
                    "lazily on the first long prefill",
                    "runtime",
                )
            )
        items.append(
            BudgetItem(
                "headroom",
                M.headroom(g.memory_total),
                "fragmentation and unmodelled allocations: max(1 GiB, 3 % of the GPU)",
                "runtime",
                True,
            )
        )
        return items

    def kv(self) -> list[BudgetItem]:
        items = [
            BudgetItem(
                "KV pool",
                self.tokens * self.cell,
                f"{self.tokens} tokens ({self.context} x {self.goals.concurrency}) x {self.cell} B per token",
                "kv",
            )
        ]
        state = self.spec.per_request_state_bytes(self.tp) * self.goals.concurrency
        if state:
            items.append(
                BudgetItem(
                    "per-request state",
                    state,
                    "linear-attention / sliding-window state per running request",
                    "kv",
                    True,
                )
            )
        return items

    def expert_room(self, g: GPU) -> int:
        """Bytes left on GPU g for routed experts after everything else (and mem-fraction rounding)."""
        if g.index not in self._room:
            used = sum(i.bytes for i in self.fixed(g) + self.dynamic(g) + self.kv())
            self._room[g.index] = g.memory_total - used - g.memory_total // 1000
        return self._room[g.index]

    def per_expert_layer(self) -> int:
        return M.gpu_expert_bytes(self.spec, 1, self.tp)

    def max_experts(self) -> int:
        room = min(self.expert_room(g) for g in self.gpus)
        return room // self.per_expert_layer() if room >= 0 else -1
