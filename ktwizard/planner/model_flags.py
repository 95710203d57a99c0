"""The flags a model's own architecture demands in sglang-kt 0.7.2: its attention (asked of its family:
families/<name>/attention_flags) and its MoE runner and quantization (gpt-oss, MiniMax-M3). What the runtime would set
or requires is rendered, so the plan says what runs."""

from __future__ import annotations

from ktwizard.families.registry import of as family_of
from ktwizard.host.profile import GPU
from ktwizard.models.presets import SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory.sizing import Sizing
from ktwizard.planner.types import Flag, Goals
from ktwizard.runtime import rules
from ktwizard.runtime.version import SGLANG_KT, SGLANG_KT_VERSION


def attention_flags(
    spec: ModelSpec, goals: Goals, hints: SglangHints, sizing: Sizing, gpus: tuple[GPU, ...]
) -> list[Flag]:
    """The attention backend, kernels, KV dtype and page size the model's family renders (families/<name>/)."""
    rows = family_of(spec).attention_flags(
        spec, goals.kv_dtype, hints.attention_backend or "", sizing.dsa_kv, min(g.cc_major for g in gpus)
    )
    return [Flag(name, value, why) for name, value, why in rows]


def moe_runner_flags(spec: ModelSpec, gpus: tuple[GPU, ...]) -> list[Flag]:
    f: list[Flag] = []
    if M.mxfp4_upcast(spec):
        f.append(
            Flag(
                "--moe-runner-backend",
                "triton",
                "gpt-oss would get the triton_kernel MoE runner (flashinfer_mxfp4 on Blackwell) whose top-k output has "
                "no topk_ids, which KT's apply reads (server_args.py:2124-2133, topk.py:174-197, "
                "kt_ep_wrapper.py:5919): the triton runner gives standard top-k and upcasts the GPU experts to BF16 "
                "(mxfp4.py:704-725), as the budget counts them",
            )
        )
    if quant := rules.m3_quantization(spec):
        f.append(
            Flag(
                "--quantization",
                quant,
                f"the checkpoint's own method, named: without it {SGLANG_KT} fails MiniMax-M3 at start-up on an "
                "attribute it never defines (server_args.py:2433-2443); KT's MiniMax-M3 tutorial passes it",
            )
        )
    if quant == "mxfp8":
        # MXFP8 MoE runners of 0.7.2 (server_args.py:2918-2964): below SM100 the weights become block FP8 at load and
        # triton runs them (KT's MiniMax-M3 tutorial passes it); from SM100 `auto` turns into flashinfer_trtllm,
        # whose assert refuses mxfp8 (:2976-2983), and any runner outside its list is overridden to cutlass
        hopper = min(g.cc_major for g in gpus) < 10
        f.append(
            Flag(
                "--moe-runner-backend",
                "triton" if hopper else "cutlass",
                "MiniMax-M3's GPU experts: triton for the block-FP8 conversion below SM100, as KT's MiniMax-M3 tutorial"
                " runs it (server_args.py:2936-2951)"
                if hopper
                else f"MiniMax-M3's GPU experts on Blackwell: the MXFP8 runner {SGLANG_KT_VERSION} keeps "
                "(server_args.py:2952-2964); `auto` would pick flashinfer_trtllm, which refuses mxfp8 at start-up "
                "(:2976-2983)",
            )
        )
    return f
