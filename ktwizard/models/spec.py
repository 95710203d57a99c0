"""ModelSpec: architecture facts and exact weight bytes per tensor group, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil

from ktwizard.models.formats import WeightFormat

GROUPS = (
    "attention",
    "dense_mlp",
    "shared_experts",
    "router",
    "norms",
    "embeddings",
    "lm_head",
    "routed_experts",
    "mtp",
    "vision",
    "other",
)
# What stays on every GPU whatever the expert placement (a vision tower loads with the model; MTP layers
# load only for speculative decoding, which ktwizard does not plan).
NON_EXPERT_GROUPS = (
    "attention",
    "dense_mlp",
    "shared_experts",
    "router",
    "norms",
    "embeddings",
    "lm_head",
    "vision",
    "other",
)


@dataclass(frozen=True)
class Attention:
    """A model's attention as the planner needs it: kind, heads, head sizes and the KV it keeps per token."""

    kind: str  # mla | mla_nsa | gqa | gqa_swa | hybrid_linear | hybrid_dsa (GLM-5-Next: KDA + DSA layers) |
    # gqa_msa (MiniMax-M3: GQA + block-sparse attention with index keys) |
    # dsv4 (DeepSeek-V4: compressed MQA + sliding window + indexer)
    heads: int
    kv_heads: int
    head_dim: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    index_n_heads: int = 0
    index_head_dim: int = 0
    full_attention_layers: int = 0  # layers holding per-token KV (all, for plain models)
    sliding_window: int = 0
    linear_key_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_heads: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    # MiniMax sparse attention (gqa_msa): layers with an index branch, those of them that keep index values too, and
    # the tokens a sparse layer attends to (sparse_topk_blocks x sparse_block_size)
    index_layers: int = 0
    index_value_layers: int = 0
    sparse_topk_tokens: int = 0
    # DeepSeek-V4 (models/deepseek_v4.py): per-layer compression 0 / 4 / 128 as config.json lists it (MTP entries
    # last: the runtime's pool calculator counts them all), the grouped low-rank output, the indexer's top-k and the
    # hyper-connections' copies of the residual stream
    compress_ratios: tuple[int, ...] = ()
    o_lora_rank: int = 0
    o_groups: int = 0
    index_topk: int = 0
    hc_mult: int = 0

    @property
    def mla(self) -> bool:
        """Latent (MLA) attention in every layer holding KV: DeepSeek-style models, and GLM-5-Next's DSA layers."""
        return self.kind.startswith("mla") or self.kind == "hybrid_dsa"


@dataclass(frozen=True)
class LayerBytes:
    """One layer's weight bytes: the part that stays on GPU and its routed experts."""

    layer: int
    non_expert: int
    routed: int


@dataclass(frozen=True)
class ModelSpec:
    """A model as the planner sees it: shape, experts, attention, weights and the bytes of each layer."""

    architecture: str
    model_type: str
    layers: int
    hidden: int
    dense_intermediate: int
    moe_intermediate: int
    shared_intermediate: int
    routed_experts: int
    experts_per_token: int
    shared_experts: int
    moe_layers: tuple[int, ...]
    vocab: int
    tied_embeddings: bool
    attention: Attention
    max_context: int
    expert_format: WeightFormat
    other_format: WeightFormat
    bytes_by_group: dict[str, int]
    params_by_group: dict[str, int]
    per_layer: tuple[LayerBytes, ...]
    # Who it is does not change what it is: a preset equals the spec read from its checkpoint.
    id: str = field(default="", compare=False)
    name: str = field(default="", compare=False)
    source: str = field(default="", compare=False)
    exact: bool = field(default=False, compare=False)  # True when bytes were read from safetensors headers
    # MTP / next-n layers a checkpoint carries: loaded only for speculative decoding, so apart from the groups.
    mtp_bytes: int = field(default=0, compare=False)
    repos: tuple[str, ...] = field(default=(), compare=False)  # Hugging Face repositories holding this checkpoint
    # Read from the Hub before downloading (--model hf:): the commit planned, every file's bytes, the measured rate
    revision: str = field(default="", compare=False)
    download_bytes: int = field(default=0, compare=False)
    download_rate: float = field(default=0.0, compare=False)  # bytes/s measured from this machine; 0 = not measured
    # Routed experts use a clamped SwiGLU (MiniMax-M3's swigluoai: swiglu_alpha / swiglu_limit), which kt-kernel
    # applies only under some methods (runtime/rules.loader_problem)
    clamped_swiglu: bool = False
    kv_cache_fp8: bool = False  # the checkpoint's quantization config asks for an FP8 KV cache (ModelOpt)

    @property
    def moe_layer_count(self) -> int:
        return len(self.moe_layers)

    @property
    def non_expert_bytes(self) -> int:
        return sum(self.bytes_by_group.get(g, 0) for g in NON_EXPERT_GROUPS)

    @property
    def routed_bytes(self) -> int:
        return self.bytes_by_group.get("routed_experts", 0)

    @property
    def expert_bytes_native(self) -> int:
        """One routed expert as stored in the checkpoint (the GPU-side format)."""
        return self.routed_bytes // max(1, self.moe_layer_count * self.routed_experts)

    @property
    def layer_routed_bytes(self) -> int:
        return self.expert_bytes_native * self.routed_experts

    @property
    def params_total(self) -> int:
        return sum(v for g, v in self.params_by_group.items() if g not in ("mtp", "vision"))

    @property
    def params_active(self) -> int:
        """Parameters touched per token: everything but the routed experts, plus top-k of them."""
        routed = self.params_by_group.get("routed_experts", 0)
        per_expert = routed // max(1, self.moe_layer_count * self.routed_experts)
        return self.params_total - routed + per_expert * self.experts_per_token * self.moe_layer_count

    def kv_cell_bytes(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """SGLang's cell_size: KV bytes per token over all layers on one TP rank."""
        a = self.attention
        layers = a.full_attention_layers or self.layers
        if a.kind == "dsv4":  # the pool's own per-token accounting at the runtime's default SWA share (dsv4_kv.py)
            from ktwizard.models import dsv4_kv  # DeepSeek-V4's pools only: other models' plans never load it

            return ceil(dsv4_kv.bytes_per_full_token(dsv4_kv.layout(a), dsv4_kv.DEFAULT_SWA_RATIO))
        if a.kind == "hybrid_dsa":
            # GLM-5-Next's DSA layers (model_runner_kv_cache_mixin.py:94-159; trtllm keeps the latent at kv_lora +
            # rope, :362-370): FP8 = raw latent + an fp32 descale per 128 + FP8 indexer keys with an fp32 scale per
            # 128; BF16 (SM86) = latent and indexer keys both BF16. Not split by TP (MLA is replicated).
            if dtype_bytes == 1:
                latent = a.kv_lora_rank + a.qk_rope_head_dim + a.kv_lora_rank // 128 * 4
                return (latent + a.index_head_dim + a.index_head_dim // 128 * 4) * layers
            return ((a.kv_lora_rank + a.qk_rope_head_dim) * 2 + a.index_head_dim * 2) * layers
        if a.kind.startswith("mla"):
            cell = (a.kv_lora_rank + a.qk_rope_head_dim) * layers * dtype_bytes
            if a.kind == "mla_nsa":  # fp8 index keys + an fp32 scale per 128 (already fp8 whatever the KV dtype)
                cell += (a.index_head_dim + a.index_head_dim // 128 * 4) * layers
            return cell
        kv_per_rank = max(1, a.kv_heads // tp)
        cell = 2 * kv_per_rank * a.head_dim * layers * dtype_bytes
        if a.kind == "gqa_msa":
            cell += self.index_cell_bytes()
        return cell

    def index_cell_bytes(self) -> int:
        """MiniMax sparse attention's index cache per token: one index key per sparse layer (and a value where the
        layer keeps one), a single head of sparse_index_dim in the model dtype (bf16) whatever the KV dtype and TP
        (MiniMaxSparseKVPool: mem_cache/memory_pool.py:2189, :2227-2255; index_dtype=self.dtype and head_num=1 at
        model_executor/model_runner_kv_cache_mixin.py:934-947)."""
        a = self.attention
        return (a.index_layers + a.index_value_layers) * a.index_head_dim * 2

    def kv_read_bytes(self, context: int, tp: int = 1, dtype_bytes: int = 2) -> float:
        """KV bytes decode attention reads per stream and decoded token at this context, the cache held in
        `dtype_bytes` per element (1: FP8): every cached token, except DeepSeek-V4, which reads its window, the top-k
        of its 4x-compressed entries with their indexer keys, and every 128x-compressed entry (dsv4_kv.read_per_token;
        its pools have one dtype)."""
        if self.attention.kind == "dsv4":
            from ktwizard.models import dsv4_kv

            return dsv4_kv.read_per_token(dsv4_kv.layout(self.attention), self.attention, context)
        if self.attention.kind == "hybrid_dsa":  # GLM-5-Next: each step also reads and writes the stream's KDA state
            return context * self.kv_cell_bytes(tp, dtype_bytes) + 2 * self.per_request_state_bytes(tp)
        if self.attention.kind == "gqa_msa":
            return self._msa_read_bytes(context, tp, dtype_bytes)
        return context * self.kv_cell_bytes(tp, dtype_bytes)

    def _msa_read_bytes(self, context: int, tp: int, dtype_bytes: int = 2) -> float:
        """MiniMax sparse attention: the dense layers read all their K/V, a sparse layer only the top-k blocks its
        index picks (sparse_topk_blocks x sparse_block_size tokens, layers/attention/minimax_sparse_backend.py:28-70),
        and every sparse layer scores all its index keys (bf16 whatever the KV dtype)."""
        a, index = self.attention, self.index_cell_bytes()
        per_layer = (self.kv_cell_bytes(tp, dtype_bytes) - index) / self.layers
        dense = self.layers - a.index_layers
        return per_layer * (dense * context + a.index_layers * min(context, a.sparse_topk_tokens)) + index * context

    def per_request_state_bytes(self, tp: int = 1) -> int:
        """Fixed state a running request keeps whatever its length (linear-attention / sliding windows)."""
        a = self.attention
        if a.kind == "hybrid_linear":
            linear_layers = self.layers - a.full_attention_layers
            kh, kd, vh, vd = a.linear_key_heads, a.linear_key_head_dim, a.linear_value_heads, a.linear_value_head_dim
            conv = (2 * kh * kd + vh * vd) * (a.linear_conv_kernel - 1) * 2
            ssm = vh * kd * vd * 4
            return (conv + ssm) * linear_layers // tp
        if a.kind == "hybrid_dsa":  # KDA state, KimiLinearStateShape (mamba_utils.py:197-232): q/k/v conv + SSM
            linear_layers = self.layers - a.full_attention_layers
            width = a.linear_value_heads * a.linear_value_head_dim // tp
            conv = 3 * width * (a.linear_conv_kernel - 1) * 2
            ssm = a.linear_value_heads // tp * a.linear_value_head_dim * a.linear_value_head_dim * 4
            return (conv + ssm) * linear_layers
        if a.kind == "gqa_swa":
            swa_layers = self.layers - a.full_attention_layers
            return 2 * max(1, a.kv_heads // tp) * a.head_dim * swa_layers * 2 * a.sliding_window
        return 0
