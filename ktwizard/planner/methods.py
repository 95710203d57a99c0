"""Which kt-kernel method can serve this checkpoint on this CPU, and what it needs.

Reference: §5.2 of kt-cli-and-flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.errors import BadInput
from ktwizard.families.registry import of as family_of
from ktwizard.host.isa import kt_variant
from ktwizard.models.spec import ModelSpec
from ktwizard.runtime.version import SGLANG_KT

NATIVE = {
    "int4_group": "RAWINT4",
    "fp8_block": "FP8",
    "fp8_channel": "FP8_PERCHANNEL",
    "bf16": "BF16",
    "mxfp4": "MXFP4",
    "mxfp8": "MXFP8",
    "nvfp4": "NVFP4",
    "gptq_int4": "GPTQ_INT4",
}
CONVERTED = ("AMXINT4", "AMXINT8")
METHODS = (*NATIVE.values(), *CONVERTED)  # every method ktwizard can size, in the order the wizard lists them
LAYERWISE = ("RAWINT4", "FP8", "FP8_PERCHANNEL", "BF16", "MXFP4", "MXFP8")  # write_weight_scale_to_buffer exists
# Native methods whose CPU class has write_weight_scale_to_buffer_task (AVX2GPTQInt4_MOE, AVX2MXFP4_MOE in kt-kernel
# 0.7.2's builds) but for which sglang-kt 0.7.2 cannot build the full-GPU layer: the layer is a copy of the checkpoint's
# GPU MoE layer, and SharedFullContext knows only the INT4 compressed-tensors, block/per-channel FP8, BF16, MXFP4 and
# MXFP8 layouts (layers/moe/kt_ep_wrapper.py:817-894, 2721-2752). The first prompt over the threshold would fail.
LAYERWISE_GAPS = {
    "GPTQ_INT4": (
        f"{SGLANG_KT} cannot build the full-GPU layer for GPTQ: the GPTQ-Marlin layer (w13_qweight/w13_scales, "
        "layers/quantization/gptq.py:1040-1150) matches none of the layouts the layerwise path knows and falls to the "
        "compressed-tensors INT4 names it lacks (layers/moe/kt_ep_wrapper.py:817-894, 1026-1031, 1163), so the first "
        "prompt over the threshold would fail"
    ),
    "NVFP4": (
        f"{SGLANG_KT} cannot build the full-GPU layer for NVFP4: the ModelOpt FP4 layer (uint8 w13_weight, e4m3 "
        "w13_weight_scale; layers/quantization/modelopt_quant.py:1385-1445) is taken for FP8 per-channel "
        "(layers/moe/kt_ep_wrapper.py:862-869) and its swizzled block scales and per-tensor scales, which the FP4 "
        "kernel reads, are never refilled (:2357-2440)"
    ),
}
AVX512_BF16_UP = ("amx", "avx512_bf16")
AVX512_BELOW_BF16 = ("avx512_vbmi", "avx512_vnni", "avx512_base")  # AVX-512 builds that lack avx512_bf16
AVX2_SLOWER = (
    "kt-kernel's AVX2 kernels use 256-bit vectors: CPU-expert prefill runs at roughly half the AVX-512 rate; "
    "decode is bound by memory bandwidth and changes little"
)


@dataclass(frozen=True)
class Support:
    """One cell of the method x ISA table (kt-cli-and-flags §5.2, from kt-kernel's ext_bindings.cpp and amx.py)."""

    ok: bool
    why: str = ""  # why not, or what the fallback costs
    variant: str | None = None  # the kt-kernel build to force with KT_KERNEL_CPU_VARIANT (None: the detected one)


def support(method: str, variant: str | None) -> Support:
    """Can kt-kernel run `method` on a CPU whose best build is `variant`, and with which build?"""
    if variant is None:
        return Support(False, "the CPU has no AVX2, kt-kernel's minimum")
    if method in CONVERTED:
        return Support(
            variant == "amx", "AMXINT4/AMXINT8 need AMX (amx_tile, amx_int8, amx_bf16): Sapphire Rapids or newer"
        )
    if method == "FP8_PERCHANNEL":
        return Support(
            variant in AVX512_BF16_UP, "FP8_PERCHANNEL needs AVX-512 with BF16 and VBMI (no AVX2 kernel exists)"
        )
    if method == "NVFP4":
        # Only kt-kernel's AVX2 FP4 kernel has the group-16 path; every build above avx2 compiles the AMX FP4
        # kernel too, which the wrapper would pick and then refuse (kt_kernel/utils/amx.py:926-955). The avx2
        # build lacks it, so the AVX2 kernel is chosen.
        return Support(
            True,
            "NVFP4 runs only on kt-kernel's AVX2 FP4 kernel (group 16; the AMX FP4 kernel is group 32)"
            + (f"; {AVX2_SLOWER}" if variant != "avx2" else ""),
            None if variant == "avx2" else "avx2",
        )
    if method == "MXFP8":
        # e4m3 bytes + a ue8m0 scale per 32 (MiniMaxAI/MiniMax-M3-MXFP8: kt_kernel/cli/utils/model_registry.py:174-194).
        # kt-kernel picks the kernel when the layer loads (kt_kernel/utils/amx.py:245-280): AMXMXFP8_KGroup_MOE iff
        # the CPU has amx_tile + amx_bf16, else AVX2MXFP8_MOE, which every build from avx2 to amx contains (the
        # avx512_* builds would SIGILL in the AMX kernel, so it is not chosen there). No build needs forcing.
        if variant == "amx":
            return Support(True, "MXFP8 runs on kt-kernel's AMX MXFP8 kernel (AMXMXFP8_KGroup_MOE)")
        return Support(
            True,
            "MXFP8 runs on kt-kernel's AVX2 MXFP8 kernel (AVX2MXFP8_MOE): its AMX kernel needs AMX tiles and "
            "there is no AVX-512 one" + (f"; {AVX2_SLOWER}" if variant != "avx2" else ""),
        )
    if method == "GPTQ_INT4":
        # AVX2GPTQInt4_MOE is in every build; AVX-VNNI-256 kernels are picked on CPUs with avx_vnni (amx.py:162-167)
        return Support(True)
    if method in ("BF16", "MXFP4", "FP8") and variant in AVX512_BELOW_BF16:
        # The AVX-512 classes for these need avx512_bf16 (BF16 risks SIGILL since kt-kernel's guard was reverted;
        # FP8 wants F+BW+BF16+VBMI), but every AVX-512 CPU also runs the AVX2 classes (AVX2BF16_MOE, AVX2FP8_MOE,
        # AVX2MXFP4_MOE): load kt-kernel's avx2 build, which is below the detected level and so allowed.
        return Support(
            True,
            f"{method} on AVX-512 without avx512_bf16 runs kt-kernel's AVX2 build "
            f"(KT_KERNEL_CPU_VARIANT=avx2); {AVX2_SLOWER}",
            "avx2",
        )
    if method in NATIVE.values():
        return Support(True)
    return Support(
        False, f"ktwizard cannot size method {method} (LLAMAFILE/GGUF, SYCL_GPTQ_INT4 and MOE_INT* are not planned yet)"
    )


@dataclass(frozen=True)
class MethodChoice:
    """The CPU expert method a plan uses, whether it is the checkpoint's own, and why."""

    method: str
    native: bool  # reads the checkpoint's own routed experts (--kt-weight-path = --model)
    why: str
    cpu_variant: str | None = None  # force this kt-kernel build (KT_KERNEL_CPU_VARIANT)


def runnable(method: str, variant: str | None) -> tuple[bool, str]:
    """Can kt-kernel run `method` here? (ok, reason when not)."""
    s = support(method, variant)
    return s.ok, s.why


def layerwise_supported(spec: ModelSpec, method: str) -> tuple[bool, str]:
    """Can the runtime build the full-GPU layer for long prefills with this method and model?"""
    if method in LAYERWISE_GAPS:
        return False, LAYERWISE_GAPS[method]
    if method not in LAYERWISE:
        return False, f"{method} has no layerwise prefill path (native methods only)"
    if refusal := family_of(spec).layerwise_refusal(spec):  # GLM-5-Next, gpt-oss: families/<name>/
        return False, refusal
    return True, ""


def runnable_methods(flags: tuple[str, ...]) -> tuple[str, ...]:
    """The methods kt-kernel's build for this CPU can run (the wizard's method list, the CLI's check)."""
    variant = kt_variant(flags)
    return tuple(m for m in METHODS if runnable(m, variant)[0])


def choose_method(spec: ModelSpec, flags: tuple[str, ...], requested: str | None) -> MethodChoice:
    variant = kt_variant(flags)
    native = NATIVE.get(spec.expert_format.kind)
    if requested:
        method = requested.upper()
        cell = support(method, variant)
        if not cell.ok:
            raise BadInput(f"--method {method}: this CPU ({variant or 'no AVX2'}) cannot run it: {cell.why}")
        if method not in CONVERTED and method != native:
            raise BadInput(
                f"--method {method} reads {method} experts, but the checkpoint stores "
                f"{spec.expert_format.describe()}; use {native} or a converted method (AMXINT4/AMXINT8)"
            )
        if method in CONVERTED:
            return MethodChoice(
                method,
                False,
                f"requested; {method} reads CPU weights converted ahead of time",
            )
        return MethodChoice(
            method,
            True,
            "requested; reads the checkpoint's own routed experts" + (f"; {cell.why}" if cell.why else ""),
            cpu_variant=cell.variant,
        )
    if native is None:
        raise BadInput(f"no kt-kernel method reads {spec.expert_format.describe()} experts directly")
    cell = support(native, variant)
    if cell.ok:
        return MethodChoice(
            native,
            True,
            f"the checkpoint stores routed experts as {spec.expert_format.describe()}; {native} reads them "
            f"as they are (no conversion) on kt-kernel's {cell.variant or variant} build"
            + (f" ({cell.why})" if cell.why else ""),
            cpu_variant=cell.variant,
        )
    reason = cell.why
    if variant == "amx":
        return MethodChoice(
            "AMXINT8",
            False,
            f"{native} cannot run here ({reason}); AMXINT8 is the accurate AMX method",
        )
    raise BadInput(
        f"no kt-kernel method can serve {spec.expert_format.describe()} experts on this CPU ({variant}): {reason}"
    )
