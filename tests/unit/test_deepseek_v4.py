"""DeepSeek-V4 (issue 43): facts, pool and rules against independent arithmetic.

Every expected number below is written from the pinned wheel's code or a third-party record of the checkpoint, not
read back from ktwizard:
- tensor shapes: sglang/srt/models/deepseek_v4.py:224-670 (Compressor, C4Indexer, MQALayer), :979-1038 (decoder
  layer, hyper-connections), :1243-1295 (model), names as the checkpoint keeps them (:1609-1679 renames them);
- the checkpoint's total: vmelnic/quantum-llm compiler/expert_pack/deepseek_v4.py, a strict byte contract of
  deepseek-ai/DeepSeek-V4-Flash (69,187 tensors, 159,609,485,896 B with the MTP layer);
- the pool: sglang/srt/model_executor/memory_profiler.py:63-98 (DSv4MemoryCalculator.get_bytes_per_full_token) and
  mem_cache/deepseekv4_memory_pool.py:24-30, :103-116 (ring sizes, 584 B per cached token);
- flags: server_args.py:1802-1849; method row: sglang/srt/layers/moe/kt_ep_wrapper.py:399-405, :5284-5310.
"""

from __future__ import annotations

import math

import pytest
import yaml
from safetensors_fixture import nbytes, write_checkpoint

from ktwizard.errors import BadInput
from ktwizard.host.spec import load_host
from ktwizard.models.build import build_spec
from ktwizard.models.config import parse_config
from ktwizard.models.inspect import inspect_checkpoint
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

FLASH_CONTRACT_BYTES = 159_609_485_896  # quantum-llm's contract of the real checkpoint, MTP layer included


def fp8(rows: int, cols: int) -> int:
    """e4m3 weight + one ue8m0 byte per 128 x 128 block."""
    return rows * cols + math.ceil(rows / 128) * math.ceil(cols / 128)


def fp4(rows: int, cols: int) -> int:
    """e2m1 nibbles + one ue8m0 byte per 32."""
    return rows * cols // 2 + rows * cols // 32


def test_flash_main_model_plus_its_mtp_layer_is_the_checkpoint():
    """The preset's bytes (MTP excluded) plus the MTP layer written out here equal the checkpoint's byte contract."""
    H, I, E, hd, ql = 4096, 2048, 256, 512, 1024
    attention = 1024 * 2 + 512 * 2 + 64 * 4 + fp8(ql, H) + fp8(64 * hd, ql) + fp8(hd, H)
    attention += fp8(8 * 1024, 64 * hd // 8) + fp8(H, 8 * 1024)
    hc = 2 * (24 * 4 + 24 * 4 * H * 4 + 3 * 4)  # hc_attn_/hc_ffn_ base, fn, scale (fp32)
    mtp = 5 * H * 2 + (4 + 4 * 4 * H + 1) * 4 + hc + 2 * fp8(H, H) + attention
    mtp += E * H * 2 + E * 4 + E * 3 * fp4(I, H) + 3 * fp8(I, H)
    spec = get_preset("deepseek-v4-flash").spec()
    assert sum(spec.bytes_by_group.values()) + mtp == FLASH_CONTRACT_BYTES
    assert spec.mtp_bytes == mtp  # the preset counts its MTP layer apart (download size), as a checkpoint's headers do
    assert spec.expert_bytes_native == 13_369_344  # the contract's source_bytes_per_expert
    assert spec.routed_bytes == 43 * 256 * 13_369_344
    assert spec.moe_layer_count == 43 and spec.experts_per_token == 6 and spec.shared_experts == 1


def pool_bytes_per_token(layers: int, c4: int, c128: int, r: float) -> float:
    """memory_profiler.py:63-98 with FP8 (SM89+): kv 448 + 64 x 2 + 8 = 584, indexer 128 + 4 = 132, states fp32."""
    kv, index = 448 + 64 * 2 + 8, 128 + 4
    c4_state, c128_state, c4_index_state = 2 * 2 * 512 * 4, 2 * 512 * 4, 2 * 2 * 128 * 4
    return (
        r * kv * layers
        + kv * c4 / 4
        + kv * c128 / 128
        + index * c4 / 4
        + r * (8 / 128) * c4_state * c4
        + r * (128 / 128) * c128_state * c128
        + r * (8 / 128) * c4_index_state * c4
    )


@pytest.mark.parametrize(
    ("pid", "layers", "c4", "c128"),
    [
        ("deepseek-v4-flash", 44, 21, 20),  # compress_ratios: 0, 0, (4, 128) x 20, 4, 0 (the last entry is MTP's)
        ("deepseek-v4-flash-0731", 46, 21, 20),  # two more entries (DSpark) the calculator counts
        ("deepseek-v4-pro", 62, 30, 31),  # 128, 128, (4, 128) x 29, 4, 0
    ],
)
def test_pool_bytes_per_token_are_the_runtimes_calculator(pid, layers, c4, c128):
    spec = get_preset(pid).spec()
    assert spec.kv_cell_bytes() == math.ceil(pool_bytes_per_token(layers, c4, c128, 0.1))  # the runtime's default


def test_flash_plan_renders_what_the_runtime_forces_and_budgets_that_pool():
    p = get_preset("deepseek-v4-flash")
    r = plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), Goals(context=65536, concurrency=2), p.sglang)
    flags = {f.name: f.value for f in r.flags}
    assert flags["--attention-backend"] == "compressed" and flags["--page-size"] == 256
    assert flags["--kv-cache-dtype"] == "fp8_e4m3" and flags["--kt-method"] == "MXFP4"
    env = {e.name: e.value for e in r.env}
    assert env["SGLANG_DSV4_MODE"] == "2604" and env["SGLANG_DSV4_2604_SUBMODE"] == "2604B"
    cap = 131072  # 65536 x 2, already a multiple of the 256-token page
    assert flags["--max-total-tokens"] == cap
    chunk = flags["--chunked-prefill-size"]
    # two chunks in flight x 1.05 (server_args.py:1845-1848) and one 256-token window page per request
    ratio = max(0.1, math.ceil((2 * chunk * 1.05 + 2 * 256) * 100 / cap) / 100)
    assert flags["--swa-full-tokens-ratio"] == ratio
    pool = next(i for i in r.gpu_budgets[0].items if i.name == "KV pool")
    # the calculator's average per token sizes the pools; the class allocates whole padded pages on top of it
    # (0.04-0.4 %, measured on an H200 and held exactly in test_pool_bytes_device.py)
    average = cap * pool_bytes_per_token(44, 21, 20, ratio)
    assert average < pool.bytes <= average * 1.005


def test_converted_methods_are_refused_naming_mxfp4():
    """The wrapper zeroes the SwiGLU clamp for AMXINT4 (kt_ep_wrapper.py:399-405): silently wrong, so refused."""
    p = get_preset("deepseek-v4-flash")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=8192, method="AMXINT4"), p.sglang)
    assert not r.fits and "kt_ep_wrapper.py:399-405" in r.overflows[0] and "--method MXFP4" in r.overflows[0]


def hand_written_host(tmp_path, name: str, memory_gib: int, cc: str, count: int):
    host = tmp_path / f"{count}x-{name.split()[-1]}.yaml"
    host.write_text(
        yaml.safe_dump(
            {
                "gpus": [{"name": name, "memory_gib": memory_gib, "compute_capability": cc, "count": count}],
                "cpu": {"model": "AMD EPYC 9355", "sockets": 2, "cores_per_socket": 32, "threads_per_core": 2,
                        "flags": ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512vbmi"]},
                "numa_nodes": 2,
                "memory_gib": 512,
            }
        )
    )  # fmt: skip
    return load_host(str(host))


def test_ampere_is_refused_naming_what_runs(tmp_path):
    p = get_preset("deepseek-v4-flash")
    r = plan(hand_written_host(tmp_path, "NVIDIA RTX A6000", 48, "8.6", 4), p.spec(), Goals(context=8192), p.sglang)
    assert not r.fits and "SM86" in r.overflows[0] and "SM89" in r.overflows[0]


def test_decode_reads_the_window_the_top_k_and_the_compressed_entries():
    """At 65,536 tokens: every layer its 128-token window; a 4x layer its 16,384 indexer keys (132 B) and the top-512
    entries; a 128x layer its 512 compressed entries (584 B each)."""
    spec = get_preset("deepseek-v4-flash").spec()
    ctx, kv = 65536, 584
    c4 = 21 * (ctx / 4 * 132 + 512 * kv)  # layers 2, 4, ..., 42 of the 43 main layers
    c128 = 20 * (ctx / 128 * kv)
    assert spec.kv_read_bytes(ctx) == pytest.approx(43 * 128 * kv + c4 + c128)
    assert spec.kv_read_bytes(ctx) < ctx * spec.kv_cell_bytes() / 4  # far less than reading every token's cell


def test_nvidia_nvfp4_release_is_refused_in_one_line():
    cfg = dict(get_preset("deepseek-v4-flash").config)
    del cfg["quantization_config"]  # NVIDIA keeps it in hf_quant_config.json
    with pytest.raises(BadInput, match="loader.py:1316-1335"):
        parse_config(cfg, "config.json")


# --- a truncated checkpoint, header only, with the test's own tensor list ----------------------------------------

SMALL = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "model_type": "deepseek_v4",
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "head_dim": 192,
    "qk_rope_head_dim": 64,
    "q_lora_rank": 128,
    "o_lora_rank": 64,
    "o_groups": 2,
    "index_n_heads": 4,
    "index_head_dim": 64,
    "index_topk": 16,
    "sliding_window": 128,
    "compress_ratios": [0, 4, 128, 4, 0],
    "hc_mult": 4,
    "n_routed_experts": 8,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 128,
    "num_hash_layers": 1,
    "num_nextn_predict_layers": 1,
    "vocab_size": 512,
    "tie_word_embeddings": False,
    "max_position_embeddings": 8192,
    "expert_dtype": "fp4",
    "swiglu_limit": 10.0,
    "topk_method": "noaux_tc",
    "quantization_config": {
        "quant_method": "fp8",
        "fmt": "e4m3",
        "scale_fmt": "ue8m0",
        "weight_block_size": [128, 128],
    },
}


def v4_tensors(c: dict) -> list[tuple[str, str, tuple[int, ...]]]:
    H, V, E, I, k = c["hidden_size"], c["vocab_size"], c["n_routed_experts"], c["moe_intermediate_size"], 2
    heads, hd, ql, ol, g = c["num_attention_heads"], c["head_dim"], c["q_lora_rank"], c["o_lora_rank"], c["o_groups"]
    ih, ihd, hc = c["index_n_heads"], c["index_head_dim"], c["hc_mult"]
    out: list[tuple[str, str, tuple[int, ...]]] = []

    def lin8(name: str, rows: int, cols: int) -> None:
        out.append((f"{name}.weight", "F8_E4M3", (rows, cols)))
        out.append((f"{name}.scale", "F8_E8M0", (-(-rows // 128), -(-cols // 128))))

    def block(p: str, ratio: int, hashed: bool) -> None:
        for n in ("attn_norm", "ffn_norm"):
            out.append((f"{p}.{n}.weight", "BF16", (H,)))
        for part in ("attn", "ffn"):
            out.extend([(f"{p}.hc_{part}_base", "F32", (24,)), (f"{p}.hc_{part}_fn", "F32", (24, hc * H))])
            out.append((f"{p}.hc_{part}_scale", "F32", (3,)))
        a = f"{p}.attn"
        out.extend([(f"{a}.q_norm.weight", "BF16", (ql,)), (f"{a}.kv_norm.weight", "BF16", (hd,))])
        out.append((f"{a}.attn_sink", "F32", (heads,)))
        lin8(f"{a}.wq_a", ql, H)
        lin8(f"{a}.wq_b", heads * hd, ql)
        lin8(f"{a}.wkv", hd, H)
        lin8(f"{a}.wo_a", g * ol, heads * hd // g)
        lin8(f"{a}.wo_b", H, g * ol)
        if ratio:
            w = (2 if ratio == 4 else 1) * hd
            out.extend(
                [(f"{a}.compressor.wkv.weight", "BF16", (w, H)), (f"{a}.compressor.wgate.weight", "BF16", (w, H))]
            )
            out.extend([(f"{a}.compressor.norm.weight", "BF16", (hd,)), (f"{a}.compressor.ape", "F32", (ratio, w))])
        if ratio == 4:
            lin8(f"{a}.indexer.wq_b", ih * ihd, ql)
            out.append((f"{a}.indexer.weights_proj.weight", "BF16", (ih, H)))
            ic = f"{a}.indexer.compressor"
            out.extend([(f"{ic}.wkv.weight", "BF16", (2 * ihd, H)), (f"{ic}.wgate.weight", "BF16", (2 * ihd, H))])
            out.extend([(f"{ic}.norm.weight", "BF16", (ihd,)), (f"{ic}.ape", "F32", (4, 2 * ihd))])
        f = f"{p}.ffn"
        out.append((f"{f}.gate.weight", "BF16", (E, H)))
        out.append((f"{f}.gate.tid2eid", "I64", (V, k)) if hashed else (f"{f}.gate.bias", "F32", (E,)))
        for e in range(E):
            for w, (rows, cols) in (("w1", (I, H)), ("w3", (I, H)), ("w2", (H, I))):
                out.append((f"{f}.experts.{e}.{w}.weight", "I8", (rows, cols // 2)))
                out.append((f"{f}.experts.{e}.{w}.scale", "F8_E8M0", (rows, cols // 32)))
        for w, (rows, cols) in (("w1", (I, H)), ("w3", (I, H)), ("w2", (H, I))):
            lin8(f"{f}.shared_experts.{w}", rows, cols)

    out += [("embed.weight", "BF16", (V, H)), ("norm.weight", "BF16", (H,)), ("head.weight", "BF16", (V, H))]
    out += [("hc_head_base", "F32", (hc,)), ("hc_head_fn", "F32", (hc, hc * H)), ("hc_head_scale", "F32", (1,))]
    for i in range(c["num_hidden_layers"]):
        block(f"layers.{i}", c["compress_ratios"][i], i < c["num_hash_layers"])
    block("mtp.0", 0, False)
    for n in ("enorm", "hnorm", "norm"):
        out.append((f"mtp.0.{n}.weight", "BF16", (H,)))
    lin8("mtp.0.e_proj", H, H)
    lin8("mtp.0.h_proj", H, H)
    out += [("mtp.0.hc_head_base", "F32", (hc,)), ("mtp.0.hc_head_fn", "F32", (hc, hc * H))]
    out.append(("mtp.0.hc_head_scale", "F32", (1,)))
    return out


def test_header_only_checkpoint_equals_the_spec_its_config_gives(tmp_path):
    """A checkpoint folder read from its headers and the same config priced by ktwizard's inventory agree exactly
    (the way a preset equals its checkpoint); the MTP layer is apart; groups match the test's own filing."""
    tensors = v4_tensors(SMALL)
    write_checkpoint(tmp_path / "v4", SMALL, tensors, shards=3)
    result = inspect_checkpoint(tmp_path / "v4")
    assert result.spec.exact and result.tensors == len(tensors)
    assert not any("differ" in n or "not in the headers" in n for n in result.notes), result.notes
    assert result.spec == build_spec(parse_config(SMALL), "small")
    main = [(n, d, s) for n, d, s in tensors if not n.startswith("mtp.")]
    assert sum(result.spec.bytes_by_group.values()) == sum(nbytes(d, s) for _, d, s in main)
    assert result.spec.mtp_bytes == sum(nbytes(d, s) for n, d, s in tensors if n.startswith("mtp."))
    experts = sum(nbytes(d, s) for n, d, s in main if ".ffn.experts." in n)
    assert result.spec.routed_bytes == experts
    hc = sum(nbytes(d, s) for n, d, s in main if ".hc_" in n or n.startswith("hc_head"))
    assert result.spec.bytes_by_group["other"] == hc  # hyper-connections: plain fp32 parameters
    assert result.spec.bytes_by_group["embeddings"] == result.spec.bytes_by_group["lm_head"] == 512 * 256 * 2


@pytest.mark.parametrize("pid", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_plans_name_a_fit_or_what_does_not(pid):
    p = get_preset(pid)
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(), p.sglang, recipe_for(pid))
    assert r.fits and r.method == "MXFP4" and 0 < r.gpu_experts <= p.spec().routed_experts


def test_host_ram_holds_every_expert_with_bf16_scales():
    """MXFP4SafeTensorLoader widens each ue8m0 scale to bf16 (kt_kernel/utils/loader.py:1222-1252) and hands the
    nibbles as stored (amx.py:827-830): per expert 3 x (I x H / 2 + 2 x I x H / 32) bytes, all 43 x 256 of them."""
    p = get_preset("deepseek-v4-flash")
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), Goals(context=8192), p.sglang)
    whole = next(b for b in r.host_budgets if b.node < 0)
    per_expert = 3 * (2048 * 4096 // 2 + 2 * 2048 * 4096 // 32)
    assert whole.item("CPU experts") == 43 * 256 * per_expert
    assert whole.item("loader peak (one layer)") == 256 * per_expert


def test_gpu_experts_keep_their_loaded_form_beside_the_converted_copy_under_layerwise_prefill(tmp_path):
    """DeepSeekMxfp4MoEMethod creates int8 nibbles + fp32 scales per 32 (mxfp4_deepseek.py:204-262); with
    --kt-gpu-prefill-token-threshold > 0 the loaded tensors stay beside the triton_kernels / Marlin copy
    (:318-400). 8 x RTX 5090 at KT's tested V4-Flash setting (144 GPU experts, TP 8)."""
    p = get_preset("deepseek-v4-flash")
    goals = Goals(context=8192, concurrency=4, chunked_prefill=2048, gpu_experts=144)
    host = hand_written_host(tmp_path, "NVIDIA GeForce RTX 5090", 32, "12.0", 8)
    r = plan(host, p.spec(), goals, p.sglang)
    assert "--kt-gpu-prefill-token-threshold" in {f.name for f in r.flags}  # layerwise prefill on
    loaded = 3 * (2048 * 4096 // 2 + 2048 * 4096 // 32 * 4)
    converted = 3 * (2048 * 4096 // 2 + 2048 * 4096 // 32)
    item = next(i for i in r.gpu_budgets[0].items if i.name == "GPU experts")
    assert item.bytes == math.ceil(144 * 43 * (loaded + converted) / 8)
    # KT's tutorial runs exactly this with --mem-fraction-static 0.80 (doc/en/DeepSeek-V4-Flash.md), where the
    # experts at their checkpoint size alone would have asked for half; on top, the runtime takes its MXFP4 layerwise
    # reservation, 2 x (raw + Marlin-prepared layer) / 8 = 1.73 GiB a rank, off the profile before the pool
    # (kt_ep_wrapper.py:3450-3494, memory_profiler.py:160-176): about 0.055 of a 31.4 GiB card more
    reservation = 2 * 256 * (loaded + converted) / 8
    assert 0.78 + reservation / (31.4 * 2**30) <= r.mem_fraction_static <= 0.85 + reservation / (31.4 * 2**30)


def test_the_hub_reads_a_v4_checkpoint_as_its_local_folder(tmp_path, monkeypatch):
    """--model hf: on the recorded hub of tests/unit/test_hub.py: headers only, the spec equals the local folder's."""
    import threading
    from http.server import ThreadingHTTPServer

    from test_hub import SHA, Hub

    from ktwizard.inputs import inspect_source

    write_checkpoint(tmp_path / "v4", SMALL, v4_tensors(SMALL), shards=3, sparse=True)
    files = [
        "config.json",
        "model.safetensors.index.json",
        *sorted(p.name for p in (tmp_path / "v4").glob("*.safetensors")),
    ]
    monkeypatch.setattr(Hub, "repos", {"acme/DeepSeek-V4-Small": (tmp_path / "v4", files)})
    monkeypatch.setattr(Hub, "gated", set())
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        remote = inspect_source("hf:acme/DeepSeek-V4-Small").spec
    finally:
        server.shutdown()
    local = inspect_checkpoint(tmp_path / "v4").spec
    assert remote == local and remote.exact and remote.revision == SHA
    assert remote.mtp_bytes == local.mtp_bytes > 0


def test_the_model_list_badges_name_the_gpu_gate_and_the_fit(tmp_path):
    from ktwizard.planner.screening import obstacle

    spec = get_preset("deepseek-v4-flash").spec()
    assert obstacle(spec, hand_written_host(tmp_path, "NVIDIA RTX A6000", 48, "8.6", 4)) == (
        "GPU architecture lacks the kernel"
    )
    assert obstacle(spec, hand_written_host(tmp_path, "NVIDIA L40S", 48, "8.9", 4)) is None


def test_a_short_context_still_leaves_the_window_pool_two_chunks():
    """server_args.py:1841-1849: below two chunks in flight x 1.05 the window pool hangs long prompts (NO_TOKEN),
    and the share stops at 0.9; so the full-token cap rises until 0.9 of it holds them."""
    p = get_preset("deepseek-v4-flash")
    goals = Goals(context=8192, chunked_prefill=4096)
    r = plan(load_host("xeon-2s-amx-4x4090-48gb"), p.spec(), goals, p.sglang)
    flags = {f.name: f.value for f in r.flags}
    cap, ratio = flags["--max-total-tokens"], flags["--swa-full-tokens-ratio"]
    assert cap % 256 == 0 and cap >= 8192 and ratio <= 0.9
    assert cap * ratio >= 2 * 4096 * 1.05 + 256
