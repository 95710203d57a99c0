"""MiniMax-M3 (sglang-kt 0.7.2 models/minimax_m3.py, minimax_m3_vl.py): facts, memory and plans against the runtime.

Independent arithmetic: the numbers are written from the model class's shapes, the KV pool class the runtime picks
(mem_cache/memory_pool.py:2158-2261, model_executor/model_runner_kv_cache_mixin.py:929-950) and the two checkpoints'
header listings (model-facts.md, block minimax-m3), not read back from ktwizard.
"""

from __future__ import annotations

import pytest

from ktwizard.host.spec import bundled_hosts, load_host
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

M3 = ("minimax-m3-mxfp8", "minimax-m3")
GiB = 2**30


@pytest.mark.parametrize("pid", M3)
@pytest.mark.parametrize("host", bundled_hosts())
def test_m3_plans_on_every_bundled_host(pid, host):
    p = get_preset(pid)
    r = plan(load_host(host), p.spec(), Goals(), p.sglang, recipe_for(pid))
    assert r.fits or (
        r.overflows
        and all(" over by " in o or "need" in o or "use the" in o.lower() or "use a" in o for o in r.overflows)
    )
    assert 0 <= r.gpu_experts <= 128


def test_params_and_bytes_equal_the_checkpoints_header_listings():
    """The BF16 checkpoint's headers hold 427,040,140,160 parameters (vision tower included) in 795.51 GiB; the
    MXFP8 one 413.27 GiB (the inspector reports' two-decimal GiB figures)."""
    bf16, mx = get_preset("minimax-m3").spec(), get_preset("minimax-m3-mxfp8").spec()
    vision_params = 865_567_232  # 32 CLIP layers of 1280, the patch embedding, projector and patch-merge MLP
    assert bf16.params_total + vision_params == 427_040_140_160
    assert round(sum(bf16.bytes_by_group.values()) / GiB, 2) == 795.51
    assert round(sum(mx.bytes_by_group.values()) / GiB, 2) == 413.27
    # one routed expert: w1, w3 [3072, 6144] and w2 [6144, 3072]; MXFP8 adds one ue8m0 byte per 32 inputs
    assert bf16.expert_bytes_native == 3 * 3072 * 6144 * 2
    assert mx.expert_bytes_native == 3 * (3072 * 6144 + 3072 * 6144 // 32)
    assert (bf16.moe_layer_count, bf16.routed_experts, bf16.experts_per_token) == (57, 128, 4)
    assert bf16.mtp_bytes == 0  # neither checkpoint stores MTP tensors


@pytest.mark.parametrize(("tp", "kv_bytes"), [(1, 2), (4, 2), (8, 2), (1, 1), (8, 1)])
def test_kv_cell_is_the_sparse_pools_layout(tp, kv_bytes):
    """MiniMaxSparseKVPool: main K/V over all 60 layers with max(1, 4 // tp) heads of 128 in the KV dtype
    (memory_pool.py:2214-2225), plus a K-only index pool of one 128-wide head per sparse layer (57: every layer from
    3 disables the index value) in the model's bf16 whatever the KV dtype or TP (:2242-2255; index_dtype=self.dtype,
    mixin :938)."""
    spec = get_preset("minimax-m3-mxfp8").spec()
    main = 2 * max(1, 4 // tp) * 128 * 60 * kv_bytes
    index = 57 * 128 * 2
    assert spec.kv_cell_bytes(tp, kv_bytes) == main + index


def test_kv_pool_allocates_the_index_keys_beside_the_kv():
    """The pool's bytes are (cap + page) rows of both sub-pools (memory_pool.py:812-820, :2107-2108), page 1."""
    from ktwizard.planner.memory.ledger import kv_pool

    spec = get_preset("minimax-m3-mxfp8").spec()
    pool = kv_pool(spec, 65536, 4, 2, 8192, 1)
    assert pool.max_total_tokens == 65536
    assert pool.bytes == (65536 + 1) * (2 * 1 * 128 * 60 * 2 + 57 * 128 * 2)
    assert "index keys" in pool.why


def test_a_bf16_checkpoint_is_refused_because_kt_would_drop_the_clamped_swiglu():
    """kt_ep_wrapper.py:399-405 passes swiglu_alpha / swiglu_limit to kt-kernel only for MXFP4 / MXFP8: BF16 CPU
    experts would compute plain SiLU. The plan says so and names the checkpoint that runs."""
    p = get_preset("minimax-m3")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(), p.sglang)
    assert not r.fits and any("clamped SwiGLU" in o and "MiniMax-M3-MXFP8" in o for o in r.overflows)
    # and 0.7.2's ServerArgs stops an unquantized M3 before loading (server_args.py:2433-2443)
    assert any("_quantization_explicitly_unset" in o for o in r.overflows)


def test_mxfp8_plan_renders_what_kts_tutorial_runs():
    """doc/en/kt-kernel/MiniMax-M3-Tutorial.md: --kt-method MXFP8 on the checkpoint itself, --quantization mxfp8,
    --moe-runner-backend triton, the minimax-m3 parsers; kt-cli's registry adds flashinfer
    (kt_kernel/cli/utils/model_registry.py:180). On Blackwell 0.7.2 keeps only cutlass among the runners a start-up
    accepts for mxfp8 (server_args.py:2952-2983)."""
    p = get_preset("minimax-m3-mxfp8")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(), p.sglang)
    flags = {f.name: f.value for f in r.flags}
    assert r.method == "MXFP8" and flags["--kt-weight-path"] == flags["--model-path"]
    assert flags["--quantization"] == "mxfp8"  # without it 0.7.2 raises AttributeError (server_args.py:2433-2443)
    assert flags["--moe-runner-backend"] == "triton" and flags["--attention-backend"] == "flashinfer"
    assert flags["--tool-call-parser"] == "minimax-m3" and flags["--reasoning-parser"] == "minimax-m3"
    blackwell = plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(), p.sglang)
    assert {f.name: f.value for f in blackwell.flags}["--moe-runner-backend"] == "cutlass"
    # ... and on SM120 neither runner has an MXFP8 MoE kernel (fp8.py:809-814, 1225-1226): refused (issue #49)
    assert not blackwell.fits and "no MXFP8 MoE kernel for SM120" in blackwell.overflows[0]


def _m3_tiny() -> tuple[dict, list[tuple[str, str, tuple[int, ...]]]]:
    """A 5-layer M3 in the MXFP8 checkpoint's layout: layers 0-1 dense, 2-4 sparse + MoE, layer 4 keeping its index
    value (index_v_proj / index_o_proj, minimax_m3.py:633-660); names as the header listing (model-facts.md)."""
    H, E, I, D, V, hd, nh, kv = 256, 8, 64, 512, 1024, 32, 8, 2
    text = dict(get_preset("minimax-m3-mxfp8").config["text_config"])
    freq = [0, 0, 1, 1, 1]
    sparse = dict(text["sparse_attention_config"])
    sparse.update(sparse_attention_freq=freq, sparse_disable_index_value=[0, 0, 1, 1, 0])
    sparse.update(sparse_num_index_heads=2, sparse_index_dim=32)
    text.update(num_hidden_layers=5, hidden_size=H, num_local_experts=E, num_experts_per_tok=2, vocab_size=V)
    text.update(intermediate_size=I, shared_intermediate_size=I, dense_intermediate_size=D, head_dim=hd)
    text.update(num_attention_heads=nh, num_key_value_heads=kv, moe_layer_freq=freq, sparse_attention_config=sparse)
    quant = {"quant_method": "mxfp8", "activation_scheme": "dynamic", "weight_block_size": [1, 32]}
    cfg = {
        "architectures": ["MiniMaxM3SparseForConditionalGeneration"],
        "model_type": "minimax_m3_vl",
        "text_config": text,
        "quantization_config": quant,
    }

    def fp8(name: str, out_f: int, in_f: int) -> list[tuple[str, str, tuple[int, ...]]]:
        return [(f"{name}.weight", "F8_E4M3", (out_f, in_f)), (f"{name}.weight_scale_inv", "U8", (out_f, in_f // 32))]

    lm = "language_model.model"
    t = [(f"{lm}.embed_tokens.weight", "BF16", (V, H)), ("language_model.lm_head.weight", "BF16", (V, H))]
    t += [(f"{lm}.norm.weight", "BF16", (H,))]
    t += [("vision_tower.vision_model.embeddings.patch_embedding.weight", "F32", (16, 3, 2, 14, 14))]
    t += [
        ("patch_merge_mlp.linear_1.weight", "BF16", (H, 4 * H)),
        ("multi_modal_projector.linear_1.bias", "BF16", (H,)),
    ]
    for i in range(5):
        p = f"{lm}.layers.{i}"
        a = f"{p}.self_attn"
        t += [(f"{p}.input_layernorm.weight", "BF16", (H,)), (f"{p}.post_attention_layernorm.weight", "BF16", (H,))]
        t += fp8(f"{a}.q_proj", nh * hd, H) + fp8(f"{a}.k_proj", kv * hd, H) + fp8(f"{a}.v_proj", kv * hd, H)
        t += fp8(f"{a}.o_proj", H, nh * hd) + [
            (f"{a}.q_norm.weight", "BF16", (hd,)),
            (f"{a}.k_norm.weight", "BF16", (hd,)),
        ]
        if freq[i]:
            t += fp8(f"{a}.index_q_proj", 2 * 32, H) + fp8(f"{a}.index_k_proj", 32, H)
            t += [(f"{a}.index_q_norm.weight", "BF16", (32,)), (f"{a}.index_k_norm.weight", "BF16", (32,))]
            if i == 4:
                t += fp8(f"{a}.index_v_proj", 32, H) + fp8(f"{a}.index_o_proj", H, 2 * 32)
            m = f"{p}.block_sparse_moe"
            t += [(f"{m}.gate.weight", "F32", (E, H)), (f"{m}.e_score_correction_bias", "F32", (E,))]
            for e in range(E):
                t += (
                    fp8(f"{m}.experts.{e}.w1", I, H)
                    + fp8(f"{m}.experts.{e}.w3", I, H)
                    + fp8(f"{m}.experts.{e}.w2", H, I)
                )
            s = f"{m}.shared_experts"
            t += fp8(f"{s}.gate_proj", I, H) + fp8(f"{s}.up_proj", I, H) + fp8(f"{s}.down_proj", H, I)
        else:
            t += fp8(f"{p}.mlp.gate_proj", D, H) + fp8(f"{p}.mlp.up_proj", D, H) + fp8(f"{p}.mlp.down_proj", H, D)
    return cfg, t


def test_a_m3_checkpoint_reads_as_the_runtime_names_its_tensors(tmp_path):
    """Header-only shards with the checkpoint's names inspect exactly: every tensor config.json implies is there with
    its shape and dtype, and the spec from the headers equals the spec from config.json alone (vision apart)."""
    from safetensors_fixture import nbytes, write_checkpoint

    from ktwizard.models.build import build_spec
    from ktwizard.models.config import parse_config
    from ktwizard.models.inspect import inspect_checkpoint

    cfg, t = _m3_tiny()
    write_checkpoint(tmp_path / "MiniMax-M3-tiny", cfg, t, shards=3)
    r = inspect_checkpoint(tmp_path / "MiniMax-M3-tiny")
    assert not any("differ" in n or "not in the headers" in n for n in r.notes), r.notes
    from_config = build_spec(parse_config(cfg), "x")
    got = {g: b for g, b in r.spec.bytes_by_group.items() if g != "vision"}
    assert got == from_config.bytes_by_group
    vision = [(d, s) for n, d, s in t if n.startswith(("vision_tower", "patch_merge_mlp", "multi_modal_projector"))]
    assert r.spec.bytes_by_group["vision"] == sum(nbytes(d, s) for d, s in vision)
    shared = [(d, s) for n, d, s in t if ".shared_experts." in n]
    assert r.spec.bytes_by_group["shared_experts"] == sum(nbytes(d, s) for d, s in shared)
    # the one layer keeping index values adds a value key to the index cache: (3 + 1) x 32 x bf16
    assert r.spec.kv_cell_bytes() == 2 * 2 * 32 * 5 * 2 + (3 + 1) * 32 * 2


def test_per_layer_sparse_and_moe_lists_must_cover_every_layer():
    from ktwizard.errors import BadInput
    from ktwizard.models.config import parse_config

    cfg, _ = _m3_tiny()
    cfg["text_config"]["moe_layer_freq"] = [0, 1]
    with pytest.raises(BadInput, match="moe_layer_freq"):
        parse_config(cfg)


def test_decode_reads_the_top_k_blocks_of_sparse_layers_and_every_index_key():
    """A decode step at 131,072 tokens on TP 1: the 3 dense layers read all their K/V (4 heads x 256 x 2 B per token),
    the 57 sparse layers 16 blocks x 128 tokens of it (minimax_sparse_backend.py:28-70, sparse_topk_blocks and
    sparse_block_size), and every sparse layer's index keys (128 x 2 B) over the whole context."""
    spec = get_preset("minimax-m3-mxfp8").spec()
    ctx, per_layer = 131072, 4 * 256 * 2
    want = per_layer * (3 * ctx + 57 * 16 * 128) + 57 * 128 * 2 * ctx
    assert spec.kv_read_bytes(ctx, 1) == want
    assert spec.kv_read_bytes(1000, 1) == 1000 * spec.kv_cell_bytes(1)  # short: every block is picked
    dense = get_preset("minimax-m2.5").spec()
    assert dense.kv_read_bytes(ctx, 1) == ctx * dense.kv_cell_bytes(1)


def test_the_model_list_marks_the_bf16_checkpoint():
    from ktwizard.planner.screening import obstacle

    host = load_host("xeon-2s-amx-4x4090-48gb")
    assert obstacle(get_preset("minimax-m3").spec(), host) == "CPU cannot run this method"
    assert obstacle(get_preset("minimax-m3-mxfp8").spec(), host) is None


def test_minimax_m2_7_bytes_equal_its_header_listing():
    """MiniMax-M2.7's headers (model_inspector report, stored index id 62693775865): router gates [256, 3072] F32 (the
    runtime's router is fp32 too, minimax_m2.py:365-370), 214.32 GiB in all, 228,703,644,928 elements counting the
    block-FP8 scales (12 x 24 / 24 x 12 per expert matrix, q/o 48 x 24 / 24 x 48, k/v 8 x 24)."""
    spec = get_preset("minimax-m2.7").spec()
    assert round(sum(spec.bytes_by_group.values()) / GiB, 2) == 214.32
    assert spec.bytes_by_group["router"] == 62 * (256 * 3072 * 4 + 256 * 4)
    scales = 62 * (256 * 3 * 288 + 1152 + 192 + 192 + 1152)
    assert spec.params_total + scales == 228_703_644_928


def test_planned_from_the_hub_it_is_the_checkpoint_the_local_folder_is(tmp_path, monkeypatch):
    """`--model hf:` reads M3's VL config.json and the shard headers over HTTP ranges (a recorded hub on 127.0.0.1):
    the same spec as the downloaded folder, sparse layers and index keys included."""
    import threading
    from http.server import ThreadingHTTPServer

    from safetensors_fixture import write_checkpoint
    from test_hub import Hub

    from ktwizard.inputs import inspect_source
    from ktwizard.models.inspect import inspect_checkpoint

    cfg, t = _m3_tiny()
    folder = tmp_path / "MiniMax-M3-tiny"
    write_checkpoint(folder, cfg, t, shards=3)
    Hub.repos["acme/MiniMax-M3-tiny"] = (folder, sorted(p.name for p in folder.iterdir()))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        remote = inspect_source("hf:acme/MiniMax-M3-tiny").spec
    finally:
        server.shutdown()
        del Hub.repos["acme/MiniMax-M3-tiny"]
    local = inspect_checkpoint(folder).spec
    assert remote == local and remote.attention.kind == "gqa_msa" and remote.attention.index_layers == 3


def test_cpu_experts_keep_fp32_scales_in_host_ram():
    """kt-kernel's MXFP8 kernels copy the e4m3 bytes and widen each ue8m0 scale to FP32 (BufferB: n*k + 4*n*k/32 B,
    kt-kernel/operators/amx/mxfp8-moe.hpp and its AVX2 twin): one expert takes 3 x 3072 x 6144 x 9/8 B in RAM, more
    than its 3 x 3072 x 6144 x 33/32 B on disk."""
    from ktwizard.planner.memory.items import cpu_bytes_per_expert

    spec = get_preset("minimax-m3-mxfp8").spec()
    n = 3 * 3072 * 6144
    assert cpu_bytes_per_expert(spec, "MXFP8") == n + 4 * n // 32 > spec.expert_bytes_native
