"""GLM-5-Next (GLM-5.3-Flash) start-up and memory rules of sglang-kt 0.7.2, read from its code.

server_args.py:1481-1671 (`_validate_glm5_next_session_ab_boundary`) and :1673-1730 (`_configure_glm5_next_session_ab_
nsa`) narrow what the runtime accepts for this one architecture far beyond the generic DSA branch; a plan that
renders anything else stops at start-up. The KV and state pools are model_runner_kv_cache_mixin.py's GLM branches and
mem_cache/glm5_next_memory_pool.py.
"""

from __future__ import annotations

from ktwizard.families.dsa import DsaKv
from ktwizard.models import glm5_next as model
from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.version import SGLANG_KT

SUPPORTED_TP = (1, 2, 4, 8)  # configs/glm5_next.py:18 GLM5_NEXT_SUPPORTED_TP_SIZES, checked at server_args.py:1545
PAGE_SIZE = 64  # server_args.py:1925-1927; glm5_next_memory_pool.py:85-86 refuses any other page size
NSA_BACKEND = "trtllm"  # server_args.py:1692-1706: both NSA prefill and decode must be the model-local trtllm
MOE_RUNNER = "triton"  # server_args.py:1586-1594: auto becomes triton, anything else is refused
KT_METHOD = "FP8"  # server_args.py:1620-1628: KT expert offload needs --kt-method FP8
GRAPH_MAX_BS = 4  # server_args.py:1656-1662: cuda_graph_bs is forced to [1, 2, 4]
TAIL_ROWS = 4  # index_kpool: one BF16 key tail and one BF16 score tail of 4 x index_head_dim per request and layer
# Flags the runtime refuses for this model (server_args.py:1484-1606); ktwizard must not render them.
REFUSED_FLAGS = frozenset(
    {"--enable-mixed-chunk", "--enable-piecewise-cuda-graph", "--enable-two-batch-overlap", "--enable-dp-attention"}
)


def applies(spec: ModelSpec) -> bool:
    return spec.attention.kind == model.KIND


def profile(cc_major: int, cc_minor: int) -> str | None:
    """configs/glm5_next.py:54-72 get_glm5_next_gpu_profile: SM86, SM89 and SM >= 100 only (SM90 fails closed)."""
    if (cc_major, cc_minor) == (8, 6):
        return "sm86_bf16"
    if (cc_major, cc_minor) == (8, 9):
        return "sm89_fp8"
    if cc_major >= 10:
        return "blackwell_fp8"
    return None


def _parse(cc: str) -> tuple[int, int] | None:
    try:
        major, minor = (int(x) for x in (cc.split(".") + ["0"])[:2])
    except ValueError:
        return None  # unknown capability: not gated (as runtime/kernels.py)
    return major, minor


def gpu_problem(spec: ModelSpec, capabilities: tuple[str, ...]) -> str | None:
    """Why sglang-kt 0.7.2 refuses GLM-5-Next on these GPUs, naming what would run; or None."""
    if not applies(spec):
        return None
    for cc in capabilities:
        parsed = _parse(cc)
        if parsed is None:
            continue
        major, minor = parsed
        if profile(major, minor) is None:
            return (
                f"{SGLANG_KT} runs GLM-5-Next only on SM86, SM89 or Blackwell (SM100+): SM{major}{minor} fails "
                "closed at start-up (configs/glm5_next.py:54-72, server_args.py:1676-1678); use RTX 3090/A6000-class "
                "(SM86), L40/RTX 4090-class (SM89) or Blackwell GPUs"
            )
    return None


def kv(cc_major: int, cc_minor: int) -> DsaKv:
    """The one KV dtype each GPU profile accepts (configs/glm5_next.py:33-40; server_args.py:1679-1690: auto becomes
    it, anything else is refused). The latent and the indexer keys share it (glm5_next_memory_pool.py:127-129)."""
    if profile(cc_major, cc_minor) == "sm86_bf16":
        return DsaKv("bfloat16", "SM86 has no E4M3 tensor cores: GLM-5-Next's sm86_bf16 profile (configs/glm5_next.py)")
    return DsaKv("fp8_e4m3", "the only KV dtype GLM-5-Next's SM89/Blackwell profile accepts (configs/glm5_next.py)")


def kv_for(capabilities: tuple[str, ...]) -> DsaKv:
    """Every rank runs the same dtype; an SM86 rank forces BF16 (an FP8 cache would be refused on it)."""
    parsed = [p for p in map(_parse, capabilities) if p is not None]
    return kv(8, 6) if (8, 6) in parsed else kv(9, 0) if not parsed else kv(*parsed[0])


def kv_problem(spec: ModelSpec, capabilities: tuple[str, ...], asked: str) -> str | None:
    """A --kv-dtype the GPU profile refuses (server_args.py:1686-1690), or None; `auto` takes the profile's."""
    if not applies(spec) or asked in ("auto", ""):
        return None
    need = kv_for(capabilities).dtype
    if {"bf16": "bfloat16"}.get(asked, asked) == need:
        return None
    return (
        f"--kv-dtype {asked}: {SGLANG_KT} runs GLM-5-Next on this GPU only with a {need} KV cache "
        "(configs/glm5_next.py:33-40, server_args.py:1686-1690); use --kv-dtype auto"
    )


def cell_bytes(spec: ModelSpec, fp8: bool) -> int:
    """KV bytes per token over the DSA layers (ModelSpec.kv_cell_bytes holds the arithmetic, with its lines)."""
    return spec.kv_cell_bytes(1, 1 if fp8 else 2)


def tail_bytes(spec: ModelSpec, requests: int) -> int:
    """The KPool live tails (model_runner_kv_cache_mixin.py:195-227; glm5_next_memory_pool.py:179-196): per request
    slot and DSA layer, a BF16 key tail and a BF16 score tail of index_kpool x index_head_dim, taken out of the token
    budget before the pool is built (:613-622)."""
    a = spec.attention
    return a.full_attention_layers * requests * TAIL_ROWS * a.index_head_dim * 2 * 2


def method_problem(spec: ModelSpec, method: str) -> str | None:
    if not applies(spec):
        return None
    if spec.expert_format.kind != "fp8_block":
        return (
            f"{SGLANG_KT} serves GLM-5-Next only from its native block-FP8 checkpoint "
            f"(server_args.py:1535-1539), not {spec.expert_format.describe()} weights"
        )
    if method.upper() != KT_METHOD:
        return (
            f"{SGLANG_KT} offloads GLM-5-Next's experts only with --kt-method FP8 (server_args.py:1620-1628: "
            f"the block-E4M3 layout and swiglu_limit reach the CPU kernel only there), not {method}"
        )
    return None


def layerwise_reason() -> str:
    return (
        "GLM-5-Next's layerwise prefill sets --kt-num-gpu-experts to 0 (server_args.py:1630-1646) and is refused "
        "on SM86; ktwizard keeps GPU experts instead"
    )
