"""Independent byte and parameter counts for Qwen3.5 / Qwen3.6 MoE checkpoints, written from the model classes'
shapes in the pinned wheel, not from ktwizard (no ktwizard import). Its output is the `derived` block of the
Qwen3.5 sizes in tests/fixtures/oracles/model-facts.md.

    python benchmarks/qwen3_5_reference.py            # prints the derived blocks
    python benchmarks/qwen3_5_reference.py --check    # reproduces the research note's Qwen3.5-397B block first

Shapes (sglang/srt/models/qwen3_5.py and qwen3_vl.py of sglang-kt 0.7.2):
- full attention (every 4th layer): q_proj H -> 2*heads*head_dim (query + output gate), k/v_proj H -> kv*head_dim,
  o_proj, q_norm/k_norm (head_dim each);
- Gated DeltaNet: in_proj_qkv H -> 2*kh*kd + vh*vd, in_proj_z H -> vh*vd, in_proj_b / in_proj_a H -> vh, conv1d
  (2*kh*kd + vh*vd) x kernel, dt_bias and A_log (vh, float32 in the checkpoint), norm (vd), out_proj vh*vd -> H;
- MoE: router E x H, experts 3*H*I each, shared expert 3*H*Is and its 1 x H gate; two RMSNorms per layer;
- embed and lm_head V x H (untied), final norm H;
- MTP (mtp_num_hidden_layers 1): fc 2H -> H, one full-attention MoE layer, three norms + the layer's two;
- ViT (qwen3_vl.py Qwen3VLMoeVisionModel): Conv3d patch embed 3*2*16*16 -> 1152 (+bias), pos_embed 2304 x 1152,
  27 blocks (2 LayerNorms, qkv + proj, fc1/fc2, all with bias), merger LayerNorm(1152) + 4608 -> 4608 -> out
  (with bias); deepstack_visual_indexes is [] in these configs, so no extra mergers.
"""

from __future__ import annotations

import json
import sys


def vit_params(out_hidden: int, h: int = 1152, inter: int = 4304, depth: int = 27, pos: int = 2304) -> int:
    patch = 3 * 2 * 16 * 16 * h + h
    block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    merged = 4 * h
    merger = 2 * h + merged * merged + merged + merged * out_hidden + out_hidden
    return patch + pos * h + depth * block + merger


def qwen3_5(
    layers, hidden, heads, kv, head_dim, kh, kd, vh, vd, kernel, experts, inter, shared, vocab, topk, vit_out
) -> dict:
    full = sum(1 for i in range(layers) if (i + 1) % 4 == 0)
    linear = layers - full
    attn = hidden * heads * head_dim * 2 + 2 * hidden * kv * head_dim + heads * head_dim * hidden + 2 * head_dim
    conv_dim = 2 * kh * kd + vh * vd
    delta = conv_dim * hidden + vh * vd * hidden + 2 * vh * hidden + conv_dim * kernel + 2 * vh + vd + hidden * vh * vd
    moe_other = experts * hidden + 3 * hidden * shared + hidden
    expert = 3 * hidden * inter
    vision = vit_params(vit_out)
    text = full * attn + linear * delta + layers * (moe_other + 2 * hidden) + 2 * vocab * hidden + hidden
    non_expert = text + vision
    routed = expert * experts * layers
    mtp = 2 * hidden * hidden + attn + moe_other + expert * experts + 6 * hidden
    fp8_expert = expert + 3 * -(-hidden // 128) * -(-inter // 128) * 4
    return {
        "moe_layers": layers,
        "params_total_main": non_expert + routed,
        "params_mtp_or_extra": mtp,
        "params_active_per_token": non_expert + expert * topk * layers,
        "params_routed": routed,
        "params_non_expert": non_expert,
        "params_vision": vision,
        "expert_bytes": {"bf16": expert * 2, "fp8_b128": fp8_expert},
        "expert_bytes_native": expert * 2,
        "routed_bytes_per_moe_layer_native": expert * 2 * experts,
        "routed_bytes_all_layers_native": routed * 2,
        # dt_bias and A_log are float32 in the checkpoint: 2 more bytes for each of their 2*vh values per layer
        "non_expert_bytes_native": non_expert * 2 + linear * 2 * vh * 2,
        "non_expert_bytes_bf16": non_expert * 2,
        "kv_cache_bytes_per_token_bf16": 2 * kv * head_dim * full * 2,
        "checkpoint_bytes_computed": non_expert * 2 + linear * 2 * vh * 2 + routed * 2 + mtp * 2,
    }


SIZES = {  # layers, hidden, heads, kv, head_dim, kh, kd, vh, vd, kernel, experts, inter, shared, vocab, topk, vit_out
    "qwen3.5-35b-a3b": (40, 2048, 16, 2, 256, 16, 128, 32, 128, 4, 256, 512, 512, 248320, 8, 2048),
    "qwen3.5-122b-a10b": (48, 3072, 32, 2, 256, 16, 128, 64, 128, 4, 256, 1024, 1024, 248320, 8, 3072),
    "qwen3.5-397b-a17b": (60, 4096, 32, 2, 256, 16, 128, 64, 128, 4, 512, 1024, 1024, 248320, 10, 4096),
}


def check_397b() -> None:
    """The research note's 397B block (its own enumeration of the text model; its ViT estimate of 451,178,496
    params was replaced by this script's count from the class's shapes, 456,010,480)."""
    d = qwen3_5(60, 4096, 32, 2, 256, 16, 128, 64, 128, 4, 512, 1024, 1024, 248320, 10, 4096)
    text = d["params_non_expert"] - d["params_vision"]
    assert text + 451_178_496 == 10_250_472_192, text
    assert d["params_vision"] == 456_010_480
    assert d["params_mtp_or_extra"] == 6_595_572_224, d["params_mtp_or_extra"]
    assert d["routed_bytes_all_layers_native"] == 773_094_113_280
    assert d["kv_cache_bytes_per_token_bf16"] == 30_720
    print("397B: text non-expert, MTP, routed and KV equal the research note's block", file=sys.stderr)


if __name__ == "__main__":
    if "--check" in sys.argv:
        check_397b()
    print(json.dumps({k: qwen3_5(*v) for k, v in SIZES.items()}, indent=1))
