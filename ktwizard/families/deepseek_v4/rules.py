"""DeepSeek-V4's start-up facts in sglang-kt 0.7.2 (moved from runtime/rules.py, issue #50).

server_args.py:1802-1827 forces the `compressed` attention backend and 256-token pages for DeepseekV4ForCausalLM
and accepts only an fp8_e4m3 KV cache (`auto` becomes it; anything else fails an assert). The model class then
refuses to load unless SGLANG_DSV4_MODE is 2601 or 2604 (models/deepseek_v4.py:1682-1686); deepseek-ai's
checkpoints are the 2604 layout (head_dim, sliding_window, `.scale` names, configs/model_config.py:567-572), and
their `swiglu_limit` makes the MXFP4 MoE method demand submode 2604B (mxfp4_deepseek.py:186-192). The KT wrapper
passes that clamp to kt-kernel only for MXFP4 / MXFP8 and zeroes it for any other method (kt_ep_wrapper.py:399-405,
:5284-5310): the CPU experts would then compute unclamped SiLU, silently wrong.
"""

from __future__ import annotations

DSV4_BACKEND = "compressed"
DSV4_KV_DTYPE = "fp8_e4m3"
DSV4_ENV = (
    (
        "SGLANG_DSV4_MODE",
        "2604",
        "the 2604 checkpoint layout; the model refuses to load without it (deepseek_v4.py:1682)",
    ),
    (
        "SGLANG_DSV4_2604_SUBMODE",
        "2604B",
        "the checkpoint's SwiGLU clamp (swiglu_limit 10): the MXFP4 MoE method asserts this submode for it "
        "(mxfp4_deepseek.py:186-192)",
    ),
)
DSV4_MIN_CC = 89  # doc/en/DeepSeek-V4-Flash.md: Ampere not supported; deepseekv4_memory_pool.py:504-509 FP8 from SM89
