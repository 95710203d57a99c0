"""DeepSeek-V4's attention state per token, as sglang-kt 0.7.2's pool calculator counts it.

DeepSeekV4TokenToKVPool (mem_cache/deepseekv4_memory_pool.py:474-) keeps, for every layer, a sliding-window KV pool;
for 4x- and 128x-compressed layers a compressed KV pool (one entry per 4 or 128 tokens); for 4x layers the indexer's
keys; and ring buffers of fp32 compressor state per sliding-window page. DSv4MemoryCalculator (model_executor/
memory_profiler.py:31-98) folds all of it into bytes per "full" token: the window pools and compressor states scale
with --swa-full-tokens-ratio, the compressed pools with the full token count. The runtime sizes the pools from that
figure (model_runner_kv_cache_mixin.py:479-556), so it is the figure a plan budgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Attention(Protocol):
    """The attention facts this module reads (models/spec.Attention has them; spec imports this module, so the
    type is named by what it offers rather than imported)."""

    @property
    def compress_ratios(self) -> tuple[int, ...]: ...
    @property
    def full_attention_layers(self) -> int: ...
    @property
    def index_head_dim(self) -> int: ...
    @property
    def index_topk(self) -> int: ...
    @property
    def qk_nope_head_dim(self) -> int: ...
    @property
    def qk_rope_head_dim(self) -> int: ...
    @property
    def sliding_window(self) -> int: ...


DEFAULT_SWA_RATIO = 0.1  # server_args.py:1841-1842: what 0.7.2 sets for DeepseekV4 when the flag is left alone
PAGE_SIZE = 256  # server_args.py:1805-1806 forces it; model_runner_kv_cache_mixin.py:746 asserts it
NOPE_SCALE_BLOCK = 64  # deepseekv4_memory_pool.py:68: one scale byte per 64 nope values, plus one pad byte
INDEX_QUANT_BLOCK = 128  # deepseekv4_memory_pool.py:268: DeepSeekV4IndexerPool.quant_block_size, fp32 scales
STATE_BYTES = 4  # model_runner_kv_cache_mixin.py:482: state_dtype float32
C4_RING, C128_RING = 8, 128  # deepseekv4_memory_pool.py:24-30 get_compress_state_ring_size, no speculative decoding


@dataclass(frozen=True)
class Layout:
    kv_token: int  # one layer's cached token: fp8 nope + its scales + bf16 rope (584 B for 448 + 64)
    indexer_token: int  # one 4x layer's indexer key: fp8 + one fp32 scale per 128 (132 B for 128)
    layers: int  # entries in compress_ratios (the calculator counts the MTP entry too)
    c4_layers: int
    c128_layers: int
    head_dim: int  # nope + rope: the compressor state's width
    index_head_dim: int
    window: int  # the sliding window, the calculator's "swa_page_size" (model_config.py:571)


def layout(a: Attention) -> Layout:
    """deepseekv4_memory_pool.py:103-116 (get_bytes_per_token, FP8: nope + rope x 2 + nope / 64 + 1) and
    memory_profiler.py:63-72 (kv and indexer bytes as the calculator writes them; equal)."""
    nope, rope = a.qk_nope_head_dim, a.qk_rope_head_dim
    ratios = a.compress_ratios
    return Layout(
        kv_token=nope + rope * 2 + nope // NOPE_SCALE_BLOCK + 1,
        indexer_token=a.index_head_dim + a.index_head_dim // INDEX_QUANT_BLOCK * 4,
        layers=len(ratios),
        c4_layers=sum(1 for r in ratios if r == 4),
        c128_layers=sum(1 for r in ratios if r == 128),
        head_dim=nope + rope,
        index_head_dim=a.index_head_dim,
        window=a.sliding_window,
    )


def bytes_per_full_token(k: Layout, swa_ratio: float) -> float:
    """memory_profiler.py:63-98 (FP8 path, SM 8.9 and newer; ktwizard refuses older GPUs for this model):
    window KV of every layer x r, compressed KV of 4x and 128x layers, indexer keys of 4x layers, and the
    compressor states (kv and score, fp32; overlapping 4x windows doubled) x r x ring / window."""
    c4_state = 2 * 2 * k.head_dim * STATE_BYTES
    c128_state = 2 * 1 * k.head_dim * STATE_BYTES
    c4_index_state = 2 * 2 * k.index_head_dim * STATE_BYTES
    return (
        swa_ratio * k.kv_token * k.layers
        + k.kv_token * k.c4_layers / 4
        + k.kv_token * k.c128_layers / 128
        + k.indexer_token * k.c4_layers / 4
        + swa_ratio * C4_RING / k.window * c4_state * k.c4_layers
        + swa_ratio * C128_RING / k.window * c128_state * k.c128_layers
        + swa_ratio * C4_RING / k.window * c4_index_state * k.c4_layers
    )


MAX_SWA_RATIO = 0.9  # server_args.py:1848


def window_tokens(chunk: int, concurrency: int) -> float:
    """What the window pool must hold: two chunks in flight x 1.05, the runtime's own rule for explicit
    --chunked-prefill-size and --max-total-tokens (server_args.py:1841-1849: below it long prompts hang on NO_TOKEN),
    plus one 256-token page per running request (a window of 128 fits one page)."""
    return 2 * chunk * 1.05 + concurrency * PAGE_SIZE


def full_tokens(tokens: int, chunk: int, concurrency: int) -> int:
    """--max-total-tokens: the promised tokens in whole pages, raised where the window pool at its 0.9 ceiling would
    not hold the chunks in flight (short contexts with long chunks)."""
    need = max(tokens, -(-int(window_tokens(chunk, concurrency) * 10) // int(MAX_SWA_RATIO * 10)))
    return -(-need // PAGE_SIZE) * PAGE_SIZE


def swa_ratio(tokens: int, chunk: int, concurrency: int) -> float:
    """The --swa-full-tokens-ratio a plan renders: the smallest share, in hundredths, whose window pool holds
    window_tokens, at least the runtime's 0.1 and at most its 0.9."""
    needed = window_tokens(chunk, concurrency)
    return min(MAX_SWA_RATIO, max(DEFAULT_SWA_RATIO, -(-int(needed * 100) // tokens) / 100))


def read_per_token(k: Layout, a: Attention, context: int) -> float:
    """KV bytes one decoded token's attention reads at this context (the main model's layers): each layer its window;
    a 4x layer the indexer keys of all its compressed entries and the top-k entries they pick; a 128x layer every
    compressed entry (models/deepseek_v4.py:358-455 C4Indexer, the compressed backend's sparse attention)."""
    ratios = a.compress_ratios[: a.full_attention_layers or len(a.compress_ratios)]
    window = min(context, k.window) * k.kv_token
    total = 0.0
    for r in ratios:
        total += window
        if r == 4:
            entries = context / 4
            total += entries * k.indexer_token + min(entries, a.index_topk) * k.kv_token
        elif r == 128:
            total += context / 128 * k.kv_token
    return total
