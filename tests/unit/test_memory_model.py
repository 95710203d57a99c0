"""Memory model v3 against the runtime: each ledger item recomputed here from the model's config facts (the oracle's
model-facts.md) and the runtime code's own formulas (sglang-kt 0.7.2, named per line), for the audit's scenarios.

The per-step live sets (attention step, MoE step; runtime-memory-audit-2 §2.6-2.7, §6) are recomputed by the small
calculator below, written from the forward code and not from ktwizard's planner; the audit's published figures
(9.65 GiB at the Kimi attention step, 5.17 GiB at the INT4 restore, 8.5 GiB for DeepSeek-V3 on triton) anchor it.
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
FLASHINFER_WORKSPACE = 384 * MiB  # srt/environ.py:333


XEON_AMX = {
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
}
ZEN4 = {
    "model": "AMD Ryzen 9 7950X",
    "cores_per_socket": 16,
    "threads_per_core": 2,
    "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512vbmi"],
}


def margin(b) -> int:
    """What the plan keeps free: its parts (each estimate's uncertainty, test_memory_runtime_formulas.py) summed."""
    assert b.margin == sum(n for _, n, _ in b.margin_parts) and b.margin < GiB
    return b.margin


def kimi(context: int = 163840, concurrency: int = 2, **goals):
    p = get_preset("kimi-k2.7-code")
    g = Goals(context=context, concurrency=concurrency, **goals)
    return plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), g, p.sglang, recipe_for(p.id))


# --- an independent calculator of one layer's step live sets, from the facts and the forward code ----------------
MHA_PREFIX_BACKENDS, MAX_CHUNK, PREFIX_MIN = ("flashinfer", "fa3", "flashmla"), 131072, 8192  # handler.py:10, :72-96


def facts(model_id: str) -> dict:
    text = (ORACLES / "model-facts.md").read_text()
    return yaml.safe_load(text.split(f"### {model_id}\n\n```yaml\n")[1].split("```")[0])


def attention_live(f: dict, m: int, prefix: int, backend: str, tp: int, extend: bool = True, fp8: bool = False) -> int:
    h, a = f["hidden_size"], f["attention"]
    hl = ceil(a["num_attention_heads"] / tp)
    live = 2 * m * h * 2  # residual + normed input
    if a["type"] != "mla":
        kvl = max(1, ceil(a["num_key_value_heads"] / tp))
        out = m * hl * a["head_dim"] * 2
        # flashinfer over a prefix: q.contiguous() (flashinfer_backend.py:768), then o1/lse1, o2/lse2 and the merged
        # o alive together (:837-853)
        merged = out + 2 * out + 2 * m * hl * 4 if backend == "flashinfer" and extend and prefix > 0 else 0
        return live + m * (hl + 2 * kvl) * a["head_dim"] * 2 + out + merged
    r, rope, nope, v = a["kv_lora_rank"], a["qk_rope_head_dim"], a["qk_nope_head_dim"], a["v_head_dim"]
    live += m * (a["q_lora_rank"] + r + rope) * 2 + m * hl * (nope + rope) * 2  # latent, q
    per_token = (r + rope) * 2 + hl * (nope + v) * 2 + hl * (nope + rope) * 2  # gather + K/V + full K: 58,496 (Kimi)
    mha = backend in MHA_PREFIX_BACKENDS and extend and (prefix == 0 or prefix >= PREFIX_MIN)
    if mha and prefix + m <= MAX_CHUNK:  # MHA_ONE_SHOT over every token of the batch
        return live + (prefix + m) * per_token + m * hl * v * 2
    if mha:  # MHA_CHUNKED_KV: 131,072 prefix tokens at a time, the extend K/V kept, three outputs + LSEs
        return live + MAX_CHUNK * per_token + m * hl * (2 * nope + v + rope) * 2 + 3 * m * hl * v * 2 + 3 * m * hl * 4
    if backend == "triton" and extend and prefix == 0:  # plain MHA over the extend part
        return live + m * hl * (nope + v) * 2 + m * hl * (nope + rope) * 2 + m * hl * v * 2
    absorbed = m * hl * (2 * r + v) * 2 + (m * hl * (r + rope) * 2 if backend == "triton" else 0)
    if backend == "triton" and extend and prefix > 0:  # o_proj's output, alive as it returns (deepseek_v2.py:2491-2506)
        absorbed += m * h * 2
    return live + absorbed + ((m * hl * v + ceil(m * hl * v / 128) * 4) if fp8 else 0)


def moe_live(f: dict, m: int, tp: int, requests: int, layerwise: bool, int4_rise: int = 0) -> int:
    h, e, k = f["hidden_size"], routed(f), f["num_experts_per_tok"]
    inter = ceil((f.get("moe_intermediate_size") or f["intermediate_size"]) / tp)
    copies = 4 if f.get("n_shared_experts") else 3
    base = copies * m * h * 2 + m * e * 4 + requests * f["vocab_size"] * 8
    apply = base + min(m, 65536) * k * (max(2 * inter, h) + inter) * 2 + (0 if layerwise else 2 * m * h * 2)
    return max(apply, base + int4_rise) if int4_rise else apply


def routed(f: dict) -> int:
    return f.get("n_routed_experts") or f.get("num_experts") or f["num_local_experts"]


def steps(b, phase: str) -> tuple[int, int]:
    return b.item(f"attention ({phase})"), b.item(f"MoE ({phase})")


def runtime_phases(b, kept: int) -> dict[str, int]:
    """ready + what stays + the allocator's overhead + the larger of the two steps, per runtime phase."""
    ready = b.phase_bytes("ready")
    alloc = b.item("allocator overhead")
    return {p: ready + kept + alloc + max(steps(b, p)) for p in ("short prompt", "longest prompt", "decode")}


# --- Kimi K2.7 Code on the seed recipe's host ------------------------------------------------------------------------
H, I, E, LAYERS, MOE, HEADS = 7168, 2048, 384, 61, 60, 64  # config.json facts (model-facts.md)
EXPERT = 3 * H * I // 2 + 2 * (2 * I * (H // 32) + H * (I // 32)) + 3 * 8  # INT4 g32 packed + bf16 scales + shapes
CARD = 97887 * MiB  # RTX PRO 6000 Blackwell as NVML reports it (audit §7), not 96 GiB
P_W13, SCALES = E * 2 * I * H // 2, E * (2 * I * (H // 32) + H * (I // 32)) * 2  # one INT4 layer's tensors
INDEX = E * 2 * (H + I) * 4  # g_idx + sort tensors pinned by original_params (kt_ep_wrapper.py:637)


def kimi_ledger(tokens: int, chunk: int) -> dict[str, int]:
    """Every exact static item, from the facts and the runtime's formulas."""
    return {
        "KV pool": tokens * (512 + 64) * LAYERS * 2,  # MLA cell: (kv_lora_rank + qk_rope) x layers x bf16
        "MLA w_kc/w_vc copies": HEADS * (128 + 128) * 512 * 2 * LAYERS,  # deepseek_weight_loader.py:402-620
        "KT staging buffer": chunk * H * 2,  # kt_ep_wrapper.py:5268-5279, rank 0
        "layerwise layer (kept)": 2 * E * EXPERT + INDEX,  # originals + restored copy (audit-2 §2.3)
        "flashinfer workspace": FLASHINFER_WORKSPACE,
    }


@pytest.mark.parametrize("context, concurrency", [(163840, 2), (131072, 1), (65536, 4)])
def test_kimi_every_item_and_phase_recomputed(context, concurrency):
    r = kimi(context, concurrency)
    (b,) = r.gpu_budgets
    f = facts("kimi-k2.7-code")
    chunk = r.flag("--chunked-prefill-size")
    assert chunk == 16384 and KIMI["derived"]["expert_bytes_native"] == EXPERT and b.total == CARD
    for name, expect in kimi_ledger(context * concurrency, chunk).items():
        assert b.item(name) == expect, name
    assert b.item("GPU experts") == r.gpu_experts * MOE * EXPERT
    assert b.item("non-expert weights") == KIMI["derived"]["non_expert_bytes_native"]
    # the longest prompt: its last chunk's own prefix plus every other request decoding inside the batch
    riders = context * (concurrency - 1)
    m = chunk + concurrency - 1
    attn = max(attention_live(f, m, p, "flashinfer", 1) for p in (riders, riders + context - chunk))
    rise = P_W13 - SCALES  # the restore: scales freed, a fresh packed w13 while the old lives (kt_ep_wrapper:2685)
    moe = moe_live(f, m, 1, concurrency, layerwise=True, int4_rise=rise)
    assert steps(b, "longest prompt") == (attn, moe)
    # the decompressed tokens are bounded by the tokens in flight, not one request's context (audit-2 §2.6)
    in_flight = min(context * concurrency, MAX_CHUNK)
    assert attn >= in_flight * 58496
    short_attn = attention_live(f, 401, riders, "flashinfer", 1)
    assert steps(b, "short prompt") == (short_attn, moe_live(f, 401, 1, concurrency, True, rise))
    kept = b.item("layerwise layer (kept)")
    phases = {p.phase: p.bytes for p in b.phases}
    assert {k: phases[k] for k in ("short prompt", "longest prompt", "decode")} == runtime_phases(b, kept)
    assert b.binding == "longest prompt" and r.binding == "GPU 0, longest prompt"
    longest = phases["longest prompt"]
    # the most GPU experts that keep the longest phase inside the card with its margin: one more does not fit
    assert longest + margin(b) <= CARD < longest + MOE * EXPERT + margin(b)


def test_kimi_published_anchors():
    """The audit's own figures at Kimi K2 shapes (runtime-memory-audit-2 §2.3, §3, §6; replayed on an H200)."""
    f = facts("kimi-k2.7-code")
    chunked = attention_live(f, 16384, 163840 * 2 - 16384, "flashinfer", 1)
    assert abs(chunked / GiB - 9.65) < 0.01  # MHA_CHUNKED_KV at chunk 16384
    one_shot = attention_live(f, 16384, 131072 - 16384, "flashinfer", 1)
    assert abs(one_shot / GiB - 8.35) < 0.1  # MHA_ONE_SHOT at 131,072 tokens
    layer = E * EXPERT
    assert abs((2 * layer - SCALES + P_W13) / GiB - 21.98) < 0.01  # the INT4 restore peak, 2L - S + P_w13
    assert abs(moe_live(f, 16384, 1, 2, True, P_W13 - SCALES) / GiB - 5.17) < 0.06  # on top of the 2L kept
    # 65,536 x 4: 7.14 GiB of prefix K/V + 0.875 GiB of extend K/V (audit-2 §3)
    assert abs(MAX_CHUNK * 58496 / GiB - 7.14) < 0.01 and 16384 * 57344 / GiB == 0.875


def test_kimi_old_sum_overcounted_and_the_allocator_is_counted():
    """Live sets per step replace the ~12-hidden-copies sum; the allocator's reserve is counted for the variable the
    pinned torch honours (expandable segments: +0.12 to +0.19 GiB replayed)."""
    (b,) = kimi().gpu_budgets
    assert 0.12 * GiB < b.item("allocator overhead") <= 0.25 * GiB
    assert not any(i.name.startswith("activations") or i.name == "MLA prefix K/V" for i in b.items)
    # CUDA graphs are the shared pool of the bs-2 decode step, not SGLang's 512 MiB heuristic (audit-2 §3)
    assert b.item("CUDA graphs") < 0.15 * GiB


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
    # the memory fits, but kt-kernel 0.7.2 has no loader for gpt-oss's experts (runtime/rules.py): it cannot run
    assert not r.fits and all(b.fits for b in r.gpu_budgets)
    assert len(r.overflows) == 1 and "no loader for gpt-oss" in r.overflows[0]


# --- DeepSeek V3 on 4 x 48 GB with TP 4 ---------------------------------------------------------------------------
def test_deepseek_v3_tp4_per_rank_items():
    host = host_from_spec(
        {
            "gpus": [
                {"name": "NVIDIA RTX 6000 Ada Generation", "memory_gib": 48, "compute_capability": "8.9", "count": 4}
            ],
            "cpu": {**XEON_AMX, "model": "Intel Xeon w9-3495X", "sockets": 1},  # one socket, the same ISA
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
    # the preset's triton backend never decompresses the prefix: its longest step is the absorbed path with torch.cat
    f, m = facts("deepseek-v3"), r.flag("--chunked-prefill-size")
    assert isinstance(m, int)
    absorbed = attention_live(f, m, 131072 - m, "triton", 4, fp8=True)
    assert b0.item("attention (longest prompt)") == absorbed
    flashinfer = plan(
        host, spec, Goals(context=131072, concurrency=1), replace(p.sglang, attention_backend="flashinfer")
    )
    mla = attention_live(f, m, 131072 - m, "flashinfer", 4)
    assert flashinfer.gpu_budgets[0].item("attention (longest prompt)") == mla
    assert flashinfer.gpu_budgets[0].item("flashinfer workspace") == FLASHINFER_WORKSPACE
    assert b0.item("flashinfer workspace") == 0
    assert b0.item("KV pool") == 131072 * (rank + rope) * 61 * 2  # the latent cache is not split by TP
    chunk = r.flag("--chunked-prefill-size")
    assert b0.item("KT staging buffer") == chunk * 7168 * 2 and b1.item("KT staging buffer") == 0  # rank 0 only
    layer = 256 * spec.expert_bytes_native  # FP8: the layer is allocated once, split over the ranks
    assert b0.item("layerwise layer (kept)") == ceil(layer / 4)  # FP8: allocated once (fp8.py:1086-1221 no-op)
    assert r.gpu_budgets[0].binding in ("longest prompt", "short prompt")


# --- Qwen3-235B on an H200 with enough RAM ---------------------------------------------------------------------------
def test_qwen3_235b_on_an_h200():
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "9.0"}],
            "cpu": XEON_AMX,
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
    assert b.item("MLA w_kc/w_vc copies") == 0  # GQA: no absorbed copies
    f = facts("qwen3-235b-a22b")
    chunk = r.flag("--chunked-prefill-size")
    assert isinstance(chunk, int)
    assert steps(b, "longest prompt") == (
        attention_live(f, chunk + 1, 32768, "flashinfer", 1),  # the other request rides with its context as prefix
        moe_live(f, chunk + 1, 1, 2, layerwise=True),
    )
    phases = {p.phase: p.bytes for p in b.phases}
    kept = b.item("layerwise layer (kept)")
    assert {k: phases[k] for k in ("short prompt", "longest prompt", "decode")} == runtime_phases(b, kept)
    peak = max(p.bytes for p in b.phases)
    per = layers * expert
    assert peak + margin(b) <= b.total < peak + per + margin(b) or r.gpu_experts == experts
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
        ("NVIDIA GeForce RTX 4090 48GB", 48, 49140, False),  # the modded card: public nvidia-smi shows 49140MiB
        ("NVIDIA GeForce RTX 4090", 24, 24564, False),
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


@pytest.mark.parametrize(
    "name, stated, reserve_mib",
    [("NVIDIA GeForce RTX 4090", 24, 354), ("NVIDIA GeForce RTX 5090", 32, 487), ("Some Future GPU", 80, 615)],
)
def test_driver_reserve_per_card(name, stated, reserve_mib):
    """Public `nvidia-smi -q` captures: 4090 354 MiB, 5090 487 MiB reserved; an unknown card gets the H200's."""
    host = host_from_spec(
        {
            "gpus": [{"name": name, "memory_gib": stated}],
            "cpu": {"cores_per_socket": 8, "flags": ["avx2"]},
            "memory_gib": 64,
        }
    )
    p = get_preset("qwen3-30b-a3b")
    r = plan(host, p.spec(), Goals(context=8192), p.sglang)
    reserve = r.gpu_budgets[0].item("driver reserve")
    assert abs(reserve - reserve_mib * MiB) < MiB


def check_phases(r, f: dict, tp: int, backend: str, fp8: bool = False, int4_rise: int = 0, tight: bool = True) -> None:
    """Every GPU's step live sets and runtime phases against the calculator; the fit is tight to one expert."""
    context, c = r.goals.context, r.goals.concurrency
    chunk = r.flag("--chunked-prefill-size")
    assert isinstance(chunk, int)
    layerwise = r.flag("--kt-gpu-prefill-token-threshold") is not None
    riders, m = context * (c - 1), chunk + c - 1
    attn = max(attention_live(f, m, p, backend, tp, fp8=fp8) for p in (riders, riders + max(0, context - chunk)))
    moe = moe_live(f, m, tp, c, layerwise=layerwise, int4_rise=int4_rise)
    for b in r.gpu_budgets:
        assert steps(b, "longest prompt") == (attn, moe), b.gpu
        assert steps(b, "decode") == (
            attention_live(f, c, 0, backend, tp, extend=False, fp8=fp8),
            moe_live(f, c, tp, c, layerwise=False),
        )
        phases = {p.phase: p.bytes for p in b.phases}
        kept = b.item("layerwise layer (kept)")
        assert {k: phases[k] for k in ("short prompt", "longest prompt", "decode")} == runtime_phases(b, kept)
    room = min(b.total - b.margin - b.used for b in r.gpu_budgets)
    assert room >= 0  # every phase inside every card with its margin
    if tight and 0 < r.gpu_experts < routed(f):  # and one more expert per layer would not be
        per = max(ceil(b.item("GPU experts") / r.gpu_experts) for b in r.gpu_budgets)
        assert room < per


def test_deepseek_v3_fp8_on_an_h200_triton():
    """Absorbed MLA with torch.cat on triton (deepseek_v2.py:2286-2500): ~8.5 GiB at 16,384 tokens (audit-2 §2.7)."""
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA H200", "memory_gib": 141, "compute_capability": "9.0"}],
            "cpu": XEON_AMX,
            "numa_nodes": 2,
            "memory_gib": 1024,
        }
    )
    p = get_preset("deepseek-v3")
    r = plan(host, p.spec(), Goals(context=65536, concurrency=1), p.sglang)
    assert r.flag("--attention-backend") == "triton"
    f = facts("deepseek-v3")
    check_phases(r, f, 1, "triton", fp8=True)
    chunk = r.flag("--chunked-prefill-size")
    assert chunk == 16384
    absorbed = attention_live(f, chunk, 65536 - chunk, "triton", 1, fp8=True)
    assert abs(absorbed / GiB - 8.5) < 0.3  # the audit's 8.5 GiB; the old activation estimate said 5.88
    assert r.gpu_budgets[0].item("attention (longest prompt)") == absorbed
    assert r.fits


def test_glm_46_on_two_modded_4090s_tp2():
    host = host_from_spec(
        {
            "gpus": [
                {"name": "NVIDIA GeForce RTX 4090 48GB", "memory_gib": 48, "compute_capability": "8.9", "count": 2}
            ],
            "cpu": XEON_AMX,
            "numa_nodes": 2,
            "memory_gib": 1024,
        }
    )
    p = get_preset("glm-4.6")
    r = plan(host, p.spec(), Goals(context=32768, concurrency=1), p.sglang)
    assert r.tp == 2 and all(b.total == 49140 * MiB for b in r.gpu_budgets)
    assert all(abs(b.item("driver reserve") - 354 * MiB) < MiB for b in r.gpu_budgets)
    check_phases(r, facts("glm-4.6-4.7"), 2, r.flag("--attention-backend") or "flashinfer")
    assert r.fits


def test_minimax_m2_on_a_5090():
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA GeForce RTX 5090", "memory_gib": 32, "compute_capability": "12.0"}],
            "cpu": ZEN4,
            "memory_gib": 256,
        }
    )
    p = get_preset("minimax-m2")
    r = plan(host, p.spec(), Goals(context=32768, concurrency=1), p.sglang)
    (b,) = r.gpu_budgets
    assert b.total == 32607 * MiB and abs(b.item("driver reserve") - 487 * MiB) < MiB
    check_phases(r, facts("minimax-m2"), 1, r.flag("--attention-backend") or "flashinfer")


def test_gpt_oss_runs_the_triton_runner_and_counts_bf16_gpu_experts():
    """The triton_kernel (and flashinfer_mxfp4) runners return top-k without topk_ids, which KT's apply reads
    (topk.py:174-197, kt_ep_wrapper.py:5919): the plan renders the triton runner, which upcasts the GPU experts to
    BF16 (mxfp4.py:704-725): 3 x 2880 x 2880 x 2 B + fp32 biases = 49.8 MB each instead of 13.2 MB."""
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA GeForce RTX 4090", "memory_gib": 24, "compute_capability": "8.9"}],
            "cpu": ZEN4,
            "memory_gib": 192,
        }
    )
    p = get_preset("gpt-oss-120b")
    r = plan(host, p.spec(), Goals(context=32768, gpu_experts=4), p.sglang)
    assert r.flag("--moe-runner-backend") == "triton"
    per = 3 * 2880 * 2880 * 2 + (2 * 2880 + 2880) * 4
    assert abs(per / 1e6 - 49.8) < 0.05
    assert r.gpu_budgets[0].item("GPU experts") == 4 * 36 * per
    check_phases(r, facts("gpt-oss-120b"), 1, r.flag("--attention-backend") or "flashinfer", tight=False)
