"""Memory model v2 against the runtime: each ledger item recomputed here from the model's config facts, the runtime
code's own formulas (sglang-kt 0.7.2, named per line) and the audit's H200 measurements, for the audit's scenarios.

Estimates (activations, CUDA graphs) are read from the plan, marked as such; every exact item is recomputed.
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil, floor

import pytest
import yaml
from conftest import ORACLES

from ktwizard.host.spec import host_from_spec, load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

GiB, MiB = 2**30, 2**20
KIMI = yaml.safe_load(
    (ORACLES / "model-facts.md").read_text().split("### kimi-k2.7-code\n\n```yaml\n")[1].split("```")[0]
)
# runtime-memory-audit.md §3 (measured on an H200, Kimi K2 shapes): one INT4 layer 8.86 GiB, 17.72 steady, 21.98 peak
INT4_STEADY, INT4_PEAK = 17.72 / 8.86, 21.98 / 8.86
FLASHINFER_WORKSPACE = 384 * MiB  # srt/environ.py:333
MLA_CHUNK = 128 * 1024  # forward_batch_deepseek_mha_mixin.py:46


def margin(total: int) -> int:
    return max(GiB, int(total * 0.03))


def kimi(context: int = 163840, concurrency: int = 2, **goals):
    p = get_preset("kimi-k2.7-code")
    g = Goals(context=context, concurrency=concurrency, **goals)
    return plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), g, p.sglang, recipe_for(p.id))


def estimates(b, phase: str) -> int:
    return sum(i.bytes for i in b.items if i.estimate and (i.phase == "ready" or phase in i.live))


# --- Kimi K2.7 Code on the seed recipe's host ------------------------------------------------------------------------
H, I, E, LAYERS, MOE, HEADS = 7168, 2048, 384, 61, 60, 64  # config.json facts (model-facts.md)
EXPERT = 3 * H * I // 2 + 2 * (2 * I * (H // 32) + H * (I // 32)) + 3 * 8  # INT4 g32 packed + bf16 scales + shapes
CARD = 97887 * MiB  # RTX PRO 6000 Blackwell as NVML reports it (audit §7), not 96 GiB


def kimi_ledger(b, tokens: int, context: int, chunk: int) -> dict[str, int]:
    """Every exact item, from the facts and the runtime's formulas."""
    layer = E * EXPERT
    return {
        "KV pool": tokens * (512 + 64) * LAYERS * 2,  # MLA cell: (kv_lora_rank + qk_rope) x layers x bf16
        "MLA w_kc/w_vc copies": HEADS * (128 + 128) * 512 * 2 * LAYERS,  # deepseek_weight_loader.py:402-620
        "KT staging buffer": chunk * H * 2,  # kt_ep_wrapper.py:5268-5279, rank 0
        "layerwise layer (kept)": int(layer * INT4_STEADY),
        "layerwise restore peak": int(layer * INT4_PEAK) - int(layer * INT4_STEADY),
        # MHA over the prefix: kv_b_proj output (qk_nope + v) and the full K (qk_nope + qk_rope), bf16
        "MLA prefix K/V": min(context, MLA_CHUNK) * HEADS * ((128 + 128) + (128 + 64)) * 2,
        "flashinfer workspace": FLASHINFER_WORKSPACE,
    }


def test_kimi_recipe_case_every_item_and_phase_recomputed():
    r = kimi()
    (b,) = r.gpu_budgets
    assert KIMI["derived"]["expert_bytes_native"] == EXPERT and b.total == CARD
    ledger = kimi_ledger(b, 327680, 163840, 16384)
    for name, expect in ledger.items():
        assert b.item(name) == expect, name
    assert b.item("GPU experts") == r.gpu_experts * MOE * EXPERT
    assert b.item("non-expert weights") == KIMI["derived"]["non_expert_bytes_native"]
    # measured: 7.03 GiB of K/V temporaries at 131,072 tokens with 64 heads (audit §4)
    assert abs(ledger["MLA prefix K/V"] / GiB - 7.03) < 0.05
    before = sum(i.bytes for i in b.items if i.phase == "before")
    weights = (
        b.item("non-expert weights")
        + ledger["MLA w_kc/w_vc copies"]
        + b.item("GPU experts")
        + ledger["KT staging buffer"]
    )
    ready = before + weights + ledger["KV pool"] + ledger["flashinfer workspace"] + estimates(b, "ready")
    short = (
        ready
        + ledger["layerwise layer (kept)"]
        + ledger["layerwise restore peak"]
        + b.item("activations (short prompt)")
    )
    # attention temporaries are freed before the MoE block restores the layer: the larger of the two counts
    longest = (
        ready
        + ledger["layerwise layer (kept)"]
        + max(ledger["layerwise restore peak"], ledger["MLA prefix K/V"])
        + b.item("activations (longest prompt)")
    )
    decode = ready + ledger["layerwise layer (kept)"] + b.item("activations (decode)")
    phases = {p.phase: p.bytes for p in b.phases}
    assert phases == {
        "load": before + weights,
        "ready": ready,
        "short prompt": short,
        "longest prompt": longest,
        "decode": decode,
    }
    assert b.binding == "longest prompt" and r.binding == "GPU 0, longest prompt"
    # the most GPU experts that keep the longest phase inside the card with its margin: one more does not fit
    assert longest + margin(CARD) <= CARD < longest + MOE * EXPERT + margin(CARD)
    # the previous planner's 23 experts per layer run out of memory on the first prompt over the threshold
    extra = (23 - r.gpu_experts) * MOE * EXPERT
    assert short + extra > CARD
    assert (
        r.flag("--kt-num-gpu-experts") == r.gpu_experts
        and r.gpu_experts >= recipe_for("kimi-k2.7-code").flags["kt_num_gpu_experts"]
    )


def test_mem_fraction_static_sizes_the_pool_as_sglang_does():
    """model_runner_kv_cache_mixin.py:280-286: budget = (free after weights) - T x (1 - mfs), T measured after the
    CUDA context; the cap (:627-636) must never be above the budget, or the pool silently shrinks."""
    for goals in ({}, {"context": 65536, "concurrency": 1}, {"context": 131072, "concurrency": 1, "gpu_experts": 0}):
        r = kimi(**goals)
        (b,) = r.gpu_budgets
        t = CARD - sum(i.bytes for i in b.items if i.phase == "before")
        weights = sum(i.bytes for i in b.items if i.phase == "weights")
        pool = b.item("KV pool")
        assert pool == r.max_total_tokens * (512 + 64) * LAYERS * 2
        mfs = r.mem_fraction_static
        need = pool + max(256 * MiB, pool // 50)
        assert (t - weights) - t * (1 - mfs) >= need  # covered with a margin
        assert (t - weights) - t * (1 - (mfs - 0.001)) < need  # and no more than needed
        assert r.flag("--mem-fraction-static") == mfs


def test_kimi_262k_by_4_does_not_fit_and_says_what_would():
    r = kimi(context=262144, concurrency=4)
    assert not r.fits
    (b,) = r.gpu_budgets
    assert b.item("KV pool") == 262144 * 4 * 576 * LAYERS * 2 > 68 * GiB
    assert any(o.startswith("GPU 0") and "phase" in o for o in r.overflows)
    assert r.suggestions
    for s in r.suggestions:
        p = get_preset("kimi-k2.7-code")
        assert plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), s.goals, p.sglang).fits, s.change


# --- gpt-oss-120b on a 24 GB card: the sliding-window pool as SGLang sizes it -----------------------------------
def test_gpt_oss_120b_on_a_24gb_card_serves_the_whole_context():
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA GeForce RTX 4090", "memory_gib": 24, "compute_capability": "8.9"}],
            "cpu": {
                "model": "AMD Ryzen 9 7950X",
                "cores_per_socket": 16,
                "threads_per_core": 2,
                "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512vbmi"],
            },
            "memory_gib": 192,
        }
    )
    p = get_preset("gpt-oss-120b")
    r = plan(host, p.spec(), Goals(context=131072), p.sglang)
    (b,) = r.gpu_budgets
    assert b.total == 24564 * MiB  # an RTX 4090 as NVML reports it
    per_layer = 2 * 8 * 64 * 2  # K and V, 8 KV heads x head_dim 64, bf16
    full, swa = 18 * per_layer, 18 * per_layer  # 18 full-attention and 18 sliding-window layers
    cap, ratio = r.max_total_tokens, r.flag("--swa-full-tokens-ratio")
    assert isinstance(ratio, float) and 0 < ratio <= 1
    # model_runner_kv_cache_mixin.py:450-463: memory = cap x cell of all layers, split by the ratio
    assert b.item("KV pool") == cap * (full + swa)
    full_tokens = int(cap * (full + swa) / (full + ratio * swa))
    swa_tokens = int(full_tokens * ratio)
    chunk = r.flag("--chunked-prefill-size")
    assert isinstance(chunk, int)
    assert full_tokens >= 131072  # the promised context is really served
    assert swa_tokens >= 2 * chunk * 1.05 + 128  # two chunks in flight and the window (server_args.py:1841-1849)
    assert cap < 131072  # and it costs less than a full pool of cells of all layers would
    # triton_kernels deletes w13_weight (mxfp4.py:702): no layerwise layer is ever built
    assert not any(i.name.startswith("layerwise") for i in b.items)
    assert r.flag("--kt-gpu-prefill-token-threshold") is None
    assert r.fits


# --- DeepSeek V3 on 4 x 48 GB with TP 4 ---------------------------------------------------------------------------
def test_deepseek_v3_tp4_per_rank_items():
    host = host_from_spec(
        {
            "gpus": [
                {"name": "NVIDIA RTX 6000 Ada Generation", "memory_gib": 48, "compute_capability": "8.9", "count": 4}
            ],
            "cpu": {
                "model": "Intel Xeon w9-3495X",
                "cores_per_socket": 56,
                "threads_per_core": 2,
                "flags": [
                    "avx2",
                    "avx512f",
                    "avx512bw",
                    "avx512vl",
                    "avx512_vnni",
                    "avx512_bf16",
                    "avx512vbmi",
                    "amx_tile",
                    "amx_int8",
                    "amx_bf16",
                ],
            },
            "memory_gib": 1024,
        }
    )
    p = get_preset("deepseek-v3")
    spec = p.spec()
    r = plan(host, spec, Goals(context=131072, concurrency=1), p.sglang)
    assert r.tp == 4 and len(r.gpu_budgets) == 4
    b0, b1 = r.gpu_budgets[0], r.gpu_budgets[1]
    assert b0.total == 49140 * MiB  # RTX 6000 Ada as NVML reports it
    heads, nope, rope, v, rank = 128, 128, 64, 128, 512
    assert b0.item("MLA w_kc/w_vc copies") == ceil(heads * (nope + v) * rank * 2 * 61 / 4)
    assert abs(heads * (nope + v) * rank * 2 * 61 / GiB - 1.91) < 0.01  # the audit's 1.91 GiB at TP 1
    assert b0.item("MLA prefix K/V") == 0  # the preset's triton backend never decompresses the prefix
    flashinfer = plan(
        host, spec, Goals(context=131072, concurrency=1), replace(p.sglang, attention_backend="flashinfer")
    )
    mla = ceil(MLA_CHUNK * heads * ((nope + v) + (nope + rope)) * 2 / 4)
    assert flashinfer.gpu_budgets[0].item("MLA prefix K/V") == mla
    assert abs(mla * 4 / GiB - 14.0) < 0.05  # measured: 14.0 GiB at TP 1 (audit §4)
    assert flashinfer.gpu_budgets[0].item("flashinfer workspace") == FLASHINFER_WORKSPACE
    assert b0.item("flashinfer workspace") == 0
    assert b0.item("KV pool") == 131072 * (rank + rope) * 61 * 2  # the latent cache is not split by TP
    chunk = r.flag("--chunked-prefill-size")
    assert b0.item("KT staging buffer") == chunk * 7168 * 2 and b1.item("KT staging buffer") == 0  # rank 0 only
    layer = 256 * spec.expert_bytes_native  # FP8: the layer is allocated once, split over the ranks
    assert b0.item("layerwise layer (kept)") == ceil(layer / 4) and b0.item("layerwise restore peak") == 0
    assert r.gpu_budgets[0].binding in ("longest prompt", "short prompt")


# --- Qwen3-235B on an H200 with enough RAM ---------------------------------------------------------------------------
def test_qwen3_235b_on_an_h200():
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "9.0"}],
            "cpu": {
                "model": "Intel Xeon Platinum 8480+",
                "sockets": 2,
                "cores_per_socket": 56,
                "threads_per_core": 2,
                "flags": [
                    "avx2",
                    "avx512f",
                    "avx512bw",
                    "avx512vl",
                    "avx512_vnni",
                    "avx512_bf16",
                    "avx512vbmi",
                    "amx_tile",
                    "amx_int8",
                    "amx_bf16",
                ],
            },
            "numa_nodes": 2,
            "memory_gib": 1024,
        }
    )
    p = get_preset("qwen3-235b-a22b")
    spec = p.spec()
    r = plan(host, spec, Goals(context=32768, concurrency=2), p.sglang)
    (b,) = r.gpu_budgets
    assert b.total == 143771 * MiB  # measured on the H200
    hidden, inter, experts, layers, kv_heads, head_dim = 4096, 1536, 128, 94, 4, 128
    expert = 3 * hidden * inter * 2  # BF16 gate, up, down
    assert spec.expert_bytes_native == expert
    assert b.item("KV pool") == 32768 * 2 * 2 * kv_heads * head_dim * layers * 2
    assert b.item("layerwise layer (kept)") == experts * expert  # BF16: once
    assert b.item("MLA prefix K/V") == 0 and b.item("MLA w_kc/w_vc copies") == 0  # GQA: neither exists
    peak = max(p.bytes for p in b.phases)
    per = layers * expert
    assert peak + margin(b.total) <= b.total < peak + per + margin(b.total) or r.gpu_experts == experts
    hb = r.host_budgets[0]
    assert hb.item("CPU experts") == experts * layers * expert  # every expert in RAM, once
    assert r.fits


def test_layerwise_off_puts_the_cpu_moe_scratch_on_every_node():
    r = kimi(layerwise_prefill=False)
    (b,) = r.gpu_budgets
    assert b.item("layerwise layer (kept)") == 0
    node = r.host_budgets[1]
    chunk = r.flag("--chunked-prefill-size")
    assert isinstance(chunk, int)
    # about 12 GiB per node for Kimi K2 at 16,384-token chunks (audit §5), scaled with the chunk
    assert node.item("CPU-MoE scratch") == pytest.approx(12 * GiB * chunk / 16384, rel=1e-6)


@pytest.mark.parametrize(
    "name, stated, nvml_mib, estimated",
    [
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96, 97887, False),
        ("NVIDIA L40", 48, 46068, False),
        ("NVIDIA GeForce RTX 4090 48GB", 48, None, True),  # a modded card: the stated size, less a margin
        ("Some Future GPU", 80, None, True),
    ],
)
def test_card_totals_follow_nvml(name, stated, nvml_mib, estimated):
    host = host_from_spec(
        {
            "gpus": [{"name": name, "memory_gib": stated}],
            "cpu": {"cores_per_socket": 8, "flags": ["avx2"]},
            "memory_gib": 64,
        }
    )
    (g,) = host.gpus.devices
    assert g.memory_total_estimated is estimated
    assert g.memory_total == (nvml_mib * MiB if nvml_mib else floor(stated * GiB * 15 / 16))
