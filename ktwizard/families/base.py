"""The family contract: what every model family answers, with the shared defaults of the common cases.

A family is a frozen record of its config readers and tensor layouts (fields: they differ per family and are plain
functions) and methods for everything the planner, ledger, flags, forecast and runtime rules ask (defaults here are
the GQA / MLA case; hybrid linear-attention, sparse and compressed families override what differs). Return types are
families' own (Pool, LiveSet, flag rows as (name, value, why)), so this layer needs nothing from planner/ or runtime/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ktwizard.families.dsa import DsaKv
from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.family import MoeLayout
from ktwizard.models.formats import WeightFormat
from ktwizard.models.spec import Attention, ModelSpec
from ktwizard.models.tensors import Tensor

FlagRow = tuple[str, Any, str]  # (--flag, value, why): the planner turns each into a planner.types.Flag
EnvRow = tuple[str, str, str]  # (NAME, value, why)
SLOTS_PER_REQUEST = 3  # model_runner_kv_cache_mixin.py:47, applied at :597-603 (linear-attention state slots)
# One decoder layer runs attention, frees its temporaries, then runs its MoE block: the two steps' live sets are
# never alive together (planner/memory/budget.BudgetItem.exclusive); a family's item freed before them shares the tag.
LAYER_STEP = "attention or MoE step of one layer"


@dataclass(frozen=True)
class Pool:
    """The KV pool as SGLang sizes it, and the flags that size it so."""

    max_total_tokens: int  # the --max-total-tokens cap
    bytes: int  # what the pool allocates on each TP rank
    why: str
    swa_full_tokens_ratio: float | None = None  # hybrid sliding-window models only


@dataclass(frozen=True)
class LiveSet:
    """What one phase holds live on the GPU beyond weights and pools, named with the runtime source the ledger
    budgets it from (planner/memory/steps.py and layers.py hold the arithmetic)."""

    phase: str  # prefill chunk | decode | cuda graphs | layerwise slot
    what: str
    source: str


# The phases every family's live sets name (the contract test checks each family names all four).
PHASES = ("prefill chunk", "decode", "cuda graphs", "layerwise slot")
COMMON_LIVE_SETS = (
    LiveSet("prefill chunk", "the chunk's hidden states, QKV / MoE activations and logits of its last token",
            "srt/layers/moe/kt_ep_wrapper.py; srt/model_executor/forward_batch_info.py"),
    LiveSet("decode", "one token per running request through attention and the MoE router",
            "srt/model_executor/model_runner.py (decode forward)"),
    LiveSet("cuda graphs", "the captured batch sizes' static buffers up to --cuda-graph-max-bs",
            "srt/model_executor/cuda_graph_runner.py"),
    LiveSet("layerwise slot", "one MoE layer's experts uploaded for a prefill over the threshold",
            "srt/layers/moe/kt_ep_wrapper.py:5754"),
)  # fmt: skip


@dataclass(frozen=True)
class Batch:
    """One forward batch as a step's live set sees it."""

    tokens: int  # new tokens of the batch
    prefix: int  # prefix tokens summed over its requests
    longest: int  # the longest request's tokens, prefix and new (decode: the context a request may reach)
    extend: bool  # prefill (extend) or decode


@dataclass(frozen=True)
class StepParts:
    """One attention step's live set from the family's runtime code: each tensor alive at the peak, with its bytes
    on one rank, and the source lines that allocate them (planner/memory/steps.py turns it into a StepLiveSet)."""

    path: str
    parts: tuple[tuple[str, int], ...]
    source: str

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.parts)


@dataclass(frozen=True)
class KeptItem:
    """One allocation a family's layerwise prefill makes instead of the generic one-layer item (Family.layerwise_kept),
    with the phases it is alive in and its runtime source; the ledger lists it as a runtime BudgetItem."""

    name: str
    bytes: int
    why: str
    live: tuple[str, ...]
    source: str
    estimate: bool = False
    exclusive: str = ""  # LAYER_STEP: never alive together with the step live sets


def heads(n: int, tp: int) -> int:
    """Heads on one TP rank (a head count below the TP size is replicated: one per rank)."""
    return max(1, -(-n // tp))


def all_layers_pool(spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int) -> Pool:
    cell = spec.kv_cell_bytes(tp, dtype_bytes)
    return Pool(tokens, tokens * cell, f"{tokens} tokens x {cell} B per token (all layers, this rank)")


@dataclass(frozen=True)
class Family:
    """A model family: the architectures it reads and how its MoE layout, attention and KV are sized."""

    name: str
    architectures: tuple[str, ...]
    kinds: tuple[str, ...]  # the Attention.kind values its configs read into
    moe: Callable[[ConfigReader, int], MoeLayout]  # (config, layers) -> MoE layout
    attention: Callable[[ConfigReader, int], Attention]  # (config, layers) -> attention facts
    attention_tensors: Callable[[str, Arch, int], Iterator[Tensor]]  # (layer prefix, arch, layer) -> tensors
    moe_tensors: Callable[[str, Arch], Iterator[Tensor]]  # (layer prefix, arch) -> router, experts, shared experts
    # Kimi K2.5+ wrap the text model in a vision-language config: (text config, tensor-name prefix)
    unwrap: Callable[[dict[str, Any]], tuple[dict[str, Any], str]] | None = None
    # A checkpoint that keeps its own tensor names and formats (DeepSeek-V4): its whole inventory, its formats reader
    inventory: Callable[[Arch], Iterator[Tensor]] | None = None
    formats: Callable[[dict[str, Any]], tuple[WeightFormat, WeightFormat]] | None = None
    # the layers a hybrid's softmax attention runs in (text config, layers, where)
    full_attention_at: Callable[[dict[str, Any], int, str], tuple[int, ...]] | None = None
    # MiniMax-M3's (sparse layers, layers with an index value branch)
    sparse_layers: Callable[[ConfigReader, int], tuple[tuple[int, ...], tuple[int, ...]]] | None = None
    source: str = ""  # the runtime's model file(s)
    # the architectures whose model class defines get_model_config_for_expert_location, which the routing recorder
    # needs at start-up (eplb/expert_location.py:520-530; grep of sglang/srt/models/*.py, each file's EntryClass)
    expert_location: tuple[str, ...] = ()

    # --- KV and state -------------------------------------------------------------------------------------------
    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        """The pool the runtime allocates for `tokens` (model_runner_kv_cache_mixin.py:280-286, capped :627-636)."""
        return all_layers_pool(spec, tokens, tp, dtype_bytes)

    def dsa_kv(self, spec: ModelSpec, capabilities: tuple[str, ...], min_major: int, asked: str) -> DsaKv | None:
        """The KV dtype a sparse-attention family's runtime settles on, or None (the ordinary --kv-dtype path)."""
        return None

    def fixed_kv(self, spec: ModelSpec) -> bool:
        """The runtime fixes this family's KV dtype itself (the checkpoint's own KV scheme is not rendered)."""
        return False

    def linear_layers(self, spec: ModelSpec) -> int:
        """Layers keeping a linear-attention state instead of K/V (0: none)."""
        return 0

    def state_slots_per_request(self, spec: ModelSpec) -> int:
        return SLOTS_PER_REQUEST

    def linear_layer_state(self, spec: ModelSpec, tp: int) -> tuple[int, int] | None:
        """(conv elements, SSM elements) of one linear-attention layer's state for one request on one TP rank where
        the family's layers are not the shared gated-delta-net shape (planner/memory/linear_state.py); None: it is."""
        return None

    def graph_bs_per_request(self) -> int:
        """FlashInfer wrapper workspaces per captured batch size (a sliding-window hybrid keeps two)."""
        return 1

    def live_sets(self) -> tuple[LiveSet, ...]:
        return COMMON_LIVE_SETS

    def attention_step(self, spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
        """The attention step's live set of one decoder layer at its peak: `common` is the shared GQA / MLA
        arithmetic (planner/memory/steps.py); a family whose layers allocate more (sparse indexers, linear
        attention) returns its own, the larger of its layer kinds' when it mixes them."""
        return common

    # --- weights on the GPU ---------------------------------------------------------------------------------------
    def replicated_attention(self, spec: ModelSpec, tp: int) -> tuple[int, int] | None:
        """(bytes every rank holds whole, bytes each rank holds beyond its share) of the attention tensors at this TP
        where the family's layers split otherwise than the shared MLA / GQA rule (planner/memory/items.py
        attention_replicated); None: the shared rule."""
        return None

    def upcasts_experts(self, spec: ModelSpec) -> bool:
        """The family's MoE runner converts the GPU experts out of the checkpoint's format (gpu_expert_bytes)."""
        return False

    def gpu_expert_bytes(self, spec: ModelSpec) -> int:
        """One routed expert as the GPU runs it: the checkpoint's format unless the family's MoE runner converts it."""
        return spec.expert_bytes_native

    def loaded_expert_bytes(self, spec: ModelSpec, keep_raw: bool) -> int:
        """One routed expert as GPU memory holds it at its load-time peak; `keep_raw`: keeps_loaded_experts."""
        return self.gpu_expert_bytes(spec)

    def expert_format_note(self, spec: ModelSpec, keep_raw: bool) -> str:
        """The GPU experts' format as the ledger's reason names it."""
        return spec.expert_format.describe()

    # --- the GPU experts and the layerwise layer ----------------------------------------------------------------
    def keeps_loaded_experts(self, spec: ModelSpec, layerwise: bool, capabilities: tuple[str, ...]) -> bool:
        """The GPU experts stay in their loaded form beside the kernel's converted copy (planner/memory/sizing.py)."""
        return False

    def layerwise_kept(
        self, spec: ModelSpec, method: str, tp: int, compute_capability: str
    ) -> tuple[KeptItem, ...] | None:
        """What layerwise prefill keeps on a GPU of this capability where it is not the generic one full MoE layer
        (planner/memory/ledger.py layerwise_layer); None: the generic one."""
        return None

    def layerwise_reservation(self, spec: ModelSpec, method: str, tp: int, compute_capability: str) -> int:
        """Bytes the runtime subtracts for layerwise prefill before it profiles the KV pool on this GPU."""
        return 0

    # --- flags and runtime rules --------------------------------------------------------------------------------
    def attention_flags(
        self, spec: ModelSpec, kv_dtype: str, backend_hint: str, dsa: DsaKv | None, min_major: int
    ) -> list[FlagRow]:
        """backend_hint: the preset's attention backend (SglangHints.attention_backend)."""
        if dsa is None and backend_hint:
            return [("--attention-backend", backend_hint, "the backend the KT docs use for this model family")]
        return []

    def served_name_why(self, spec: ModelSpec) -> str:
        """What the --served-model-name reason adds for this family (clients that key on the name), or ""."""
        return ""

    def layer_placement(self, spec: ModelSpec) -> bool:
        """The plan carries KTransformers' layer-wise placement alternative (planner/memory/layers.py)."""
        return False

    def refused_flags(self) -> frozenset[str]:
        """Flags the runtime refuses for this family: never rendered."""
        return frozenset()

    def graph_max_bs(self) -> int | None:
        """A CUDA-graph batch cap the runtime forces, or None."""
        return None

    def env(self, spec: ModelSpec) -> tuple[EnvRow, ...]:
        return ()

    def start_problems(
        self, spec: ModelSpec, method: str, capabilities: tuple[str, ...], kv_dtype: str
    ) -> tuple[str, ...]:
        """Why the runtime refuses this plan at start-up (load-time rules, with file:line), in the order checked."""
        return ()

    def gpu_problem(self, spec: ModelSpec, capabilities: tuple[str, ...]) -> str | None:
        """Why the runtime refuses this family on these GPUs (beyond the generic kernel checks), or None."""
        return None

    def layerwise_refusal(self, spec: ModelSpec) -> str | None:
        """Why layerwise prefill is not planned for this family, or None."""
        return None

    def kernel_needs(self) -> tuple[tuple[str, str], ...]:
        """(kernel id in runtime/kernel_table.py, where the runtime picks it) beyond the generic ones."""
        return ()

    # --- forecast ------------------------------------------------------------------------------------------------
    def decode_heads(self, a: Attention) -> int:
        """Heads a decode attention kernel runs a lane for: every query head reads MLA's one shared latent."""
        return a.heads if a.mla else a.kv_heads

    def attention_flops(self, spec: ModelSpec, n: int, prefix: int) -> float:
        """Score and value products of `n` new tokens against `prefix` + their causal half, full-attention layers."""
        a = spec.attention
        layers = a.full_attention_layers or spec.layers
        qk = (a.qk_nope_head_dim + a.qk_rope_head_dim) if a.mla else a.head_dim
        v = a.v_head_dim if a.mla else a.head_dim
        return 2.0 * n * (prefix + n / 2) * a.heads * (qk + v) * layers
