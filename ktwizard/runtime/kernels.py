"""Which GPU architectures sglang-kt 0.7.2 has kernels for, per checkpoint weight format (GPU-side experts and the
other linear layers), read from the runtime's quantization configs.

The runtime refuses a checkpoint whose quantization config asks for more than the GPU's compute capability
(sglang/srt/model_loader/loader.py:228-241: `capability < quant_config.get_min_capability()` raises at load), so a
plan for such a GPU would start, load for minutes and die. kt-kernel's CPU side has its own table
(planner/methods.py); this one is the GPU side.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.rules import is_dsv4
from ktwizard.runtime.version import SGLANG_KT


@dataclass(frozen=True)
class GpuKernel:
    """The lowest compute capability a quantization's GPU kernels run on, and where that was read."""

    quant: str  # the runtime's quantization config name
    min_capability: int  # major * 10 + minor, as loader.py:234 computes it
    source: str  # where the number was read


# WeightFormat.kind -> the quantization config the runtime builds for it. BF16 needs none.
GPU_KERNELS = {
    "fp8_block": GpuKernel("fp8", 80, "sglang/srt/layers/quantization/fp8.py:162-165 (Marlin fallback below SM89)"),
    "fp8_channel": GpuKernel("fp8", 80, "sglang/srt/layers/quantization/fp8.py:162-165"),
    "fp8_ue8m0": GpuKernel("fp8", 80, "sglang/srt/layers/quantization/fp8.py:162-165 (DeepSeek-V4's block FP8)"),
    "int4_group": GpuKernel("compressed_tensors", 70, "sglang/srt/layers/quantization/compressed_tensors/"),
    "mxfp4": GpuKernel("mxfp4", 80, "sglang/srt/layers/quantization/mxfp4.py:242-243"),
    # below SM100 the weights are converted to 128x128 block FP8 at load (sglang/srt/utils/common.py:3606-3616)
    "mxfp8": GpuKernel("mxfp8", 80, "sglang/srt/layers/quantization/fp8.py:162-165, utils/common.py:3606-3616"),
    "nvfp4": GpuKernel("modelopt_fp4", 100, "sglang/srt/layers/quantization/modelopt_quant.py:951-953"),
    # A MoE model needs gptq_marlin (SM80, gptq.py:346-347; marlin_utils.py:89 offers no type below 80): below it the
    # checkpoint stays plain gptq (SM60), whose get_quant_method raises for every MoE layer (gptq.py:246-247).
    "gptq_int4": GpuKernel(
        "gptq_marlin", 80, "sglang/srt/layers/quantization/gptq.py:246-247, 346-347; marlin_utils.py:89"
    ),
}

# What to download instead when the GPU is too old for a format (same model, another checkpoint).
INSTEAD = {
    "nvfp4": "the FP8 or BF16 checkpoint of this model (FP8 needs SM80+), or a Blackwell GPU (SM100/SM120)",
    "mxfp8": "the BF16 checkpoint, or an Ampere-or-newer GPU",
    "mxfp4": "the BF16 checkpoint, or an Ampere-or-newer GPU",
    "fp8_block": "the BF16 checkpoint, or an Ampere-or-newer GPU",
    "fp8_channel": "the BF16 checkpoint, or an Ampere-or-newer GPU",
    "gptq_int4": "the BF16 checkpoint, or an Ampere-or-newer GPU",
}


def capability(compute_capability: str) -> int:
    """'8.9' -> 89; unknown -> 0 (not gated: a hand-written host without it is not refused)."""
    try:
        major, minor = compute_capability.split(".")[:2]
        return int(major) * 10 + int(minor)
    except ValueError:
        return 0


def gpu_problem(spec: ModelSpec, capabilities: tuple[str, ...]) -> str | None:
    """Why these GPUs cannot load this checkpoint's weights in sglang-kt 0.7.2, naming what would run; or None."""
    known = [c for c in (capability(c) for c in capabilities) if c]
    if not known:
        return None
    lowest = min(known)
    if is_dsv4(spec):
        from ktwizard.families.deepseek_v4.rules import DSV4_MIN_CC  # importing it loads the family's whole folder

        if lowest < DSV4_MIN_CC:
            return (
                f"the GPU (SM{lowest}) cannot serve DeepSeek-V4: KTransformers' tutorial lists Ampere as not "
                "supported (doc/en/DeepSeek-V4-Flash.md, GPU table) and the compressed-attention pool keeps FP8 keys "
                "only from SM89 (mem_cache/deepseekv4_memory_pool.py:504-509); use an Ada (SM89), Hopper or Blackwell "
                "GPU, or a model with MLA attention such as deepseek-v3.2"
            )
    for fmt in (spec.expert_format, spec.other_format):
        kernel = GPU_KERNELS.get(fmt.kind)
        if kernel and lowest < kernel.min_capability:
            need = f"SM{kernel.min_capability}"
            return (
                f"the GPU (SM{lowest}) has no kernel for {fmt.describe()} weights: {SGLANG_KT}'s {kernel.quant} "
                f"needs {need} or newer and refuses to load ({kernel.source}); use "
                + INSTEAD.get(fmt.kind, f"a GPU of {need} or newer")
            )
    return None
