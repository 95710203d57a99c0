"""Storage formats of weights and the bytes one routed expert takes in each.

One routed expert is three matrices: gate [I, H], up [I, H], down [H, I] (reference/model-facts.md §2).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

DTYPE_BYTES = {
    "BF16": 2,
    "F16": 2,
    "F32": 4,
    "F64": 8,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "I16": 2,
    "I32": 4,
    "I64": 8,
    "BOOL": 1,
}


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint's weights are stored: the kind of quantization and its block or group size."""

    kind: str  # bf16 | fp8_block | fp8_ue8m0 | fp8_channel | int4_group | mxfp4 | mxfp8 | nvfp4 | gptq_int4
    block: int = 0  # FP8 block edge (128) or INT4 / MX group size
    label: str = ""

    def describe(self) -> str:
        return self.label or {
            "bf16": "BF16",
            "fp8_block": f"FP8 e4m3, {self.block}x{self.block} blocks",
            "fp8_ue8m0": f"FP8 e4m3, {self.block}x{self.block} blocks, ue8m0 scales",
            "fp8_channel": "FP8 e4m3, per-channel",
            "int4_group": f"INT4 group {self.block} (compressed-tensors)",
            "mxfp4": "MXFP4 (e2m1 + ue8m0 per 32)",
            "mxfp8": "MXFP8 (e4m3 + ue8m0 per 32)",
            "nvfp4": "NVFP4 (e2m1 + e4m3 per 16, ModelOpt)",
            "gptq_int4": f"GPTQ INT4 group {self.block}",
        }.get(self.kind, self.kind)


BF16 = WeightFormat("bf16")


def linear_bytes(fmt: WeightFormat, out_f: int, in_f: int) -> int:
    """Bytes of one [out, in] linear weight in a checkpoint format, scales included."""
    if fmt.kind == "bf16":
        return out_f * in_f * 2
    if fmt.kind == "fp8_block":
        b = fmt.block
        return out_f * in_f + 4 * ceil(out_f / b) * ceil(in_f / b)
    if fmt.kind == "fp8_ue8m0":
        # DeepSeek-V4: `.weight` F8_E4M3 and `.scale` F8_E8M0, one byte per block (models/deepseek_v4.py:1673-1675)
        b = fmt.block
        return out_f * in_f + ceil(out_f / b) * ceil(in_f / b)
    if fmt.kind == "fp8_channel":
        return out_f * in_f + 4 * out_f
    if fmt.kind == "int4_group":
        return out_f * in_f // 2 + 2 * out_f * (in_f // fmt.block) + 8  # packed int32, bf16 scales, int32[2] shape
    if fmt.kind in ("mxfp4", "mxfp8"):
        data = out_f * in_f // 2 if fmt.kind == "mxfp4" else out_f * in_f
        return data + out_f * (in_f // 32)
    if fmt.kind == "nvfp4":
        # ModelOpt: weight U8 [out, in/2], weight_scale F8_E4M3 [out, in/16], weight_scale_2 and input_scale F32
        # scalars (kt_kernel/utils/loader.py:1312-1320)
        return out_f * in_f // 2 + out_f * (in_f // 16) + 8
    if fmt.kind == "gptq_int4":
        # GPTQ: qweight I32 [in/8, out], scales F16 [in/g, out], qzeros I32 [in/g, out/8], g_idx I32 [in]
        g = fmt.block
        return out_f * in_f // 2 + 2 * out_f * (in_f // g) + out_f * (in_f // g) // 2 + 4 * in_f
    raise ValueError(f"unknown weight format {fmt.kind}")


def expert_bytes(fmt: WeightFormat, hidden: int, inter: int) -> int:
    return 2 * linear_bytes(fmt, inter, hidden) + linear_bytes(fmt, hidden, inter)


# CPU-side layouts of kt-kernel's methods (reference/model-facts.md §2, kt-kernel amx_buffers.hpp / k2-moe.hpp).
def cpu_expert_bytes(method: str, hidden: int, inter: int, group: int = 32, native: int | None = None) -> int | None:
    """Bytes one routed expert takes in host RAM under a kt-method; None when ktwizard cannot size it."""
    n = 3 * hidden * inter
    rows = 2 * inter + hidden
    if method == "AMXINT4":
        return n // 2 + 4 * rows  # int4 + one fp32 scale per output row
    if method == "AMXINT8":
        return n + 4 * rows  # int8 + one fp32 scale per row (assumed, reference §7)
    if method == "RAWINT4":
        # the INT4 checkpoint as-is, but k2-moe.hpp widens its bf16 group scales to fp32 in RAM
        return n // 2 + 4 * (2 * inter * (hidden // group) + hidden * (inter // group))
    if method == "NVFP4":
        # the nibbles as stored; the loader folds both scale levels into one bf16 per 16 (kt_kernel/utils/loader.py:
        # 1350-1354), which AVX2MXFP4_MOE widens into its FP32 group scales (kt-kernel avx2/mxfp4-moe.hpp BufferB:
        # n*k/2 + n*(k/group)*4 B; TP_MOE::load_weights convert_or_copy bf16 -> fp32)
        return n // 2 + 4 * (n // 16)
    if method == "GPTQ_INT4":
        # qweight as stored; the fp16 scales widened to fp32, qzeros and g_idx not kept (loader.py:1183-1185)
        return n // 2 + 4 * (n // group)
    if method == "MXFP4":
        # DeepSeek-V4's experts: the nibbles as stored, each ue8m0 scale widened to bf16 by the loader for the AMX
        # FP4 kernel (MXFP4SafeTensorLoader._ue8m0_to_bf16, kt_kernel/utils/loader.py:1222-1252; amx.py:827-830)
        return n // 2 + 2 * (n // 32)
    if method == "MXFP8":
        # MiniMax-M3's experts: the e4m3 bytes as stored, each ue8m0 scale widened to FP32 at load (amx.py:834-836
        # hands the uint8 scales to convert_ue8m0_to_fp32): BufferB = n*k + 4*n*(k/32) B in both kt-kernel MXFP8
        # kernels (kvcache-ai/ktransformers@03c5448d kt-kernel/operators/amx/mxfp8-moe.hpp BufferBMXFP8KGroupImpl,
        # and its AVX2 twin's BufferB::required_size)
        return n + 4 * (n // 32)
    if method in ("FP8", "FP8_PERCHANNEL", "BF16"):
        return native
    return None
