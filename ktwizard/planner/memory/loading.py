"""Host RAM kt-kernel 0.7.2 holds on top of the loaded layers while it loads the next one, and on which NUMA node.

NativeMoEWrapper.load_weights (kt_kernel/utils/amx.py:760-1040) has the loader read one MoE layer, hands the pointers
to the C++ load task and frees what the loader made only after it. Two transients add to the loaded layers:

- The loader's own tensors, made by the Python loading thread: anonymous memory on ONE node (the thread's; which one
  the kernel picks as it schedules the unbound thread, so every node must have room). The weights are not among them:
  safetensors >= 0.4 opens a shard for torch as `UntypedStorage.from_file(shared=False)` and get_tensor returns a view
  of that mapping (file pages the kernel can reclaim, counted under "page cache while loading"); only the tensors a
  loader converts are new: NVFP4's folded bf16 scales (loader.py:1350-1354), GPTQ's scales widened to fp32
  (loader.py:1183-1185).
- The C++ load, which runs every node's share at once (TP_MOE::load_weights, `do_numa_job`): GPTQ's AVX2 class first
  copies the node's slice of the whole layer (every expert, qweight + fp32 scales) into staging arrays, loads its
  buffers from them, then frees them (kt-kernel avx2/gptq_int4-moe.hpp TP_MOE::load_weights), so each node holds its
  share twice at once. AVX2MXFP4_MOE (NVFP4) copies straight into the node's buffers (avx2/mxfp4-moe.hpp).

FP8, BF16 and RAWINT4 on the AVX-512/AMX builds stage like GPTQ (amx/fp8_tp_staging.hpp, amx/bf16-moe.hpp,
amx/k2-moe.hpp). For the other methods and builds ktwizard has not read the C++ load and keeps its bound: one layer as
the method holds it, on every node.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.host.isa import kt_variant
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import items as M

SOURCE = (
    "kt_kernel/utils/amx.py:760-1040, loader.py; kt-kernel TP_MOE::load_weights in avx2/gptq_int4-moe.hpp, "
    "avx2/mxfp4-moe.hpp, amx/fp8_tp_staging.hpp, amx/bf16-moe.hpp, amx/k2-moe.hpp"
)
STAGED = (
    "the C++ load's staging copy of each node's share of the layer as stored, on every node at once; the loader's "
    "tensors are views of the mapped shard"
)


# Methods whose C++ load touches only the experts not on the GPUs: the rest of each node's buffers is allocated but
# never written, so it is not resident (GeneralMOEConfig::should_skip_expert, operators/common.hpp).
CPU_EXPERTS_ONLY = {
    "NVFP4": (
        "AVX2MXFP4_MOE's load copies only those into its lazily allocated buffers (avx2/mxfp4-moe.hpp TP_MOE::"
        "load_weights skips should_skip_expert)"
    ),
}


# GPTQ_INT4 on a CPU with avx_vnni: kt-kernel picks AVXVNNI256GPTQInt4Packed_MOE (kt_kernel/utils/amx.py:117-168,
# compiled into every build), whose BufferB keeps a second fp32 table per group beside the scales, the c2
# correction 128 x scale x rowsum (kt-kernel avx2/gptq_int4_avxvnni_packed-moe.hpp: (k/8)*n*4 + 2*(k/g)*n*4 B).
PACKED_GPTQ_MAX_GROUP = 2048  # amx.py:66


def cpu_resident_per_expert(spec: ModelSpec, method: str, cpu_flags: tuple[str, ...]) -> int:
    """Host bytes one CPU expert keeps once loaded, with the kernel kt-kernel picks for this CPU."""
    per_expert = M.cpu_bytes_per_expert(spec, method)
    group = spec.expert_format.block
    if method == "GPTQ_INT4" and "avx_vnni" in cpu_flags and group % 32 == 0 and group <= PACKED_GPTQ_MAX_GROUP:
        per_expert += 4 * (3 * spec.hidden * spec.moe_intermediate // group)  # the c2 table
    return per_expert


@dataclass(frozen=True)
class LoaderTransient:
    """What loading one layer's experts holds in host memory for a while."""

    loader: int  # the loader's tensors for one layer: on one node, the loading thread's
    staging_per_node: int  # what each node's C++ load holds at once besides its buffers
    why: str

    def on_node(self) -> int:
        """The most one node holds while a layer loads: its staging, and the loader's tensors if they land there."""
        return self.loader + self.staging_per_node

    def on_host(self, nodes: int) -> int:
        return self.loader + self.staging_per_node * nodes


# kt-kernel builds whose FP8 and BF16 methods are the AMX/AVX-512 classes (AMXFP8_MOE, AMXBF16_MOE; amx.py:632-651,
# 970-977, 1009-1014); ktwizard loads the AVX2 build for them below avx512_bf16 (planner/methods.support)
FP8_AVX512_BUILDS = ("amx", "avx512_bf16")


def loader_transient(spec: ModelSpec, method: str, nodes: int, cpu_flags: tuple[str, ...] = ()) -> LoaderTransient:
    experts = spec.routed_experts  # the loader reads every expert of the layer, GPU ones included
    n = 3 * spec.hidden * spec.moe_intermediate  # elements of one expert's gate, up and down
    variant = kt_variant(cpu_flags) or ""
    if method == "RAWINT4" and variant.startswith(("amx", "avx512")):
        # CompressedSafeTensorLoader returns views (loader.py:715-815); AMXInt4_KGroup_MOE, picked first on every
        # AVX-512 build (amx.py:205-206), stages each node's slice of the layer as stored (int4 + bf16 group
        # scales, all experts) and frees it after loading (kt-kernel amx/k2-moe.hpp TP_MOE::load_weights; its
        # "From per-expert pointers (gate_projs)" is a string of every AVX-512 build's .so)
        group = spec.expert_format.block or 32
        return LoaderTransient(
            0,
            experts * (n // 2 + 2 * (n // group)) // max(1, nodes),
            STAGED,
        )
    if method == "BF16" and variant in FP8_AVX512_BUILDS:
        # BF16SafeTensorLoader returns views (loader.py:551-712; Qwen3.5's packed [E, 2I, H] is sliced by rows, still
        # views); AMXBF16_MOE's TP load stages each node's slice of the layer in bf16 (every expert) and frees it
        # after loading (kt-kernel amx/bf16-moe.hpp TP_MOE::load_weights)
        return LoaderTransient(
            0,
            experts * 2 * n // max(1, nodes),
            STAGED,
        )
    if method == "FP8" and variant in FP8_AVX512_BUILDS:
        # FP8SafeTensorLoader returns views (fp32 block scales need no conversion, loader.py:479-550); TP_MOE<AMX_FP8>
        # ::load_weights stages each node's slice of the layer as stored (fp8 + fp32 scales, all experts:
        # BlockFP8TPStaging::allocate, kt-kernel amx/fp8_tp_staging.hpp, whose "FP8 TP staging dimensions must be
        # positive" is a string of the AVX-512 builds) before loading its buffers, then frees it
        return LoaderTransient(
            0,
            spec.expert_bytes_native * experts // max(1, nodes),
            STAGED,
        )
    if method == "NVFP4":
        return LoaderTransient(
            experts * 2 * (n // 16),
            0,
            "the loader's folded bf16 scales for one layer, on the loading thread's node; the nibbles stay in the "
            "mapped shard and each node copies its share straight into its buffers",
        )
    if method == "GPTQ_INT4":
        group = spec.expert_format.block
        return LoaderTransient(
            experts * 4 * (n // group),
            experts * (n // 2 + 4 * (n // group)) // max(1, nodes),
            "the loader's fp32 scales for one layer on the loading thread's node, and on every node at once the "
            "C++ load's staging copy of that node's share of the layer",
        )
    return LoaderTransient(
        M.cpu_bytes_per_expert(spec, method) * experts,
        0,
        f"one layer as {method} holds it (ktwizard has not read this method's C++ load: a bound)",
    )
