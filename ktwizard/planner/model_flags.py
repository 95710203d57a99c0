"""The flags a model's own architecture demands in sglang-kt 0.7.2: its attention (DSA / NSA, GLM-5-Next,
DeepSeek-V4, or the family's documented backend) and its MoE runner and quantization (gpt-oss, MiniMax-M3). What the
runtime would set or requires is rendered, so the plan says what runs."""

from __future__ import annotations

from ktwizard.host.profile import GPU
from ktwizard.models import dsv4_kv
from ktwizard.models.presets import SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import items as M
from ktwizard.planner.memory.sizing import Sizing
from ktwizard.planner.types import Flag, Goals
from ktwizard.runtime import dsa, glm5_next, rules


def attention_flags(
    spec: ModelSpec, goals: Goals, hints: SglangHints, sizing: Sizing, gpus: tuple[GPU, ...]
) -> list[Flag]:
    f: list[Flag] = []
    if sizing.dsa_kv is not None:
        # DeepSeek sparse attention: only the nsa backend takes the indexer's top-k (runtime/rules.py); what the
        # runtime's DSA branch would set is rendered, so the plan says what runs
        major = min(g.cc_major for g in gpus)
        prefill, decode = dsa.nsa_kernels(sizing.dsa_kv, major)
        kernel_src = "server_args.py:1752-1777"
        if glm5_next.applies(spec):  # GLM's KPool4 needs the model-local trtllm dispatcher for both
            prefill = decode = glm5_next.NSA_BACKEND
            kernel_src = "server_args.py:1692-1706: GLM-5-Next's KPool4 dispatcher, the only one it accepts"
        f += [
            Flag(
                "--attention-backend",
                "nsa",
                "DeepSeek sparse attention: only the nsa backend takes the indexer's top-k; sglang-kt 0.7.2 picks it "
                "by itself for DeepseekV3ForCausalLM but not for this checkpoint's architecture (server_args.py:1855)",
            ),
            Flag("--nsa-prefill-backend", prefill, f"the NSA prefill kernel 0.7.2 uses here ({kernel_src})"),
            Flag("--nsa-decode-backend", decode, f"the NSA decode kernel 0.7.2 uses here ({kernel_src})"),
            Flag("--kv-cache-dtype", sizing.dsa_kv.dtype, sizing.dsa_kv.why + "; the KV pool is budgeted in it"),
            Flag(
                "--page-size",
                dsa.NSA_PAGE_SIZE,
                "DeepSeek sparse attention runs with 64-token pages (server_args.py:1925-1927, memory_pool.py:1785)",
            ),
        ]
    if glm5_next.applies(spec):
        f += [
            Flag(
                "--moe-runner-backend",
                glm5_next.MOE_RUNNER,
                "GLM-5-Next accepts only the triton MoE runner (server_args.py:1586-1594: the others do not carry its "
                "swiglu_limit)",
            ),
            Flag(
                "--disable-radix-cache",
                True,
                "GLM-5-Next's KPool tails are per request: the runtime turns the prefix cache off itself "
                "(server_args.py:1664-1667)",
            ),
        ]
    elif rules.is_dsv4(spec):
        f += [
            Flag(
                "--attention-backend",
                rules.DSV4_BACKEND,
                "DeepSeek-V4's compressed attention: sglang-kt 0.7.2 forces it (server_args.py:1802-1806)",
            ),
            Flag("--page-size", dsv4_kv.PAGE_SIZE, "the sliding-window pool's page (server_args.py:1805, mixin :746)"),
            Flag(
                "--kv-cache-dtype",
                rules.DSV4_KV_DTYPE,
                "the only KV dtype 0.7.2 accepts for DeepSeek-V4 (server_args.py:1817-1827), as budgeted"
                + ("; --kv-dtype bf16 cannot be honoured for this model" if goals.kv_dtype == "bf16" else ""),
            ),
        ]
    elif sizing.dsa_kv is None and hints.attention_backend:
        f.append(
            Flag("--attention-backend", hints.attention_backend, "the backend the KT docs use for this model family")
        )
    return f


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
                "the checkpoint's own method, named: without it sglang-kt 0.7.2 fails MiniMax-M3 at start-up on an "
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
                else "MiniMax-M3's GPU experts on Blackwell: the MXFP8 runner 0.7.2 keeps (server_args.py:2952-2964); "
                "`auto` would pick flashinfer_trtllm, which refuses mxfp8 at start-up (:2976-2983)",
            )
        )
    return f
