"""Write header-only (or sparse) safetensors checkpoints for tests, with the test's own tensor lists."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

SIZES = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4, "U8": 1, "F8_E8M0": 1, "I8": 1, "I64": 8}


def nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    n = SIZES[dtype]
    for d in shape:
        n *= d
    return n


def write_shard(path: Path, tensors: list[tuple[str, str, tuple[int, ...]]], sparse: bool = False) -> None:
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        size = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        if sparse:
            fh.truncate(8 + len(raw) + offset)  # a hole: real size on paper, nothing on disk


def write_checkpoint(
    folder: Path, config: dict, tensors: list[tuple[str, str, tuple[int, ...]]], shards: int = 2, sparse: bool = False
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    per = -(-len(tensors) // shards)
    weight_map = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = tensors[i * per : (i + 1) * per]
        write_shard(folder / name, part, sparse=sparse)
        weight_map.update({t[0]: name for t in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def deepseek_tensors(
    cfg: dict, fp8: bool, nvfp4: Callable[[str], bool] | None = None
) -> list[tuple[str, str, tuple[int, ...]]]:
    """The test's own tensor list for a DeepSeek-V2/V3 checkpoint (with MTP layers when the config has them).
    `nvfp4`: which linears a ModelOpt NVFP4 export packs (by module name); the others stay BF16."""
    H, V, E = cfg["hidden_size"], cfg["vocab_size"], cfg["n_routed_experts"]
    heads, kl, nope, rope, v, ql = (
        cfg["num_attention_heads"],
        cfg["kv_lora_rank"],
        cfg["qk_nope_head_dim"],
        cfg["qk_rope_head_dim"],
        cfg["v_head_dim"],
        cfg.get("q_lora_rank"),
    )
    Im, Id = cfg["moe_intermediate_size"], cfg["intermediate_size"]

    def lin(name, o, i):
        if nvfp4 is not None and nvfp4(name):  # ModelOpt: U8 pairs, an e4m3 scale per 16, two fp32 scalars
            return [
                (f"{name}.weight", "U8", (o, i // 2)),
                (f"{name}.weight_scale", "F8_E4M3", (o, i // 16)),
                (f"{name}.weight_scale_2", "F32", ()),
                (f"{name}.input_scale", "F32", ()),
            ]
        if not fp8:
            return [(f"{name}.weight", "BF16", (o, i))]
        return [
            (f"{name}.weight", "F8_E4M3", (o, i)),
            (f"{name}.weight_scale_inv", "F32", (-(-o // 128), -(-i // 128))),
        ]

    out = [
        ("model.embed_tokens.weight", "BF16", (V, H)),
        ("model.norm.weight", "BF16", (H,)),
        ("lm_head.weight", "BF16", (V, H)),
    ]
    for i in range(cfg["num_hidden_layers"] + cfg.get("num_nextn_predict_layers", 0)):
        p = f"model.layers.{i}"
        out += [(f"{p}.input_layernorm.weight", "BF16", (H,)), (f"{p}.post_attention_layernorm.weight", "BF16", (H,))]
        if ql:
            out += (
                lin(f"{p}.self_attn.q_a_proj", ql, H)
                + [(f"{p}.self_attn.q_a_layernorm.weight", "BF16", (ql,))]
                + lin(f"{p}.self_attn.q_b_proj", heads * (nope + rope), ql)
            )
        else:
            out += lin(f"{p}.self_attn.q_proj", heads * (nope + rope), H)
        out += lin(f"{p}.self_attn.kv_a_proj_with_mqa", kl + rope, H) + [
            (f"{p}.self_attn.kv_a_layernorm.weight", "BF16", (kl,))
        ]
        out += lin(f"{p}.self_attn.kv_b_proj", heads * (nope + v), kl) + lin(f"{p}.self_attn.o_proj", H, heads * v)
        if i < cfg["first_k_dense_replace"]:
            out += lin(f"{p}.mlp.gate_proj", Id, H) + lin(f"{p}.mlp.up_proj", Id, H) + lin(f"{p}.mlp.down_proj", H, Id)
            continue
        out.append((f"{p}.mlp.gate.weight", "BF16", (E, H)))
        if cfg.get("topk_method") == "noaux_tc":
            out.append((f"{p}.mlp.gate.e_score_correction_bias", "F32", (E,)))
        for j in range(E):
            out += (
                lin(f"{p}.mlp.experts.{j}.gate_proj", Im, H)
                + lin(f"{p}.mlp.experts.{j}.up_proj", Im, H)
                + lin(f"{p}.mlp.experts.{j}.down_proj", H, Im)
            )
        S = cfg["n_shared_experts"] * Im
        out += (
            lin(f"{p}.mlp.shared_experts.gate_proj", S, H)
            + lin(f"{p}.mlp.shared_experts.up_proj", S, H)
            + lin(f"{p}.mlp.shared_experts.down_proj", H, S)
        )
    return out
