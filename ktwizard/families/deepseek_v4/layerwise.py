"""DeepSeek-V4 MXFP4 layerwise prefill: what the runtime keeps on each GPU, and what it reserves before the KV pool.

With `--kt-method MXFP4` and `--kt-gpu-prefill-token-threshold` > 0 the runtime builds a full-expert layer on the
first prompt over the threshold, and what it keeps depends on the GPU (paths in the sglang-kt 0.7.2 wheel):

- SM 8.9 / 12.0 (`_MARLIN_MXFP4_CAPS`, layers/quantization/mxfp4_deepseek.py:83; kt_ep_wrapper.py:3403-3423): the
  two-slot Marlin manager. Slot 0 is the shared context layer as DeepSeekMxfp4MoEMethod creates it (int8 nibbles,
  fp32 scales, mxfp4_deepseek.py:204-262), slot 1 an `empty_like` of it, and two Marlin-prepared images
  (kt_ep_wrapper.py:3553-3578, :2809-2836; shapes v4_marlin_moe.py:116-152). All four persist once allocated.
  Start-up does not allocate them but subtracts their bytes from the memory it profiles for the KV pool
  (get_mxfp4_layerwise_prefill_reservation_bytes, kt_ep_wrapper.py:3450-3494; model_runner.py:593-607;
  memory_profiler.py:129-175), so `--mem-fraction-static` must leave that reservation too.
- Other non-SM100 GPUs (SM 9.0 among them): the serial shared context. Its layer keeps the loaded form beside the
  triton_kernels copy (`_keep_raw_for_full_gpu_fallback`, mxfp4_deepseek.py:378-400), and every layer's load
  converts again (kt_ep_wrapper.py:2313-2355: "every load() call must run the full pipeline"): the new copy is built
  while the previous layer's is still bound to the layer. No reservation (the manager path is not supported there).
- SM 10.0 (TRT-LLM): converted in place; planner/memory/ledger.layerwise_layer's one layer, unchanged.

Moved from planner/memory/dsv4_layerwise.py (issue #50); the family answers it (DeepSeekV4.layerwise_kept,
layerwise_reservation, keeps_loaded_experts).
"""

from __future__ import annotations

from ktwizard.families.base import LAYER_STEP, KeptItem
from ktwizard.models.spec import ModelSpec

MARLIN_CCS = ("8.9", "12.0")  # _MARLIN_MXFP4_CAPS, mxfp4_deepseek.py:83; kt_ep_wrapper.py:3414
TRTLLM_CCS = ("10.0",)  # _TRTLLM_FP4_CAPS, mxfp4_deepseek.py:82
FP4_GROUP = 32  # V4_FP4_GROUP_SIZE, v4_marlin_moe.py:24
MARLIN_TILE = 16  # _MARLIN_TILE, v4_marlin_moe.py:25
KEPT_PHASES = ("short prompt", "longest prompt", "decode")
PREFILL_PHASES = ("short prompt", "longest prompt")


def applies(spec: ModelSpec, method: str) -> bool:
    """The runtime's own gate (_mxfp4_pipeline_requested, kt_ep_wrapper.py:3396-3400) on a V4 MXFP4 checkpoint, with
    layerwise prefill on."""
    return method.upper() == "MXFP4" and spec.expert_format.kind == "mxfp4"


def keeps_raw(capabilities: tuple[str, ...]) -> bool:
    """Layerwise prefill keeps the loaded experts beside the converted copy, except on SM100 (TRT-LLM converts in
    place, mxfp4_deepseek.py:82, :404-)."""
    return any(cc != "10.0" for cc in capabilities)


def path(compute_capability: str) -> str:
    """marlin | triton_kernels | trtllm: the full-expert layer's backend on a GPU of this capability."""
    if compute_capability in MARLIN_CCS:
        return "marlin"
    return "trtllm" if compute_capability in TRTLLM_CCS else "triton_kernels"


def _shape(spec: ModelSpec, tp: int) -> tuple[int, int, int]:
    # every expert of the layer; the intermediate dimension split over TP (_full_init_args, kt_ep_wrapper.py:5228)
    return spec.routed_experts, spec.hidden, spec.moe_intermediate // tp


def raw_slot_bytes(spec: ModelSpec, tp: int) -> int:
    """One full layer as create_weights makes it: int8 nibbles and fp32 scales (_mxfp4_raw_slot_storage_nbytes,
    kt_ep_wrapper.py:3425-3447)."""
    e, h, i = _shape(spec, tp)
    return e * (2 * i) * (h // 2) + e * h * (i // 2) + (e * (2 * i) * (h // FP4_GROUP) + e * h * (i // FP4_GROUP)) * 4


def prepared_slot_bytes(spec: ModelSpec, tp: int) -> int:
    """One Marlin-prepared image: int32 w13 / w2 and e8m0 scales (get_v4_mxfp4_marlin_storage_nbytes,
    v4_marlin_moe.py:116-152)."""
    e, h, i = _shape(spec, tp)
    w13 = e * (h // MARLIN_TILE) * (4 * i) * 4
    w2 = e * (i // MARLIN_TILE) * (2 * h) * 4
    return w13 + e * (h // FP4_GROUP) * (2 * i) + w2 + e * (i // FP4_GROUP) * h


def converted_bytes(spec: ModelSpec, tp: int) -> int:
    """The triton_kernels copy of one full layer: the nibbles and the scales cast to e8m0 (one byte per 32;
    v4_triton_kernels_moe.py:317-381), counted as a full copy."""
    e, h, i = _shape(spec, tp)
    return e * (2 * i) * (h // 2) + e * h * (i // 2) + e * (2 * i) * (h // FP4_GROUP) + e * h * (i // FP4_GROUP)


def reservation(spec: ModelSpec, tp: int, compute_capability: str) -> int:
    """What start-up subtracts before profiling the KV pool on this rank (kt_ep_wrapper.py:3450-3494): two raw and
    two prepared slots where the Marlin manager runs, else nothing."""
    if path(compute_capability) != "marlin":
        return 0
    return 2 * (raw_slot_bytes(spec, tp) + prepared_slot_bytes(spec, tp))


def items(spec: ModelSpec, tp: int, compute_capability: str) -> tuple[KeptItem, ...] | None:
    """The ledger items of the full-expert layer on this GPU; None where the generic one-layer item holds (SM100)."""
    kind = path(compute_capability)
    raw, layers = raw_slot_bytes(spec, tp), f"{spec.routed_experts} experts" + (f", ÷{tp} TP" if tp > 1 else "")
    if kind == "marlin":
        return (
            KeptItem(
                "layerwise raw slots (kept)",
                2 * raw,
                f"2 x {raw} B: the shared context layer ({layers}; int8 nibbles, fp32 scales) and an empty_like of "
                "it, allocated on the first long prompt and kept",
                live=KEPT_PHASES,
                source="srt/layers/moe/kt_ep_wrapper.py:743-748, :3553-3580, :2809-2836; "
                "srt/layers/quantization/mxfp4_deepseek.py:204-262",
            ),
            KeptItem(
                "layerwise Marlin images (kept)",
                2 * prepared_slot_bytes(spec, tp),
                f"2 x {prepared_slot_bytes(spec, tp)} B: one Marlin-prepared full layer per slot ({layers}; int32 "
                "weights, e8m0 scales)",
                live=KEPT_PHASES,
                source="srt/layers/moe/kt_ep_wrapper.py:3571-3579; srt/layers/quantization/v4_marlin_moe.py:116-179",
            ),
        )
    if kind == "trtllm":
        return None
    conv = converted_bytes(spec, tp)
    return (
        KeptItem(
            "layerwise layer (kept)",
            raw + conv,
            f"the shared context layer ({layers}) in its loaded form ({raw} B, fp32 scales) kept beside its "
            f"triton_kernels copy ({conv} B), allocated on the first long prompt and kept",
            live=KEPT_PHASES,
            source="srt/layers/moe/kt_ep_wrapper.py:743-748, :2313-2355, :556, :6288; "
            "srt/layers/quantization/mxfp4_deepseek.py:357-402",
        ),
        KeptItem(
            "layerwise previous copy (converting)",
            conv,
            "each layer's load converts the context layer again while the previous layer's copy is still bound to it "
            "(freed when the new one replaces it, before the MoE step runs)",
            estimate=False,
            live=PREFILL_PHASES,
            source="srt/layers/moe/kt_ep_wrapper.py:2334-2355; srt/layers/quantization/mxfp4_deepseek.py:372-399",
            exclusive=LAYER_STEP,
        ),
    )
