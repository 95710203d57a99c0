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
PAGE_ALIGN = 576  # deepseekv4_memory_pool.py:122: a KV page's bytes are padded to a multiple of 576


@dataclass(frozen=True)
class PoolSizes:
    """DSv4PoolSizes as memory_profiler.py:110-130 (calculate_pool_sizes) derives them from --max-total-tokens."""

    full: int
    swa: int
    c4: int
    c128: int
    c4_state: int
    c128_state: int


def pool_sizes(k: Layout, max_total_tokens: int, swa_ratio: float) -> PoolSizes:
    """get_pool_sizes_by_configuration (memory_profiler.py:150-152) then calculate_pool_sizes, with the runtime's own
    float steps: available = cap x bytes per token, full = int(available / bytes per token) floored to a page."""
    per_token = bytes_per_full_token(k, swa_ratio)
    full = int(max_total_tokens * per_token / per_token) // PAGE_SIZE * PAGE_SIZE
    swa = int(full * swa_ratio) // PAGE_SIZE * PAGE_SIZE
    return PoolSizes(full, swa, full // 4, full // 128, swa // k.window * C4_RING, swa // k.window * C128_RING)


def _pages(size: int, page: int) -> int:
    return (size + page + 1) // page  # every sub-pool's page count (deepseekv4_memory_pool.py:97, :309)


def _kv_page_bytes(k: Layout, page: int) -> int:
    return -(-page * k.kv_token // PAGE_ALIGN) * PAGE_ALIGN


def _state_rows(size: int, ring: int, ratio: int) -> int:
    return -(-(size + ring + 1) // ratio) * ratio  # compress_state.py:122-123


def allocated_bytes(k: Layout, layers: int, sizes: PoolSizes) -> int:
    """What DeepSeekV4TokenToKVPool allocates for these sizes (deepseekv4_memory_pool.py:445-567, FP8 cache), the
    figure the calculator's per-token average leaves out: every sub-pool holds one page more than its size, a KV
    page is padded to 576 B, and each compressor-state ring buffer is rounded up to its ratio.
    - window KV: `layers` (the main model's) x pages of 256 tokens;
    - 4x KV and indexer keys: one per 4x entry in compress_ratios, pages of 64 compressed entries;
    - 128x KV: pages of 2 entries;
    - fp32 compressor states per compressed layer (compress_state.py:105-145): kv and score, doubled on 4x layers
      (overlapping windows), and the 4x layers' indexer state."""
    c4_page, c128_page = PAGE_SIZE // 4, PAGE_SIZE // 128
    index_page = c4_page * (k.index_head_dim + k.index_head_dim // INDEX_QUANT_BLOCK * 4)
    c4_rows = _state_rows(sizes.c4_state, C4_RING, 4)
    c128_rows = _state_rows(sizes.c128_state, C128_RING, 128)
    return (
        layers * _pages(sizes.swa, PAGE_SIZE) * _kv_page_bytes(k, PAGE_SIZE)
        + k.c4_layers * _pages(sizes.c4, c4_page) * (_kv_page_bytes(k, c4_page) + index_page)
        + k.c128_layers * _pages(sizes.c128, c128_page) * _kv_page_bytes(k, c128_page)
        + k.c4_layers * c4_rows * 2 * 2 * (k.head_dim + k.index_head_dim) * STATE_BYTES
        + k.c128_layers * c128_rows * 2 * k.head_dim * STATE_BYTES
    )


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
