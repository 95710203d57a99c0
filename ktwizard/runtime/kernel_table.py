"""Which GPU architectures each kernel a rendering can reach really has in the sglang-kt 0.7.2 / kt-kernel 0.7.2
wheels, the Python condition that dispatches to it, and the plan check built on both (issue #49).

`cubins` are the SM targets embedded in the shared object, read by tools/fatbin.py from the pinned wheels (the
oracle tests/fixtures/oracles/kernel-cubins.json; tests/unit/test_kernel_table.py checks both). A cubin for sm_XY
runs on X.Z for Z >= Y; an arch-specific sm_XYa only on X.Y. JIT kernels (Triton, tilelang, DeepGEMM, FlashInfer)
have no fixed cubin list: `majors` is the set of architecture majors their own code implements, with its source.
Sources are sglang/srt/... in the sglang-kt wheel unless they name kt-kernel's packages (sgl_kernel, deep_gemm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ktwizard.models.glm5_next import KIND as GLM5_NEXT_KIND
from ktwizard.models.spec import ModelSpec
from ktwizard.runtime import dsa
from ktwizard.runtime.kernels import capability
from ktwizard.runtime.version import SGLANG_KT


@dataclass(frozen=True)
class Kernel:
    """One GPU kernel of the runtime: its binary, the architectures it was built for and what it needs."""

    id: str
    binary: str  # the shared object in the wheels ("payload:" = split over the payload wheels); "" for JIT code
    cubins: tuple[str, ...]  # SM targets read from `binary`
    majors: tuple[int, ...]  # the Python dispatch's (or JIT code's) architecture majors; () = any of the cubins
    min_cc: int  # lowest compute capability at all (major * 10 + minor)
    dispatch: str
    source: str

    def runs_on(self, cc: int) -> bool:
        if cc < self.min_cc or (self.majors and cc // 10 not in self.majors):
            return False
        return not self.cubins or any(_cubin_runs(t, cc) for t in self.cubins)


def _cubin_runs(target: str, cc: int) -> bool:
    if not target.startswith("sm_"):
        return True  # PTX is compiled by the driver for any newer GPU
    digits = target[3:].rstrip("af")
    sm = int(digits)
    if target.endswith("a"):
        return cc == sm
    return cc // 10 == sm // 10 and cc % 10 >= sm % 10


COMMON = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a")
TABLE: tuple[Kernel, ...] = (
    Kernel("sgl_kernel.common_ops", "payload:sgl_kernel/sm100/common_ops.abi3.so", COMMON, (), 80,
           "loaded by every plan; SM90 looks for sgl_kernel/sm90/ first, every other GPU sm100/ (the only one "
           "shipped, materialized from the payload wheels)",
           "sgl_kernel/load_utils.py:59-83"),
    Kernel("sgl_kernel.spatial_ops", "sgl_kernel/spatial_ops.abi3.so", COMMON, (), 80,
           "green-context streams (sgl_kernel/spatial.py)", "sgl_kernel/__init__.py:128-134"),
    Kernel("fa3", "payload:sgl_kernel/flash_ops.abi3.so", ("sm_80", "sm_86", "sm_90a"), (8, 9), 80,
           "--attention-backend fa3 and the NSA fa3 kernel; is_fa3_supported: major 8 or 9",
           "sgl_kernel/flash_attn.py:32-44"),
    Kernel("flashmla", "sgl_kernel/flashmla_ops.abi3.so", ("sm_90a",), (), 90,
           "NSA flashmla_sparse / flashmla_kv / flashmla_auto call sgl_kernel.flash_mla; its host code says 'Only "
           "SM90 and SM100 are supported' but the binary holds sm_90a device code only",
           "layers/attention/nsa_backend.py:1872, 1923; sgl_kernel/flash_mla.py:5-8"),
    Kernel("flashinfer", "", (), (), 80, "--attention-backend flashinfer: JIT-compiled for the device (SM80+)",
           "layers/attention/flashinfer_backend.py"),
    Kernel("triton_attention", "", (), (), 80, "--attention-backend triton: Triton JIT",
           "layers/attention/triton_backend.py"),
    Kernel("trtllm_gen", "", (), (10, 12), 100,
           "trtllm_mla / NSA trtllm decode (FlashInfer trtllm-gen cubins): Blackwell only",
           "server_args.py:2665; layers/attention/nsa_backend.py:389-395"),
    Kernel("nsa_tilelang", "", (), (), 80, "NSA tilelang prefill/decode: tilelang JIT",
           "layers/attention/nsa/tilelang_kernel.py"),
    Kernel("deep_gemm", "", (), (9, 10), 90,
           "DeepGEMM JIT: kernels only in deep_gemm/include/deep_gemm/impls/sm90_*.cuh and sm100_*.cuh; "
           "deep_gemm_cpp.abi3.so raises 'Unsupported architecture' otherwise",
           "deep_gemm/include/deep_gemm/impls/ (kt-kernel wheel)"),
    Kernel("nsa_indexer", "", (), (9, 10), 90,
           "the DSA indexer on CUDA always calls DeepGEMM fp8_paged_mqa_logits / fp8_mqa_logits (tilelang and aiter "
           "only off CUDA), whatever --nsa-*-backend says",
           "layers/attention/nsa/nsa_indexer.py:25-29, 396-449, 575, 625"),
    Kernel("glm5_next_sparse", "", (), (), 86,
           "GLM-5-Next's own sparse attention: native kernels on SM86/SM89/SM120, the NSA path on SM100",
           "layers/attention/nsa_backend.py:79-80, 392; configs/glm5_next.py:54-72"),
    Kernel("dsv4_compressed", "", (), (), 89, "DeepSeek-V4 compressed attention: FP8 keys from SM89",
           "mem_cache/deepseekv4_memory_pool.py:504-509"),
    Kernel("triton_moe", "", (), (), 80, "--moe-runner-backend triton (the default): fused_moe_triton JIT",
           "layers/moe/fused_moe_triton/"),
    Kernel("cutlass_fp8_moe", "payload:sgl_kernel/sm100/common_ops.abi3.so", COMMON, (9, 10), 90,
           "--moe-runner-backend cutlass with an FP8 MoE: Fp8MoEMethod asserts is_sm100_supported() or "
           "is_sm90_supported() (majors 10 and 9 only)",
           "layers/quantization/fp8.py:809-814; utils/common.py:258-267"),
    Kernel("mxfp8_moe_native", "payload:sgl_kernel/sm100/common_ops.abi3.so", COMMON, (10,), 100,
           "an MXFP8 MoE on SM >= 10 keeps its MX format (no block-FP8 conversion) and its weight processing raises "
           "'MXFP8 MoE quantization requires SM100' off major 10; the KT wrapper builds the method for every MoE "
           "layer whatever --kt-num-gpu-experts is",
           "layers/quantization/fp8.py:798-803, 1148-1150, 1225-1226; utils/common.py:3606-3616; "
           "layers/moe/kt_ep_wrapper.py:693-699"),
    Kernel("mxfp8_to_block_fp8", "", (), (), 80,
           "below SM100 an MXFP8 checkpoint is converted to 128x128 block FP8 at load and runs the FP8 paths",
           "utils/common.py:3606-3616"),
    Kernel("fp8_gemm", "", (), (), 80,
           "block/channel FP8 linear layers (--fp8-gemm-backend triton; Marlin below SM89)",
           "layers/quantization/fp8.py:162-165"),
    Kernel("marlin", "payload:sgl_kernel/sm100/common_ops.abi3.so", COMMON, (), 80,
           "GPTQ INT4 (gptq_marlin, moe_wna16_marlin) and the FP8 Marlin fallback",
           "layers/quantization/gptq.py:346-347; marlin_utils.py:89"),
    Kernel("nvfp4_gemm", "payload:sgl_kernel/sm100/common_ops.abi3.so", COMMON, (), 100,
           "ModelOpt NVFP4 (cutlass FP4 GEMM in common_ops, sm_100a/sm_120a)",
           "layers/quantization/modelopt_quant.py:951-953"),
    Kernel("mxfp4_moe", "", (), (), 80, "MXFP4 MoE (triton_kernels)", "layers/quantization/mxfp4.py:242-243"),
    Kernel("mscclpp", "lib/mscclpp.so", ("compute_80", "sm_80", "compute_90", "sm_90"), (), 80,
           "custom all-reduce at TP > 1 (PTX for newer GPUs)", "kt-kernel wheel lib/"),
)  # fmt: skip
KERNELS = {k.id: k for k in TABLE}
FP8_KINDS = ("fp8_block", "fp8_channel", "fp8_ue8m0", "mxfp8")


def reached(spec: ModelSpec, flags: Mapping[str, object], cc: int) -> tuple[str, ...]:
    """The kernels a rendering (its flags; {} = the runtime's own defaults) reaches on a GPU of `cc`."""
    out = ["sgl_kernel.common_ops"]
    backend = str(flags.get("--attention-backend") or "")
    if spec.attention.kind == GLM5_NEXT_KIND:  # families/glm5_next/rules.applies, without loading that folder
        out.append("glm5_next_sparse")
    elif dsa.is_dsa(spec):
        kv = dsa.dsa_kv(cc // 10, str(flags.get("--kv-cache-dtype") or "auto"))
        default = dsa.nsa_kernels(kv, cc // 10)
        for name, fallback in zip(("--nsa-prefill-backend", "--nsa-decode-backend"), default, strict=True):
            out.append(_NSA.get(str(flags.get(name) or fallback), "nsa_tilelang"))
        out.append("nsa_indexer")
    elif backend:
        out.append({"fa3": "fa3", "triton": "triton_attention", "compressed": "dsv4_compressed",
                    "flashmla": "flashmla", "trtllm_mla": "trtllm_gen"}.get(backend, "flashinfer"))  # fmt: skip
    kinds = {spec.expert_format.kind, spec.other_format.kind}
    runner = str(flags.get("--moe-runner-backend") or "triton")
    if "mxfp8" in kinds:
        out.append("mxfp8_moe_native" if cc >= 100 else "mxfp8_to_block_fp8")
    if runner == "cutlass" and kinds & set(FP8_KINDS):
        out.append("cutlass_fp8_moe")
    elif spec.expert_format.kind != "mxfp4":
        out.append("triton_moe")
    if kinds & set(FP8_KINDS):
        out.append("fp8_gemm")
    out += [k for fmt, k in (("gptq_int4", "marlin"), ("nvfp4", "nvfp4_gemm"), ("mxfp4", "mxfp4_moe")) if fmt in kinds]
    return tuple(dict.fromkeys(out))


_NSA = {"flashmla_sparse": "flashmla", "flashmla_kv": "flashmla", "flashmla_auto": "flashmla", "fa3": "fa3",
        "tilelang": "nsa_tilelang", "trtllm": "trtllm_gen"}  # fmt: skip


def lacking(spec: ModelSpec, flags: Mapping[str, object], cc: int) -> tuple[Kernel, ...]:
    return tuple(KERNELS[k] for k in reached(spec, flags, cc) if not KERNELS[k].runs_on(cc))


def arch_problem(spec: ModelSpec, flags: Mapping[str, object], capabilities: tuple[str, ...]) -> str | None:
    """Why the rendering would build and then die on these GPUs (a kernel their architecture lacks), in one line
    naming what would run instead; or None. Unknown capabilities are not gated (as runtime/kernels.py)."""
    for cc in sorted({c for c in (capability(c) for c in capabilities) if c}):
        missing = lacking(spec, flags, cc)
        if not missing:
            continue
        ids = {k.id for k in missing}
        name = spec.name or spec.id
        if ids & {"nsa_indexer", "flashmla"}:
            why = (
                "its sparse-attention indexer calls DeepGEMM's fp8_mqa_logits on CUDA, which has SM90/SM100 code only "
                "(nsa_indexer.py:449, 575; deep_gemm impls/sm90_*, sm100_*)"
                if "nsa_indexer" in ids
                else "the FlashMLA sparse kernels it renders hold sm_90a device code only (sgl_kernel/flashmla_ops"
                ".abi3.so fatbin; nsa_backend.py:1872, 1923)"
            )
            return (
                f"{SGLANG_KT} cannot run {name}'s DeepSeek sparse attention on SM{cc}: {why}; use a Hopper "
                f"(SM90) GPU, or a model of the family without sparse attention ({_dense_sibling(spec)})"
            )
        if "mxfp8_moe_native" in ids:
            return (
                f"{SGLANG_KT} has no MXFP8 MoE kernel for SM{cc}: from SM100 the checkpoint keeps its MX format "
                "(utils/common.py:3606-3616) and Fp8MoEMethod then requires SM100 exactly (fp8.py:1225-1226; the "
                "cutlass runner asserts SM90/SM100, fp8.py:809-814), built for every MoE layer by the KT wrapper "
                "(kt_ep_wrapper.py:693-699); use a B200-class (SM100), Hopper (SM90) or Ada (SM89) GPU, or an FP8 "
                "model of the family (minimax-m2.7)"
            )
        if "cutlass_fp8_moe" in ids:
            return (
                f"{SGLANG_KT}'s cutlass FP8 MoE runner asserts SM90 or SM100 (fp8.py:809-814) and the GPU is "
                f"SM{cc}; render --moe-runner-backend triton, or use a Hopper or B200-class GPU"
            )
        k = missing[0]
        return (
            f"the GPU (SM{cc}) lacks {SGLANG_KT}'s {k.id} kernel ({k.dispatch}; {k.source}); use a GPU it "
            f"ships: {', '.join(t for t in k.cubins if t.startswith('sm_')) or 'see ' + k.source}"
        )
    return None


def _dense_sibling(spec: ModelSpec) -> str:
    return "deepseek-v3.1" if spec.id.startswith("deepseek") else "glm-4.7"
