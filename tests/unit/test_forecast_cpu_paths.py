"""Forecast v4's CPU terms, from how kt-kernel runs: the vec path (AVX-512) below 4 x experts / top-k tokens even
for AMX methods, FP8's software decode bound by the 512-bit shuffle pipes (two on Zen 5), and two subpools read
at one socket's bandwidth; checked on a published 37-stream, 8-GPU run no fit saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.forecast.model import decode_step
from ktwizard.planner.forecast.setup import cpu_flops, setup_for, vec_switch
from ktwizard.planner.forecast.speeds import cpu_flops_per_cycle, is_zen5, vec_flops_per_cycle
from ktwizard.planner.forecast.terms import TERMS

HOSTS = Path(__file__).resolve().parents[2] / "benchmarks" / "forecast" / "hosts"


def kimi_on_l20():
    h = load_host(str(HOSTS / "8xl20-2x6454s.yaml"))
    return setup_for(h, get_preset("kimi-k2-thinking").spec(), "AMXINT4", 200, h.gpus.devices, 56, 2, 4096, None)


def test_amx_methods_decode_on_the_vec_path_below_kt_kernels_switch():
    s = kimi_on_l20()
    assert vec_switch(s) == 4 * 384 // 8 == 192  # moe.hpp:244: qlen > 4 * expert_num / num_experts_per_tok
    per_core = s.threads * s.clock * TERMS.cpu_flops_eff
    assert cpu_flops(s, TERMS, 37) == pytest.approx(per_core * 128)  # AVX-512 BF16-class dot products
    assert cpu_flops(s, TERMS, 193) == pytest.approx(per_core * 1024)  # AMX tiles past the switch
    assert cpu_flops_per_cycle(load_host(str(HOSTS / "8xl20-2x6454s.yaml")).cpu.flags, "AMXINT4")[0] == 1024


def test_fp8s_software_decode_runs_twice_as_fast_on_zen5s_shuffle_pipes():
    flags = ("avx2", "avx512f", "avx512_bf16", "avx512vbmi")
    assert vec_flops_per_cycle(flags, "FP8", zen5=True)[0] == 2 * vec_flops_per_cycle(flags, "FP8")[0] == 64
    assert is_zen5("AMD EPYC 9355 32-Core Processor") and not is_zen5("AMD EPYC 9654 96-Core Processor")
    assert is_zen5("", "AuthenticAMD", 26) and not is_zen5("AMD EPYC 9355", "AuthenticAMD", 25)
    assert not is_zen5("Intel(R) Xeon(R) Gold 6454S")


def test_the_37_stream_8_gpu_kimi_run_lands_within_its_range():
    """Kimi-K2-Thinking.md (AMXINT4, 8 x L20, 2 x Gold 6454S, 200 GPU experts, 37 streams): 45.91 tok/s in total.
    Forecast v3 read both sockets and said 106 (+131 %)."""
    total = 37 / decode_step(kimi_on_l20(), 266, 37).total_s
    assert 45.91 * 0.8 < total < 45.91 * 1.3
