"""GLM-5-Next (GLM-5.3-Flash, `Glm5NextForConditionalGeneration`): the checkpoint's tensors, the KV and KDA state
pools and the start-up rules, each checked against arithmetic written here from sglang-kt 0.7.2's code (file:line in
each test) or against a third party's figures, never against the planner's own output."""

from __future__ import annotations

import math

import pytest
from safetensors_fixture import nbytes, write_checkpoint

from ktwizard.host.spec import bundled_hosts, host_from_spec, load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import plan
from ktwizard.planner.memory import ledger, linear_state
from ktwizard.planner.types import Goals

PID = "glm-5.3-flash"
H, V, L, E, IM, ID = 4096, 154880, 45, 288, 2048, 12288
HEADS, QL, KL, NOPE, VD = 64, 1536, 512, 256, 256
KH, KD = 64, 128  # KDA heads x head_dim
IH, IDIM = 32, 128  # indexer
DSA = [i for i in range(L) if i % 4 == 3]  # configs/glm5_next.py:288-295


def _fp8(name: str, o: int, i: int) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(f"{name}.weight", "F8_E4M3", (o, i)), (f"{name}.weight_scale_inv", "F32", (-(-o // 128), -(-i // 128)))]


def _bf16(name: str, o: int, i: int) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(f"{name}.weight", "BF16", (o, i))]


def _vision() -> list[tuple[str, str, tuple[int, ...]]]:
    """GlmOcrVisionModel at the released vision_config (glm_ocr.py:69-233, glm4v.py:191-270), BF16."""
    v, d, inter, out, ctx = "model.visual", 1024, 4096, 4096, 10240
    t = [(f"{v}.patch_embed.proj.weight", "BF16", (d, 3, 2, 14, 14)), (f"{v}.patch_embed.proj.bias", "BF16", (d,))]
    for b in range(24):
        p = f"{v}.blocks.{b}"
        t += [(f"{p}.norm1.weight", "BF16", (d,)), (f"{p}.norm2.weight", "BF16", (d,))]
        t += [(f"{p}.attn.qkv.weight", "BF16", (3 * d, d)), (f"{p}.attn.qkv.bias", "BF16", (3 * d,))]
        t += [(f"{p}.attn.proj.weight", "BF16", (d, d)), (f"{p}.attn.proj.bias", "BF16", (d,))]
        for n in ("gate_proj", "up_proj"):
            t += [(f"{p}.mlp.{n}.weight", "BF16", (inter, d)), (f"{p}.mlp.{n}.bias", "BF16", (inter,))]
        t += [(f"{p}.mlp.down_proj.weight", "BF16", (d, inter)), (f"{p}.mlp.down_proj.bias", "BF16", (d,))]
    t += [(f"{v}.downsample.weight", "BF16", (out, d, 2, 2)), (f"{v}.downsample.bias", "BF16", (out,))]
    t += [(f"{v}.post_layernorm.weight", "BF16", (d,)), (f"{v}.merger.proj.weight", "BF16", (out, out))]
    t += [(f"{v}.merger.post_projection_norm.weight", "BF16", (out,))]
    t += [(f"{v}.merger.post_projection_norm.bias", "BF16", (out,))]
    t += [(f"{v}.merger.gate_proj.weight", "BF16", (ctx, out)), (f"{v}.merger.up_proj.weight", "BF16", (ctx, out))]
    t += [(f"{v}.merger.down_proj.weight", "BF16", (out, ctx))]
    return t


def glm53_tensors() -> list[tuple[str, str, tuple[int, ...]]]:
    """The released checkpoint's tensors as the model class loads them (glm5_next.py:178-193 strips
    model.language_model.; :1018-1041 maps the KDA shards; :605-615 the mHC parameters; nsa_indexer_kpool.py:111-148
    the indexer), with the FP8 checkpoint's BF16 exceptions (KDA, kv_b_proj, indexer) and the MTP layer 45."""
    m = "model.language_model"
    t = [(f"{m}.embed_tokens.weight", "BF16", (V, H)), (f"{m}.norm.weight", "BF16", (H,))]
    t += [("lm_head.weight", "BF16", (V, H))]
    for i in range(L + 1):
        p = f"{m}.layers.{i}"
        t += [(f"{p}.input_layernorm.weight", "BF16", (H,)), (f"{p}.post_attention_layernorm.weight", "BF16", (H,))]
        a = f"{p}.self_attn"
        if i in DSA or i == L:
            t += _fp8(f"{a}.q_a_proj", QL, H) + [(f"{a}.q_a_layernorm.weight", "BF16", (QL,))]
            t += _fp8(f"{a}.q_b_proj", HEADS * NOPE, QL) + _fp8(f"{a}.kv_a_proj_with_mqa", KL, H)
            t += [(f"{a}.kv_a_layernorm.weight", "BF16", (KL,))] + _bf16(f"{a}.kv_b_proj", HEADS * (NOPE + VD), KL)
            t += _fp8(f"{a}.o_proj", H, HEADS * VD)
            x = f"{a}.indexer"
            t += _bf16(f"{x}.wq_b", IH * IDIM, QL) + _bf16(f"{x}.wk", IDIM, H) + _bf16(f"{x}.weights_proj", IH, H)
            t += [(f"{x}.k_norm.weight", "BF16", (IDIM,)), (f"{x}.k_norm.bias", "BF16", (IDIM,))]
            t += [(f"{x}.index_kpool_compress_gate", "BF16", (IDIM, H))]
            t += [(f"{x}.index_kpool_compress_ape", "BF16", (4, IDIM))]
        else:
            for n in ("q_proj", "k_proj", "v_proj"):
                t += _bf16(f"{a}.{n}", KH * KD, H) + [(f"{a}.{n[0]}_conv1d.weight", "BF16", (KH * KD, 1, 4))]
            t += _bf16(f"{a}.b_proj", KH, H) + _bf16(f"{a}.f_a_proj", KD, H) + _bf16(f"{a}.g_a_proj", KD, H)
            t += _bf16(f"{a}.f_b_proj", KH * KD, KD) + _bf16(f"{a}.g_b_proj", KH * KD, KD)
            t += [(f"{a}.A_log", "F32", (KH,)), (f"{a}.dt_bias", "F32", (KH * KD,))]
            t += [(f"{a}.o_norm.weight", "BF16", (KD,))]
            t += _bf16(f"{a}.o_proj", H, KH * KD)
        if i < L:
            for side in ("attn", "ffn"):
                t += [(f"{p}.hc_{side}_fn", "F32", (24, 4 * H)), (f"{p}.hc_{side}_base", "F32", (24,))]
                t += [(f"{p}.hc_{side}_scale", "F32", (3,))]
        mlp = f"{p}.mlp"
        if i < 3:
            t += _fp8(f"{mlp}.gate_proj", ID, H) + _fp8(f"{mlp}.up_proj", ID, H) + _fp8(f"{mlp}.down_proj", H, ID)
            continue
        t += _bf16(f"{mlp}.gate", E, H) + [(f"{mlp}.gate.e_score_correction_bias", "F32", (E,))]
        s = f"{mlp}.shared_experts"
        t += _fp8(f"{s}.gate_proj", IM, H) + _fp8(f"{s}.up_proj", IM, H) + _fp8(f"{s}.down_proj", H, IM)
        for j in range(E):
            x = f"{mlp}.experts.{j}"
            t += _fp8(f"{x}.gate_proj", IM, H) + _fp8(f"{x}.up_proj", IM, H) + _fp8(f"{x}.down_proj", H, IM)
    return t + _vision()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt") / "GLM-5.3-Flash"
    tensors = glm53_tensors()
    write_checkpoint(folder, get_preset(PID).config, tensors, shards=8)
    return folder, tensors


def test_the_preset_equals_the_spec_read_from_a_checkpoint_folder(checkpoint):
    """Header-only shards with the runtime's tensor names: the preset prices the checkpoint to the byte (the vision
    tower included), and the MTP layer 45 the runtime skips (glm5_next.py:1240-1247) is kept apart."""
    from ktwizard.models.inspect import inspect_checkpoint

    folder, tensors = checkpoint
    r = inspect_checkpoint(folder)
    assert not any("differ" in n or "not in the headers" in n for n in r.notes), r.notes
    assert r.spec == get_preset(PID).spec()
    mtp = sum(nbytes(d, s) for n, d, s in tensors if ".layers.45." in n)
    assert r.spec.mtp_bytes == mtp > 0
    vision = sum(nbytes(d, s) for n, d, s in tensors if n.startswith("model.visual."))
    assert r.spec.bytes_by_group["vision"] == vision
    # the whole checkpoint, MTP and vision included: a third party lists "328 GB weights" for zai-org/GLM-5.3-Flash
    # (code-index id 62950460024)
    assert round((r.spec.non_expert_bytes + r.spec.routed_bytes + r.spec.mtp_bytes) / 1e9) == 328


def test_layer_bytes_match_a_third_party_header_table():
    """A third party summed these by hand from zai-org/GLM-5.3-Flash's shard headers (rev 04c4e9e9; code-index id
    67447245452): KDA layer 275,481,088 B, sparse layer 149,190,144 B, one mHC set 3,145,944 B (at TP 1)."""
    per_layer = {lb.layer: lb.non_expert for lb in get_preset(PID).spec().per_layer}
    norms = 2 * H * 2
    dense = 3 * (ID * H + (ID // 128) * (H // 128) * 4)
    shared = 3 * (IM * H + (IM // 128) * (H // 128) * 4)
    router = E * H * 2 + E * 4
    assert per_layer[0] - norms - dense == 275_481_088 + 3_145_944  # KDA + mHC, dense MLP
    assert per_layer[3] - norms - shared - router == 149_190_144 + 3_145_944  # DSA + mHC, MoE layer


def test_kv_bytes_per_token_from_the_pool_code():
    """model_runner_kv_cache_mixin.py:94-159 with the trtllm NSA backends (kv_cache_dim = kv_lora + rope, :362-370):
    FP8 = 512-byte latent + 4 fp32 descales (:104-113) + 128 FP8 index bytes + one fp32 scale (:151-156); BF16 (SM86)
    = 512 x 2 + 128 x 2 (:148-150); over the 11 DSA layers, not split by TP."""
    spec = get_preset(PID).spec()
    assert spec.kv_cell_bytes(8, 1) == 11 * (512 + 512 // 128 * 4 + 128 + 4) == 7260
    assert spec.kv_cell_bytes(1, 2) == 11 * (512 * 2 + 128 * 2) == 14080


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_kda_state_per_request_from_kimi_linear_state_shape(tp):
    """KimiLinearStateShape.create (mamba_utils.py:197-232): conv q, k, v each (kernel - 1) x heads x dim / tp in
    bf16, temporal heads / tp x dim x dim in fp32 (mamba_cache_per_req, :116-125), over the 34 KDA layers. At TP 8 a
    third party reads 542,720 B per layer (code-index id 70801771586: 18,432 conv + 524,288 SSM)."""
    spec = get_preset(PID).spec()
    layer = 3 * 3 * (KH * KD // tp) * 2 + (KH // tp) * KD * KD * 4
    assert linear_state.per_request(spec, tp) == 34 * layer == spec.per_request_state_bytes(tp)
    if tp == 8:
        assert layer == 542_720


def test_pool_sizes_as_the_runtime_allocates_them():
    """Radix cache forced off (server_args.py:1664-1667): one state slot per request (:597-598), plus MambaPool's
    spare; the KV pool floors to 64-token pages and holds size + page_size rows (memory_pool.py:1441, :1801), and
    each request slot keeps two BF16 4 x 128 KPool tails per DSA layer (mixin :195-227)."""
    spec = get_preset(PID).spec()
    sp = linear_state.state_pool(spec, 2, 3)
    assert sp is not None and sp.slots == 3 and sp.allocated == 4 * spec.per_request_state_bytes(2)
    pool = ledger.kv_pool(spec, 100_000, 2, 1, 8192, 3)
    tokens = math.ceil(100_000 / 64) * 64
    assert pool.max_total_tokens == tokens
    assert pool.bytes == (tokens + 64) * 7260 + 11 * 3 * 4 * 128 * 2 * 2


@pytest.mark.parametrize("host", bundled_hosts())
def test_plans_on_every_bundled_host(host):
    """Fits, or says exactly what does not: SM90 (the H200) fails closed in the runtime (configs/glm5_next.py:54-72)."""
    p = get_preset(PID)
    h = load_host(host)
    r = plan(h, p.spec(), Goals(), p.sglang)
    sm90 = any(g.compute_capability == "9.0" for g in h.gpus.devices)
    assert r.fits != sm90, r.overflows
    if sm90:
        assert "SM86, SM89 or Blackwell" in r.overflows[0]
    else:
        assert r.method == "FP8" and r.tp in (1, 2, 4, 8)


def _host(name: str, cc: str, count: int = 1, gib: int = 48):
    flags = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512vbmi", "avx512_vnni"]
    flags += ["amx_tile", "amx_int8", "amx_bf16"]
    return host_from_spec(
        {
            "name": "glm-host",
            "gpus": [{"name": name, "memory_gib": gib, "compute_capability": cc, "count": count}],
            "cpu": {"model": "Xeon", "sockets": 1, "cores_per_socket": 64, "threads_per_core": 2, "flags": flags},
            "numa_nodes": 1,
            "memory_gib": 1024,
        }
    )


@pytest.mark.parametrize(
    ("cc", "kv"), [("8.6", "bfloat16"), ("8.9", "fp8_e4m3"), ("12.0", "fp8_e4m3"), ("10.0", "fp8_e4m3")]
)
def test_flags_are_what_the_runtime_accepts(cc, kv):
    """server_args.py:1481-1730: trtllm NSA kernels for prefill and decode, the profile's KV dtype, 64-token pages,
    the triton MoE runner, no radix cache, no mixed chunks, no layerwise prefill (it would zero the GPU experts),
    graphs captured up to batch 4, one state slot per request."""
    p = get_preset(PID)
    r = plan(_host("NVIDIA GPU", cc, count=4, gib=96), p.spec(), Goals(concurrency=3), p.sglang)
    f = {fl.name: fl.value for fl in r.flags}
    assert f["--attention-backend"] == "nsa"
    assert f["--nsa-prefill-backend"] == f["--nsa-decode-backend"] == "trtllm"
    assert f["--kv-cache-dtype"] == kv and f["--page-size"] == 64
    assert f["--moe-runner-backend"] == "triton" and f["--disable-radix-cache"] is True
    assert f["--kt-method"] == "FP8" and f["--cuda-graph-max-bs"] == 4
    assert f["--max-mamba-cache-size"] == 3
    assert "--enable-mixed-chunk" not in f and "--kt-gpu-prefill-token-threshold" not in f
    pool = next(i for i in r.gpu_budgets[0].items if i.name == "KV pool")
    cell = 7260 if kv == "fp8_e4m3" else 14080
    assert pool.bytes == (f["--max-total-tokens"] + 64) * cell + 11 * 3 * 4 * 128 * 2 * 2


def test_what_the_runtime_refuses_is_refused_with_the_reason():
    p = get_preset(PID)
    h = _host("NVIDIA RTX 4090", "8.9")
    amx = plan(h, p.spec(), Goals(method="AMXINT4"), p.sglang)  # server_args.py:1620-1628
    assert not amx.fits and "--kt-method FP8" in amx.overflows[0]
    bf16 = plan(h, p.spec(), Goals(kv_dtype="bf16"), p.sglang)  # server_args.py:1686-1690
    assert not bf16.fits and "fp8_e4m3 KV cache" in bf16.overflows[0]
    a100 = plan(_host("NVIDIA A100", "8.0", gib=80), p.spec(), Goals(), p.sglang)  # configs/glm5_next.py:54-72
    assert not a100.fits and "SM80 fails closed" in a100.overflows[0]


def test_w_kc_w_vc_copies_only_for_the_dsa_layers():
    """post_load_weights splits kv_b_proj into w_kc / w_vc for the layers whose kv_b_proj loaded
    (deepseek_weight_loader.py:402-430, :558-611): GLM-5-Next's 11 DSA layers, bf16, heads split over TP."""
    spec = get_preset(PID).spec()
    item = ledger.mla_absorbed_copies(spec, 4)
    assert item is not None and item.bytes == math.ceil(HEADS * (NOPE + VD) * KL * 2 * 11 / 4)


def test_the_forecast_counts_the_kda_state_each_decode_step():
    """Every decode step reads and writes each stream's KDA state (34 layers x 4.34 MB at TP 1), beside the DSA
    layers' KV: at context 0 the attention read is that state alone, so it cannot be left out."""
    from ktwizard.planner.forecast.attention import attention_lanes, attention_read
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.terms import TERMS

    p = get_preset(PID)
    host = load_host("rtx-pro-6000-epyc-9355")
    r = plan(host, p.spec(), Goals(context=32768), p.sglang)
    assert r.fits and r.forecast is not None and r.forecast.at_goals.tok_s_per_stream > 0
    s = setup_from_plan(host, p.spec(), r)
    rate = min(s.gpu.bandwidth * TERMS.attn_bw_eff, attention_lanes(s, 2) * TERMS.attn_lane_bps)
    state = 34 * (3 * 3 * KH * KD * 2 + KH * KD * KD * 4)
    assert attention_read(s, 0, 2) == pytest.approx(2 * 2 * state / rate)


def test_the_model_list_badge_names_the_gpu_gate():
    """The wizard's model list: an H200 host gets the GPU-architecture badge (the runtime fails closed on SM90), an
    RTX 4090 host a fit."""
    from ktwizard.planner.screening import screen

    p = get_preset(PID)
    assert screen(p.spec(), load_host("h200-1gpu-xeon-amx"), p.sglang).badge == "✗ GPU architecture lacks the kernel"
    assert screen(p.spec(), load_host("xeon-2s-amx-4x4090-48gb"), p.sglang).badge.startswith("✓ fits")


def test_plan_before_downloading_reads_the_same_checkpoint_from_the_hub(tmp_path, monkeypatch):
    """`--model hf:` against a recorded hub on 127.0.0.1 (tests/unit/test_hub.py's): config.json, the index and
    the shard headers of a (sparse) full-size GLM-5.3-Flash give the preset's spec, the commit and the download size."""
    import threading
    from http.server import ThreadingHTTPServer

    from test_hub import SHA, Hub

    from ktwizard.inputs import inspect_source

    folder = tmp_path / "glm"
    tensors = glm53_tensors()
    write_checkpoint(folder, get_preset(PID).config, tensors, shards=4, sparse=True)
    shards = sorted(p.name for p in folder.glob("*.safetensors"))
    monkeypatch.setattr(
        Hub, "repos", {"zai-org/GLM-5.3-Flash": (folder, ["config.json", "model.safetensors.index.json", *shards])}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        r = inspect_source("hf:zai-org/GLM-5.3-Flash")
    finally:
        server.shutdown()
    assert r.spec == get_preset(PID).spec() and r.spec.exact and r.spec.revision == SHA
    assert r.spec.download_bytes >= sum(nbytes(d, s) for _, d, s in tensors)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"mhc": False}, "mhc=true"),
        ({"linear_attn_config": {"num_heads": 64, "head_dim": 128, "short_conv_kernel_size": 4,
                                 "full_attn_layers": [3, 99]}}, "layer numbers below 45"),
        ({"linear_attn_config": None, "layer_types": ["linear_attention"] * 7}, "7 entries for 45 layers"),
        ({"linear_attn_config": "kda"}, "must be a mapping"),
    ],
)  # fmt: skip
def test_a_bad_config_is_one_clear_line(change, words):
    from ktwizard.errors import BadInput
    from ktwizard.models.config import parse_config

    cfg = get_preset(PID).config
    bad = {**cfg, "text_config": {**cfg["text_config"], **change}}
    with pytest.raises(BadInput, match=words):
        parse_config(bad, "config.json")


def test_a_long_prefill_counts_the_kda_chunk_temporaries():
    """chunk_kda_fwd (fla/kda.py:1141-1197) keeps, while chunk_gated_delta_rule_fwd_h runs, one bf16 state
    [B, NT, H, K, V] per 64-token chunk (chunk_delta_h.py:296-307) beside the fp32 gate cumsum: at 8192 tokens on
    TP 2 that is 128 chunks x 32 heads x 128 x 128 x 2 B, more than the DSA layer's absorbed step holds."""
    from ktwizard.planner.memory import steps

    spec = get_preset(PID).spec()
    step = steps.attention_step(spec, 2, 8192, 0, "nsa")
    parts = dict(step.parts)
    assert step.path == "KDA chunked"
    assert parts["chunk states"] == 128 * 32 * 128 * 128 * 2
    assert parts["gate cumsum (fp32)"] == 8192 * 4096 * 4
    assert parts["mHC residual (4 streams)"] == 4 * 8192 * 4096 * 2


@pytest.mark.parametrize(("cc", "cell"), [("8.9", 11 * (512 + 4 * 4 + 128 + 4)), ("8.6", 11 * (512 + 128) * 2)])
def test_the_forecast_reads_the_kv_in_the_dtype_the_plan_renders(cc, cell):
    """Decode attention reads the DSA layers' cache as the pool holds it: on SM89 the rendered fp8_e4m3 cache is 512
    FP8 latent bytes + 4 fp32 descales + 128 FP8 index bytes + one fp32 scale per DSA layer (7,260 B over 11 layers,
    glm5_next_memory_pool.py:104-113, :151-156), on SM86 the BF16 one (14,080 B). The old forecast read 14,080 B per
    token on every GPU. Beyond the KDA state (read at context 0), each extra token costs exactly one cell."""
    from ktwizard.planner.forecast.attention import attention_lanes, attention_read
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.terms import TERMS

    p = get_preset(PID)
    host = _host("NVIDIA GPU", cc, count=4, gib=96)
    r = plan(host, p.spec(), Goals(context=32768), p.sglang)
    assert r.fits
    s = setup_from_plan(host, p.spec(), r)
    rate = min(s.gpu.bandwidth * TERMS.attn_bw_eff, attention_lanes(s, 1) * TERMS.attn_lane_bps)
    assert attention_read(s, 32768, 1) - attention_read(s, 0, 1) == pytest.approx(32768 * cell / rate)
