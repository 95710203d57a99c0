"""DeepSeek-V4: compressed MQA with a sliding window, 4x / 128x compressed entries and an indexer, hash-routed
leading layers, its own tensor names and formats (config and tensors: models/deepseek_v4.py; the pool:
models/dsv4_kv.py; start-up facts: rules.py beside this file)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.families.base import COMMON_LIVE_SETS, EnvRow, Family, FlagRow, LiveSet, Pool
from ktwizard.families.deepseek_v4 import rules
from ktwizard.families.dsa import DsaKv
from ktwizard.models import deepseek_v4, dsv4_kv
from ktwizard.models.arch import ConfigReader
from ktwizard.models.family import MoeLayout, no_layer_tensors
from ktwizard.models.spec import Attention, ModelSpec
from ktwizard.runtime.version import SGLANG_KT, SGLANG_KT_VERSION


def _moe(cfg: ConfigReader, layers: int) -> MoeLayout:
    """Every layer is MoE in the 2604 checkpoints (models/deepseek_v4.py:1061-1066 ignores first_k_dense_replace and
    moe_layer_freq there); one shared expert of the routed width."""
    moe_inter = cfg.need("moe_intermediate_size")
    shared = cfg.count("n_shared_experts")
    return MoeLayout(
        experts=cfg.need("n_routed_experts"),
        moe_intermediate=moe_inter,
        moe_layers=tuple(range(layers)),
        shared_experts=shared,
        shared_intermediate=moe_inter * shared,
        score_bias=True,
        hash_layers=min(layers, deepseek_v4.hash_layers(cfg)),
    )


def compressed_pool(spec: ModelSpec, tokens: int, chunk: int, concurrency: int) -> Pool:
    """DeepSeek-V4 (model_runner_kv_cache_mixin.py:479-556): the pools are sized from DSv4MemoryCalculator's bytes per
    full token (memory_profiler.py:63-98), the full-token count rounded down to 256-token pages (:103-105) and capped
    by --max-total-tokens (get_pool_sizes_by_configuration, :146-148). The plan renders the cap as the promised tokens
    rounded up to a page (more where the window pool needs it: dsv4_kv.full_tokens), and --swa-full-tokens-ratio
    (dsv4_kv.swa_ratio), so the pool holds every promised token and the chunks in flight. The bytes are what
    DeepSeekV4TokenToKVPool allocates for those sizes (dsv4_kv.allocated_bytes; measured equal on an H200,
    tests/fixtures/device/pool-bytes-h200.json), 0.04-0.4 % above the calculator's average.
    Not shared over TP: one KV head, every rank keeps the whole cache (MQA, models/deepseek_v4.py:503)."""
    layout = dsv4_kv.layout(spec.attention)
    cap = dsv4_kv.full_tokens(tokens, chunk, concurrency)
    ratio = dsv4_kv.swa_ratio(cap, chunk, concurrency)
    sizes = dsv4_kv.pool_sizes(layout, cap, ratio)
    if sizes.full < tokens:  # the runtime's float division fell a hair short and floored a page away
        cap += dsv4_kv.PAGE_SIZE
        sizes = dsv4_kv.pool_sizes(layout, cap, ratio)
    per_token = dsv4_kv.bytes_per_full_token(layout, ratio)
    return Pool(
        cap,
        dsv4_kv.allocated_bytes(layout, spec.layers, sizes),
        f"--max-total-tokens {cap} x {per_token:.1f} B per token (DeepSeek-V4's compressed pools as the runtime's "
        f"calculator counts them: window KV of {layout.layers} layers x {ratio}, compressed KV of {layout.c4_layers} "
        f"4x and {layout.c128_layers} 128x layers, indexer keys, fp32 compressor states; memory_profiler.py:63-98), "
        "allocated in whole padded pages (deepseekv4_memory_pool.py:97-128, compress_state.py:122-123); "
        f"--swa-full-tokens-ratio {ratio} keeps {sizes.swa} window tokens: two chunks in flight and a page per "
        "request",
        ratio,
    )


def attended(a: Attention, ratio: int, seen: float) -> float:
    """Entries one DeepSeek-V4 query attends after `seen` tokens: its window, plus the top-k of the 4x-compressed
    entries (C4Indexer) or every 128x-compressed one (models/deepseek_v4.py:458-670)."""
    window = min(seen, a.sliding_window)
    if ratio == 4:
        return window + min(seen / 4, a.index_topk)
    if ratio == 128:
        return window + seen / 128
    return window


@dataclass(frozen=True)
class DeepSeekV4(Family):
    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        return compressed_pool(spec, tokens, chunk, concurrency)

    def fixed_kv(self, spec: ModelSpec) -> bool:
        return True  # fp8_e4m3 only (server_args.py:1817-1827)

    def attention_flags(
        self, spec: ModelSpec, kv_dtype: str, backend_hint: str, kv: DsaKv | None, min_major: int
    ) -> list[FlagRow]:
        return [
            (
                "--attention-backend",
                rules.DSV4_BACKEND,
                f"DeepSeek-V4's compressed attention: {SGLANG_KT} forces it (server_args.py:1802-1806)",
            ),
            ("--page-size", dsv4_kv.PAGE_SIZE, "the sliding-window pool's page (server_args.py:1805, mixin :746)"),
            (
                "--kv-cache-dtype",
                rules.DSV4_KV_DTYPE,
                f"the only KV dtype {SGLANG_KT_VERSION} accepts for DeepSeek-V4 (server_args.py:1817-1827), as budgeted"
                + ("; --kv-dtype bf16 cannot be honoured for this model" if kv_dtype == "bf16" else ""),
            ),
        ]

    def env(self, spec: ModelSpec) -> tuple[EnvRow, ...]:
        return rules.DSV4_ENV

    def kernel_needs(self) -> tuple[tuple[str, str], ...]:
        return (("compressed", "server_args.py:1802-1806"),)

    def decode_heads(self, a: Attention) -> int:
        return a.heads  # MQA: every query head reads the one KV head

    def attention_flops(self, spec: ModelSpec, n: int, prefix: int) -> float:
        """Each query attends its window and the compressed entries, not every earlier token."""
        a = spec.attention
        layers = a.full_attention_layers or spec.layers
        qk, v = a.head_dim, a.head_dim
        return sum(2.0 * n * attended(a, r, prefix + n / 2) * a.heads * (qk + v) for r in a.compress_ratios[:layers])

    def live_sets(self) -> tuple[LiveSet, ...]:
        return (
            *COMMON_LIVE_SETS,
            LiveSet("layerwise slot", "the MXFP4 experts' raw copy kept beside the kernel's converted one",
                    "srt/layers/quantization/mxfp4_deepseek.py:204-262, :318-400"),
        )  # fmt: skip


FAMILY = DeepSeekV4(
    "deepseek_v4",
    (deepseek_v4.ARCHITECTURE,),
    ("dsv4",),
    _moe,
    deepseek_v4.attention,
    no_layer_tensors,
    no_layer_tensors,
    inventory=deepseek_v4.tensors,
    formats=deepseek_v4.formats,
    source="sglang/srt/models/deepseek_v4.py",
    expert_location=("DeepseekV4ForCausalLM",),
)
