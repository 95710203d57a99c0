"""Presets and checkpoint inspection, checked with the test's own arithmetic and the reference's byte tables."""

from __future__ import annotations

import json
import math
import re

import pytest
import yaml
from conftest import ORACLES, run_cli
from safetensors_fixture import deepseek_tensors, nbytes, write_checkpoint, write_shard

from ktwizard.errors import BadInput
from ktwizard.models.inspect import inspect_checkpoint
from ktwizard.models.presets import all_presets, get_preset

FACTS = {
    n: yaml.safe_load(b)
    for n, b in re.findall(r"### (\S+)\n\n```yaml\n(.*?)```", (ORACLES / "model-facts.md").read_text(), re.S)
}
BLOCK = {
    "deepseek-r1": "deepseek-v3",
    "glm-4.6": "glm-4.6-4.7",
    "glm-4.7": "glm-4.6-4.7",
    "glm-5.1": "glm-5",
    "minimax-m2.5": "minimax-m2",
    "minimax-m2.7": "minimax-m2",
    "qwen3.6-35b-a3b": "qwen3.5-35b-a3b",  # the same config (slime qwen36-35B-A3B.sh sources the 3.5 script)
    "qwen3-coder-next": "qwen3-next-80b-a3b",  # the model card lists the same dimensions
}
CATALOG = json.loads((ORACLES / "sglang-kt-0.7.2-server-args.json").read_text())["flags"]


def choices(flag: str) -> list[str]:
    return next(f["choices"] for f in CATALOG if flag in f["flags"])


def own_v4_params(c: dict) -> dict:
    """DeepSeek-V4 by formula from its model class's parameters (sglang/srt/models/deepseek_v4.py:224-670, :979-1038,
    :1243-1295): MQA with grouped low-rank output, per-layer compressors (ratio 4 with two overlapping windows and an
    indexer), hyper-connections, every layer MoE; hash layers keep a token table (no parameters), the rest a bias."""
    H, L, V, heads, hd = (
        c["hidden_size"],
        c["num_hidden_layers"],
        c["vocab_size"],
        c["num_attention_heads"],
        c["head_dim"],
    )
    ql, ol, g, ih, ihd = c["q_lora_rank"], c["o_lora_rank"], c["o_groups"], c["index_n_heads"], c["index_head_dim"]
    E, Im, hc = c["n_routed_experts"], c["moe_intermediate_size"], c["hc_mult"]
    mix = (2 + hc) * hc
    total = 2 * V * H + H + hc + hc * hc * H + 1
    for i in range(L):
        p = 2 * H + 2 * (mix + mix * hc * H + 3)
        p += ql + hd + heads + H * ql + ql * heads * hd + hd * H + (heads * hd // g) * g * ol + g * ol * H
        r = c["compress_ratios"][i]
        if r:
            coff = 2 if r == 4 else 1
            p += 2 * coff * hd * H + hd + r * coff * hd
        if r == 4:
            p += ql * ih * ihd + ih * H + 2 * 2 * ihd * H + ihd + 4 * 2 * ihd
        p += E * H + (0 if i < c["num_hash_layers"] else E) + E * 3 * H * Im + c["n_shared_experts"] * 3 * H * Im
        total += p
    return {
        "total": total,
        "embed": V * H,
        "head": V * H,
        "per_expert": 3 * H * Im,
        "moe_layers": L,
        "E": E,
        "k": c["num_experts_per_tok"],
    }


def _glm5_next_layer_params(c: dict, i: int) -> int:
    """GLM-5-Next attention + hyper-connection parameters of layer i, written from the model classes' shapes:
    KDA (kimi_linear.py:205-327: q/k/v, b, f_a/f_b, g_a/g_b, three convs, A_log, dt_bias, o_norm, o_proj), DSA
    (deepseek_v2.py MLA without RoPE + nsa_indexer_kpool.py:111-148) and mHC (glm5_next.py:605-615)."""
    H, heads = c["hidden_size"], c["num_attention_heads"]
    lac = c["linear_attn_config"]
    n, d, ck = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    hc = c["hc_mult"]
    mhc = 2 * ((2 + hc) * hc * hc * H + (2 + hc) * hc + 3)
    if i not in lac["full_attn_layers"]:
        return 3 * n * d * H + n * H + 2 * d * H + 2 * n * d * d + 3 * n * d * ck + n + n * d + d + H * n * d + mhc
    ql, kl, nope, v = c["q_lora_rank"], c["kv_lora_rank"], c["qk_nope_head_dim"], c["v_head_dim"]
    ih, idim = c["index_n_heads"], c["index_head_dim"]
    mla = H * ql + ql + ql * heads * nope + H * kl + kl + kl * heads * (nope + v) + heads * v * H
    indexer = ql * ih * idim + H * idim + 2 * idim + H * ih + idim * H + c["index_kpool"] * idim
    return mla + indexer + mhc


def own_params(cfg: dict) -> dict:
    """Parameter counts from raw config facts by formula: {total, embed, head, routed_per_expert, moe_layers, k}."""
    c = cfg.get("text_config", cfg)
    arch = (c.get("architectures") or cfg["architectures"])[0]
    if arch == "DeepseekV4ForCausalLM":
        return own_v4_params(c)
    hybrid = arch in ("Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration")
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", heads)
    hd = c.get("head_dim", H // heads)
    E = c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts")
    k = c["num_experts_per_tok"]
    if "n_routed_experts" in c and arch.startswith(("Deepseek", "Glm")):
        moe = [i for i in range(L) if i >= c.get("first_k_dense_replace", 0)]
        Im, Id = c["moe_intermediate_size"], c["intermediate_size"]
        shared = c.get("n_shared_experts", 0) * Im
    elif "num_experts" in c:
        moe, Im, Id = list(range(L)), c["moe_intermediate_size"], 0
        shared = c.get("shared_expert_intermediate_size", 0)
    elif arch.startswith("MiniMaxM3"):  # minimax_m3.py:1359-1383: moe_layer_freq, dense_intermediate_size, shared
        moe = [i for i in range(L) if c["moe_layer_freq"][i]]
        Im, Id = c["intermediate_size"], c["dense_intermediate_size"]
        shared = c["n_shared_experts"] * Im
    else:
        moe, Im, Id, shared = list(range(L)), c["intermediate_size"], 0, 0
    total = V * H * (1 if c.get("tie_word_embeddings") else 2) + H
    per_expert = 3 * H * Im + (2 * Im + H if arch == "GptOssForCausalLM" else 0)
    for i in range(L):
        p = 2 * H
        if arch == "Glm5NextForConditionalGeneration":
            p += _glm5_next_layer_params(c, i)
        elif arch.startswith("Deepseek") or arch == "GlmMoeDsaForCausalLM":
            ql, kl, nope, rope, v = (
                c.get("q_lora_rank"),
                c["kv_lora_rank"],
                c["qk_nope_head_dim"],
                c["qk_rope_head_dim"],
                c["v_head_dim"],
            )
            p += (H * ql + ql + ql * heads * (nope + rope)) if ql else H * heads * (nope + rope)
            p += H * (kl + rope) + kl + kl * heads * (nope + v) + heads * v * H
            if "index_topk" in c:
                ih, idim = c["index_n_heads"], c["index_head_dim"]
                p += ql * ih * idim + H * idim + 2 * idim + H * ih
        elif hybrid and (i + 1) % c["full_attention_interval"] != 0:
            kh, kd, vh, vd, ck = (
                c["linear_num_key_heads"],
                c["linear_key_head_dim"],
                c["linear_num_value_heads"],
                c["linear_value_head_dim"],
                c["linear_conv_kernel_dim"],
            )
            p += H * (2 * kh * kd + 2 * vh * vd) + H * 2 * vh + (2 * kh * kd + vh * vd) * ck + 2 * vh + vd + vh * vd * H
        else:
            gate = 2 if hybrid else 1
            p += H * heads * hd * gate + 2 * H * kv * hd + heads * hd * H
            if arch in ("Glm4MoeForCausalLM", "GptOssForCausalLM"):
                p += heads * hd + 2 * kv * hd
            if arch == "GptOssForCausalLM":
                p += H + heads
            if arch == "Qwen3MoeForCausalLM" or hybrid or (arch == "Glm4MoeForCausalLM" and c.get("use_qk_norm", True)):
                p += 2 * hd
            if arch == "MiniMaxM2ForCausalLM":
                p += heads * hd + kv * hd
            if arch.startswith("MiniMaxM3"):  # per-head q/k norms; the index branch on sparse layers (:590-660)
                p += 2 * hd
                sc = c["sparse_attention_config"]
                ih, idim = sc["sparse_num_index_heads"], sc["sparse_index_dim"]
                if sc["sparse_attention_freq"][i]:
                    p += H * ih * idim + H * idim + 2 * idim
                    if not sc["sparse_disable_index_value"][i]:
                        p += H * idim + ih * idim * H
        if i in moe:
            p += E * H + E * per_expert + 3 * H * shared
            if (
                c.get("topk_method") == "noaux_tc"
                or arch
                in (
                    "Glm4MoeForCausalLM",
                    "MiniMaxM2ForCausalLM",
                    "GptOssForCausalLM",
                )
                or c.get("use_routing_bias")
            ):
                p += E
            if hybrid:
                p += H
        else:
            p += 3 * H * Id
        total += p
    return {
        "total": total,
        "embed": V * H,
        "head": 0 if c.get("tie_word_embeddings") else V * H,
        "per_expert": per_expert,
        "moe_layers": len(moe),
        "E": E,
        "k": k,
    }


def vendor_matches(computed: float, published: float) -> bool:
    """Within 1 %, or equal to the published figure at its stated precision (rounded or truncated): '37B', '3.3B'."""
    if abs(computed - published) <= 0.01 * published:
        return True
    text = f"{published / 1e9:g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = 10**decimals
    return (
        round(computed / 1e9 * scale) / scale == published / 1e9
        or math.floor(computed / 1e9 * scale) / scale == published / 1e9
    )


@pytest.mark.parametrize("pid", sorted(all_presets()))
def test_preset_params_agree_with_published(pid):
    p = get_preset(pid)
    own = own_params(p.config)
    spec = p.spec()
    assert spec.params_total == own["total"]  # the code's inventory equals the formula, to the parameter
    if "total_params" not in p.published:  # no vendor figure (GLM-5.3-Flash): the formula above is the check
        assert "no vendor" in p.published.get("source", "") and any("parameter count" in u for u in p.unconfirmed)
        return
    published = p.published["total_params"]
    # within 1 %, or the published figure at two significant digits (DeepSeek-V4-Pro's "1.6T")
    assert abs(own["total"] - published) <= 0.01 * published or float(f"{own['total']:.2g}") == published
    active = (
        own["total"]
        - own["E"] * own["per_expert"] * own["moe_layers"]
        + own["k"] * own["per_expert"] * own["moe_layers"]
    )
    assert spec.params_active == active
    counts = p.published["active_counts"]
    if counts in ("no_embedding", "no_embedding_no_head"):
        active -= own["embed"]
    if counts == "no_embedding_no_head":
        active -= own["head"]
    assert vendor_matches(active, p.published["active_params"]), (active, p.published)


@pytest.mark.parametrize("pid", sorted(all_presets()))
def test_preset_bytes_agree_with_reference_tables(pid):
    """Expert, non-expert and KV bytes equal the reference's independently derived byte counts."""
    spec = get_preset(pid).spec()
    if pid.endswith("-fp8"):  # an official block-FP8 checkpoint: e4m3 weights, a float32 scale per 128 x 128 block
        bf16 = get_preset(pid.removesuffix("-fp8")).spec()
        H, I = spec.hidden, spec.moe_intermediate
        expert = 3 * H * I + 3 * math.ceil(H / 128) * math.ceil(I / 128) * 4
        assert spec.expert_bytes_native == expert
        assert spec.routed_bytes == expert * spec.routed_experts * spec.moe_layer_count
        assert spec.kv_cell_bytes() == bf16.kv_cell_bytes() and spec.non_expert_bytes < bf16.non_expert_bytes
        return
    if pid.endswith(("-nvfp4", "-gptq-int4")):
        base = get_preset(pid.removesuffix("-nvfp4").removesuffix("-gptq-int4")).spec()
        H, I = spec.hidden, spec.moe_intermediate
        if pid.endswith("-nvfp4"):  # e2m1 nibbles, an e4m3 scale per 16, two f32 scalars per linear (loader.py:1312)
            expert = 3 * H * I // 2 + 3 * H * I // 16 + 3 * 8
        else:  # qweight int4, fp16 scales and int4 zeros per 128 inputs, an int32 g_idx per input
            expert = 3 * H * I // 2 + 3 * H * I // 128 * 2 + 3 * H * I // 128 // 2 + 4 * (2 * H + I)
        assert spec.expert_bytes_native == expert
        assert spec.kv_cell_bytes() == base.kv_cell_bytes() and spec.routed_bytes * 1.5 < base.routed_bytes
        return
    if pid.startswith("deepseek-v4"):  # tested against its own arithmetic in test_deepseek_v4.py
        c = get_preset(pid).config
        H, I = c["hidden_size"], c["moe_intermediate_size"]
        assert spec.expert_bytes_native == 3 * (I * H // 2 + I * H // 32)  # I8 nibbles + an e8m0 byte per 32
        assert spec.routed_bytes == spec.expert_bytes_native * c["n_routed_experts"] * c["num_hidden_layers"]
        return
    d = FACTS[BLOCK.get(pid, pid)]["derived"]
    assert spec.expert_bytes_native == d["expert_bytes_native"]
    assert spec.routed_bytes == d["routed_bytes_all_layers_native"]
    assert spec.kv_cell_bytes() == d["kv_cache_bytes_per_token_bf16"]
    # the reference counts GLM-4.5-Air with q/k norms its config turns off (use_qk_norm: false):
    # 2 x 128 x 2 B x 46 layers
    slack = 2 * 128 * 2 * 46 if pid == "glm-4.5-air" else 0
    # Qwen3-Next: the reference and ktwizard size the small gated-DeltaNet norms differently (4,608 B in 4.7 GB)
    slack += 4608 if pid in ("qwen3-next-80b-a3b", "qwen3-coder-next") else 0
    if spec.architecture == "Qwen3_5MoeForConditionalGeneration":
        # the references count dt_bias and A_log (linear_value_heads each per Gated-DeltaNet layer) as float32,
        # ktwizard as BF16: 2 B more per value over the linear layers (397B: 45 x 128 x 2 = 11,520 B)
        a = spec.attention
        slack += (spec.layers - a.full_attention_layers) * 2 * a.linear_value_heads * 2
    assert abs(spec.non_expert_bytes - d["non_expert_bytes_native"]) <= slack


@pytest.mark.parametrize("pid", sorted(all_presets()))
def test_preset_parsers_are_sglang_choices(pid):
    hints = get_preset(pid).sglang
    if hints.tool_call_parser:
        assert hints.tool_call_parser in choices("--tool-call-parser")
    if hints.reasoning_parser:
        assert hints.reasoning_parser in choices("--reasoning-parser")
    assert hints.attention_backend in choices("--attention-backend")


def own_groups(tensors, layers: int) -> dict[str, int]:
    g: dict[str, int] = {}
    for name, dtype, shape in tensors:
        m = re.match(r"model\.layers\.(\d+)\.", name)
        if m and int(m.group(1)) >= layers:
            key = "mtp"
        elif ".experts." in name:
            key = "routed_experts"
        elif ".shared_experts." in name:
            key = "shared_experts"
        elif ".mlp.gate." in name:
            key = "router"
        elif ".mlp." in name:
            key = "dense_mlp"
        elif "layernorm.weight" in name and "self_attn" not in name or name == "model.norm.weight":
            key = "norms"
        elif "self_attn" in name:
            key = "attention"
        else:
            key = "embeddings" if "embed" in name else "lm_head"
        g[key] = g.get(key, 0) + nbytes(dtype, shape)
    return g


def test_header_only_v2_lite_round_trips_and_equals_preset(tmp_path):
    cfg = get_preset("deepseek-v2-lite").config
    tensors = deepseek_tensors(cfg, fp8=False)
    write_checkpoint(tmp_path / "DeepSeek-V2-Lite", cfg, tensors, shards=3)
    result = inspect_checkpoint(tmp_path / "DeepSeek-V2-Lite")
    assert result.spec.exact and result.files == 3 and result.tensors == len(tensors)
    assert {k: v for k, v in result.spec.bytes_by_group.items()} == own_groups(tensors, cfg["num_hidden_layers"])
    assert result.spec == get_preset("deepseek-v2-lite").spec()
    assert any("headers without their full data" in n for n in result.notes)
    assert not any("differ" in n or "not in the headers" in n for n in result.notes)


def test_sparse_fp8_v3_with_mtp_is_exact(tmp_path):
    cfg = get_preset("deepseek-v3").config
    tensors = deepseek_tensors(cfg, fp8=True)
    write_checkpoint(tmp_path / "v3", cfg, tensors, shards=4, sparse=True)
    result = inspect_checkpoint(tmp_path / "v3")
    groups = own_groups(tensors, cfg["num_hidden_layers"])
    assert result.spec.bytes_by_group == {k: v for k, v in groups.items() if k != "mtp"}
    assert result.spec.mtp_bytes == groups["mtp"] > 0
    assert result.spec.non_expert_bytes == sum(v for k, v in groups.items() if k not in ("routed_experts", "mtp"))
    assert result.notes == ()  # sparse files hold their full data region on paper
    assert result.spec == get_preset("deepseek-v3").spec()
    per_layer = {lb.layer: lb.routed for lb in result.spec.per_layer}
    assert per_layer[0] == 0 and per_layer[3] == groups["routed_experts"] // 58


def test_headers_that_disagree_with_config_are_reported(tmp_path):
    cfg = dict(get_preset("deepseek-v2-lite").config)
    tensors = deepseek_tensors(cfg, fp8=False)
    cfg["moe_intermediate_size"] = 1536  # the config lies about the expert width
    write_checkpoint(tmp_path / "m", cfg, tensors, shards=1)
    notes = " ".join(inspect_checkpoint(tmp_path / "m").notes)
    assert "differ from config.json" in notes and "experts.0.gate_proj" in notes


def test_bad_checkpoints_say_which_file(tmp_path):
    with pytest.raises(BadInput, match="config.json: missing"):
        (tmp_path / "a").mkdir()
        inspect_checkpoint(tmp_path / "a")
    (tmp_path / "a/config.json").write_text("{bad")
    with pytest.raises(BadInput, match="not valid JSON"):
        inspect_checkpoint(tmp_path / "a")
    cfg = get_preset("deepseek-v2-lite").config
    (tmp_path / "a/config.json").write_text(json.dumps(cfg))
    with pytest.raises(BadInput, match="no \\*.safetensors"):
        inspect_checkpoint(tmp_path / "a")
    (tmp_path / "a/model.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(BadInput, match="truncated"):
        inspect_checkpoint(tmp_path / "a")
    (tmp_path / "a/model.safetensors").write_bytes((10**9).to_bytes(8, "little") + b"{}")
    with pytest.raises(BadInput, match=r"model\.safetensors: header length .* past the end"):
        inspect_checkpoint(tmp_path / "a")
    (tmp_path / "a/config.json").write_text(json.dumps({**cfg, "architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(BadInput, match="unknown architecture 'LlamaForCausalLM'"):
        inspect_checkpoint(tmp_path / "a")
    (tmp_path / "a/config.json").write_text(json.dumps(cfg))
    write_shard(
        tmp_path / "a/model.safetensors",
        [
            ("model.layers.1.mlp.experts.0.gate_proj.weight", "BF16", (1408, 2048)),
            ("model.layers.1.mlp.experts.1.gate_proj.weight", "F8_E4M3", (1408, 2048)),
        ],
    )
    with pytest.raises(BadInput, match="mixed formats"):
        inspect_checkpoint(tmp_path / "a")


def test_dense_model_is_refused():
    from ktwizard.models.config import parse_config

    cfg = {**get_preset("qwen3-30b-a3b").config, "num_experts": 0}
    with pytest.raises(BadInput, match="no MoE layers"):
        parse_config(cfg)


def test_presets_command():
    out = run_cli("presets", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    ids = {r["id"] for r in rows}
    for needed in (
        "kimi-k2-instruct",
        "kimi-k2-thinking",
        "kimi-k2.5",
        "kimi-k2.6",
        "kimi-k2.7-code",
        "deepseek-v2",
        "deepseek-v2-lite",
        "deepseek-v3",
        "deepseek-r1",
        "deepseek-v3.1",
        "deepseek-v3.2",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "qwen3-coder-480b-a35b",
        "qwen3-next-80b-a3b",
        "glm-4.5",
        "glm-4.5-air",
        "glm-4.6",
        "glm-4.7",
        "minimax-m2",
        "gpt-oss-120b",
        "mixtral-8x7b",
    ):
        assert needed in ids
    assert run_cli("presets").returncode == 0


def test_every_family_in_the_table_has_a_preset_and_parses_it():
    """Adding a family is one table entry, a preset and a test: parse_config and the inventory read the table."""
    from ktwizard.families.registry import families
    from ktwizard.models.config import parse_config
    from ktwizard.models.presets import all_presets

    every = families()

    by_family: dict[str, list[str]] = {}
    for p in all_presets().values():
        by_family.setdefault(parse_config(p.config, p.id).family, []).append(p.id)
    assert sorted(by_family) == sorted(f.name for f in every)
    archs = [a for f in every for a in f.architectures]
    assert len(archs) == len(set(archs))  # one family per architecture
