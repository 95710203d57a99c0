"""Write presets/models/*.yaml from the config facts in tests/fixtures/oracles/model-facts.md.

Run once (output committed). Each preset keeps the config.json facts under `config:` in Hugging Face's own
key names, so a preset and a real checkpoint folder go through the same parser; the SGLang parsers, methods
and notes below are ktwizard's curation, with their sources.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO / "tests" / "fixtures" / "oracles" / "model-facts.md"
OUT = REPO / "presets" / "models"

FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
INT4 = {
    "quant_method": "compressed-tensors",
    "format": "pack-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 4, "group_size": 32, "symmetric": True, "type": "int", "strategy": "group"},
        }
    },
    "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", r"re:.*mlp\.(gate|up|gate_up|down)_proj.*"],
}
MXFP4 = {
    "quant_method": "mxfp4",
    "modules_to_not_convert": [
        "model.layers.*.self_attn",
        "model.layers.*.mlp.router",
        "model.embed_tokens",
        "lm_head",
    ],
}

# id: (display name, family, facts block, sglang flags, kt methods, published, extra)
P = {
    "kimi-k2-instruct": (
        "Kimi K2 Instruct",
        "kimi-k2",
        "kimi-k2-instruct",
        {"tool_call_parser": "kimi_k2"},
        ["FP8", "AMXINT4", "AMXINT8"],
        {
            "total_params": 1.03e12,
            "active_params": 32e9,
            "source": "moonshotai/Kimi-K2-Instruct model card: 1T total (HF lists 1.03T), 32B activated",
        },
    ),
    "kimi-k2-instruct-0905": (
        "Kimi K2 Instruct 0905",
        "kimi-k2",
        "kimi-k2-instruct-0905",
        {"tool_call_parser": "kimi_k2"},
        ["FP8", "AMXINT4", "AMXINT8"],
        {"total_params": 1.03e12, "active_params": 32e9, "source": "moonshotai/Kimi-K2-Instruct-0905 model card"},
    ),
    "kimi-k2-thinking": (
        "Kimi K2 Thinking",
        "kimi-k2",
        "kimi-k2-thinking",
        {"tool_call_parser": "kimi_k2", "reasoning_parser": "kimi_k2"},
        ["RAWINT4", "AMXINT4"],
        {"total_params": 1.03e12, "active_params": 32e9, "source": "moonshotai/Kimi-K2-Thinking model card"},
    ),
    "kimi-k2.5": (
        "Kimi K2.5",
        "kimi-k2",
        "kimi-k2.5",
        {"tool_call_parser": "kimi_k2", "reasoning_parser": "kimi_k2"},
        ["RAWINT4"],
        {"total_params": 1.03e12, "active_params": 32e9, "source": "moonshotai/Kimi-K2.5 model card"},
    ),
    "kimi-k2.6": (
        "Kimi K2.6",
        "kimi-k2",
        "kimi-k2.6",
        {"tool_call_parser": "kimi_k2", "reasoning_parser": "kimi_k2"},
        ["RAWINT4"],
        {"total_params": 1.03e12, "active_params": 32e9, "source": "moonshotai/Kimi-K2.6 model card"},
    ),
    "kimi-k2.7-code": (
        "Kimi K2.7 Code",
        "kimi-k2",
        "kimi-k2.7-code",
        {"tool_call_parser": "kimi_k2", "reasoning_parser": "kimi_k2"},
        ["RAWINT4"],
        {"total_params": 1.03e12, "active_params": 32e9, "source": "same architecture as Kimi K2.5/K2.6 (seed recipe)"},
    ),
    "deepseek-v2": (
        "DeepSeek-V2",
        "deepseek-v2",
        "deepseek-v2",
        {},
        ["BF16", "AMXINT4", "AMXINT8"],
        {
            "total_params": 236e9,
            "active_params": 21e9,
            "source": "deepseek-ai/DeepSeek-V2 model card: 236B total, 21B activated",
        },
    ),
    "deepseek-v2-lite": (
        "DeepSeek-V2-Lite",
        "deepseek-v2",
        "deepseek-v2-lite",
        {},
        ["BF16", "AMXINT4", "AMXINT8"],
        {
            "total_params": 15.7e9,
            "active_params": 2.4e9,
            "source": "deepseek-ai/DeepSeek-V2-Lite model card: 15.7B total, 2.4B activated (excludes embeddings, "
            "reference §6)",
        },
    ),
    "deepseek-v3": (
        "DeepSeek-V3 / V3-0324",
        "deepseek-v3",
        "deepseek-v3",
        {"tool_call_parser": "deepseekv3"},
        ["FP8", "AMXINT4", "AMXINT8"],
        {
            "total_params": 671e9,
            "active_params": 37e9,
            "source": "DeepSeek-V3 technical report: 671B total (685B with MTP), 37B activated",
        },
    ),
    "deepseek-r1": (
        "DeepSeek-R1 / R1-0528",
        "deepseek-v3",
        "deepseek-v3",
        {"tool_call_parser": "deepseekv3", "reasoning_parser": "deepseek-r1"},
        ["FP8", "AMXINT4", "AMXINT8"],
        {"total_params": 671e9, "active_params": 37e9, "source": "DeepSeek-R1 model card (same architecture as V3)"},
    ),
    "deepseek-v3.1": (
        "DeepSeek-V3.1",
        "deepseek-v3",
        "deepseek-v3.1",
        {"tool_call_parser": "deepseekv31", "reasoning_parser": "deepseek-v3"},
        ["FP8", "AMXINT4", "AMXINT8"],
        {"total_params": 671e9, "active_params": 37e9, "source": "deepseek-ai/DeepSeek-V3.1 model card"},
    ),
    "deepseek-v3.2": (
        "DeepSeek-V3.2",
        "deepseek-v3",
        "deepseek-v3.2",
        {"tool_call_parser": "deepseekv32", "reasoning_parser": "deepseek-v3"},
        ["FP8", "AMXINT4"],
        {"total_params": 671e9, "active_params": 37e9, "source": "deepseek-ai/DeepSeek-V3.2 model card"},
    ),
    "qwen3-30b-a3b": (
        "Qwen3-30B-A3B",
        "qwen3-moe",
        "qwen3-30b-a3b",
        {"tool_call_parser": "qwen25", "reasoning_parser": "qwen3"},
        ["BF16", "AMXINT8", "AMXINT4", "FP8"],
        {
            "total_params": 30.5e9,
            "active_params": 3.3e9,
            "source": "Qwen/Qwen3-30B-A3B model card: 30.5B total, 3.3B activated",
        },
    ),
    "qwen3-235b-a22b": (
        "Qwen3-235B-A22B",
        "qwen3-moe",
        "qwen3-235b-a22b",
        {"tool_call_parser": "qwen25", "reasoning_parser": "qwen3"},
        ["BF16", "FP8", "AMXINT4", "AMXINT8"],
        {
            "total_params": 235e9,
            "active_params": 22e9,
            "source": "Qwen/Qwen3-235B-A22B model card: 235B total, 22B activated",
        },
    ),
    "qwen3-coder-480b-a35b": (
        "Qwen3-Coder-480B-A35B",
        "qwen3-moe",
        "qwen3-coder-480b-a35b",
        {"tool_call_parser": "qwen3_coder"},
        ["BF16", "FP8", "AMXINT4"],
        {
            "total_params": 480e9,
            "active_params": 35e9,
            "source": "Qwen/Qwen3-Coder-480B-A35B-Instruct model card: 480B total, 35B activated",
        },
    ),
    "qwen3-next-80b-a3b": (
        "Qwen3-Next-80B-A3B",
        "qwen3-next",
        "qwen3-next-80b-a3b",
        {"tool_call_parser": "qwen25", "reasoning_parser": "qwen3"},
        ["BF16", "FP8"],
        {
            "total_params": 80e9,
            "active_params": 3e9,
            "source": "Qwen/Qwen3-Next-80B-A3B model card: 80B total, 3B activated (vendor rounding; excludes "
            "embeddings)",
        },
    ),
    # Qwen3-Coder-Next: Qwen3-Next-80B-A3B's architecture (its model card lists the same 48 layers, 512 experts, 10
    # active, hidden 2048, 16/2 heads of 256, 262,144 context), non-thinking only, Qwen3-Coder's XML tool calls
    "qwen3-coder-next": (
        "Qwen3-Coder-Next",
        "qwen3-next",
        "qwen3-next-80b-a3b",
        {"tool_call_parser": "qwen3_coder"},
        ["BF16", "FP8"],
        {
            "total_params": 80e9,
            "active_params": 3e9,
            "source": "Qwen/Qwen3-Coder-Next model card: 80B total, 3B activated, 79B non-embedding",
        },
    ),
    "glm-4.5": (
        "GLM-4.5",
        "glm-4.5",
        "glm-4.5",
        {"tool_call_parser": "glm45", "reasoning_parser": "glm45"},
        ["BF16", "FP8", "AMXINT4"],
        {
            "total_params": 355e9,
            "active_params": 32e9,
            "source": "zai-org/GLM-4.5 README: 355B total, 32B active (without embedding and head, reference §6)",
        },
    ),
    "glm-4.5-air": (
        "GLM-4.5-Air",
        "glm-4.5",
        "glm-4.5-air",
        {"tool_call_parser": "glm45", "reasoning_parser": "glm45"},
        ["BF16", "FP8", "AMXINT4"],
        {"total_params": 106e9, "active_params": 12e9, "source": "zai-org/GLM-4.5 README: 106B total, 12B active"},
    ),
    "glm-4.6": (
        "GLM-4.6",
        "glm-4.5",
        "glm-4.6-4.7",
        {"tool_call_parser": "glm45", "reasoning_parser": "glm45"},
        ["BF16", "FP8_PERCHANNEL", "AMXINT4"],
        {
            "total_params": 355e9,
            "active_params": 32e9,
            "source": "zai-org/GLM-4.6 model card (same architecture as GLM-4.5)",
        },
    ),
    "glm-4.7": (
        "GLM-4.7",
        "glm-4.5",
        "glm-4.6-4.7",
        {"tool_call_parser": "glm47", "reasoning_parser": "glm45"},
        ["BF16", "FP8_PERCHANNEL", "AMXINT4"],
        {
            "total_params": 355e9,
            "active_params": 32e9,
            "source": "zai-org/GLM-4.7 model card (same architecture as GLM-4.5)",
        },
    ),
    "minimax-m2": (
        "MiniMax-M2 / M2.1",
        "minimax-m2",
        "minimax-m2",
        {"tool_call_parser": "minimax-m2", "reasoning_parser": "minimax-append-think"},
        ["FP8"],
        {
            "total_params": 230e9,
            "active_params": 10e9,
            "source": "MiniMaxAI/MiniMax-M2 model card: 230B total, 10B active (vendor rounding)",
        },
    ),
    "minimax-m2.5": (
        "MiniMax-M2.5",
        "minimax-m2",
        "minimax-m2",
        {"tool_call_parser": "minimax-m2", "reasoning_parser": "minimax-append-think"},
        ["FP8"],
        {
            "total_params": 228.7e9,
            "active_params": 10e9,
            "source": "MiniMaxAI/MiniMax-M2.5: 228,703,644,928 params from the HF API (code-index id 4289690615)",
        },
    ),
    "minimax-m2.7": (
        "MiniMax-M2.7",
        "minimax-m2",
        "minimax-m2",
        {"tool_call_parser": "minimax-m2", "reasoning_parser": "minimax-append-think"},
        ["FP8"],
        {"total_params": 230e9, "active_params": 10e9, "source": "MiniMaxAI/MiniMax-M2.7 (same architecture as M2.5)"},
    ),
    "glm-5": (
        "GLM-5",
        "glm-5",
        "glm-5",
        {"tool_call_parser": "glm47", "reasoning_parser": "glm45"},
        ["BF16", "AMXINT4", "AMXINT8"],
        {"total_params": 744e9, "active_params": 40e9, "source": "zai-org/GLM-5: 744B-A40B (slime glm5-744B-A40B.sh)"},
    ),
    "glm-5.1": (
        "GLM-5.1",
        "glm-5",
        "glm-5",
        {"tool_call_parser": "glm47", "reasoning_parser": "glm45"},
        ["BF16", "AMXINT4", "AMXINT8"],
        {"total_params": 744e9, "active_params": 40e9, "source": "zai-org/GLM-5.1 (same architecture as GLM-5)"},
    ),
    "glm-5.2": (
        "GLM-5.2",
        "glm-5",
        "glm-5.2",
        {"tool_call_parser": "glm47", "reasoning_parser": "glm45"},
        ["BF16", "AMXINT4", "AMXINT8"],
        {"total_params": 744e9, "active_params": 40e9, "source": "zai-org/GLM-5.2 (same architecture as GLM-5)"},
    ),
    "qwen3.5-397b-a17b": (
        "Qwen3.5-397B-A17B",
        "qwen3.5",
        "qwen3.5-397b-a17b",
        {"tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
        ["BF16", "AMXINT4", "AMXINT8"],
        {
            "total_params": 397e9,
            "active_params": 17e9,
            "source": "Qwen/Qwen3.5-397B-A17B model card: 397B total, 17B active",
        },
    ),
    "gpt-oss-120b": (
        "gpt-oss-120b",
        "gpt-oss",
        "gpt-oss-120b",
        {"tool_call_parser": "gpt-oss", "reasoning_parser": "gpt-oss"},
        ["MXFP4"],
        {
            "total_params": 116.83e9,
            "active_params": 5.13e9,
            "source": "openai/gpt-oss-120b model card: 116.83B total, 5.13B active (excludes embeddings and "
            "unembedding)",
        },
    ),
    "gpt-oss-20b": (
        "gpt-oss-20b",
        "gpt-oss",
        "gpt-oss-20b",
        {"tool_call_parser": "gpt-oss", "reasoning_parser": "gpt-oss"},
        ["MXFP4"],
        {
            "total_params": 20.91e9,
            "active_params": 3.61e9,
            "source": "openai/gpt-oss-20b model card: 20.91B total, 3.61B active (excludes embeddings and unembedding)",
        },
    ),
    "mixtral-8x7b": (
        "Mixtral 8x7B",
        "mixtral",
        "mixtral-8x7b",
        {},
        ["BF16", "AMXINT4", "AMXINT8"],
        {"total_params": 46.7e9, "active_params": 12.9e9, "source": "Mistral AI: 46.7B total, 12.9B active per token"},
    ),
    "mixtral-8x22b": (
        "Mixtral 8x22B",
        "mixtral",
        "mixtral-8x22b",
        {},
        ["BF16", "AMXINT4", "AMXINT8"],
        {"total_params": 141e9, "active_params": 39e9, "source": "Mistral AI: 141B total, 39B active"},
    ),
}

# How each vendor counts "active" parameters (reference/model-facts.md §6): all non-routed weights plus top-k
# experts, or the same without the input embedding table, or without embedding and lm_head.
ACTIVE_COUNTS = {
    "kimi": "no_embedding",
    "deepseek": "no_embedding",
    "qwen3-30b": "all",
    "qwen3-235b": "all",
    "qwen3-coder": "all",
    "qwen3-next": "no_embedding_no_head",
    "qwen3-coder-next": "no_embedding_no_head",
    "glm": "no_embedding_no_head",
    "minimax": "no_embedding",
    "qwen3.5": "all",
    "gpt-oss": "no_embedding",
    "mixtral": "all",
}

ATTENTION_BACKEND = {
    "kimi-k2": "flashinfer",
    "deepseek-v2": "triton",
    "deepseek-v3": "triton",
    "qwen3-moe": "flashinfer",
    "qwen3-next": "triton",
    "glm-4.5": "flashinfer",
    "minimax-m2": "flashinfer",
    # DSA: only the nsa backend takes the indexer's top-k (ktwizard/runtime/rules.py renders its kernels)
    "glm-5": "nsa",
    "qwen3.5": "triton",
    "gpt-oss": "triton",
    "mixtral": "flashinfer",
}
TEMPLATES = {
    "kimi-k2": "Use the checkpoint's chat_template.jinja for the exact checkpoint (K2.5, K2.6 and K2.7 Code differ); "
    "GitHub Copilot keys its Kimi fixes on model ids containing kimi-k2.6 or kimi-k2.7-code.",
    "deepseek-v3": "The checkpoint's tokenizer_config.json template; R1 adds <think> handling through the reasoning "
    "parser.",
    "qwen3-moe": "The checkpoint's template; enable_thinking is a chat-template kwarg for the hybrid-thinking "
    "releases.",
    "gpt-oss": "Harmony format, built into the checkpoint's template.",
}

CONFIG_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "moe_intermediate_size",
    "n_routed_experts",
    "num_experts",
    "num_local_experts",
    "num_experts_per_tok",
    "n_shared_experts",
    "first_k_dense_replace",
    "moe_layer_freq",
    "decoder_sparse_step",
    "mlp_only_layers",
    "shared_expert_intermediate_size",
    "vocab_size",
    "tie_word_embeddings",
    "max_position_embeddings",
    "num_nextn_predict_layers",
    "sliding_window",
)
ATTN_KEYS = (
    "num_attention_heads",
    "num_key_value_heads",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "head_dim",
    "index_n_heads",
    "index_head_dim",
    "index_topk",
    "sliding_window",
    "full_attention_interval",
    "attention_bias",
    "use_qk_norm",
    "partial_rotary_factor",
)


def to_config(f: dict, arch: str) -> dict:
    cfg: dict = {"architectures": [arch], "model_type": f["model_type"]}
    for k in CONFIG_KEYS:
        if k in f and f[k] is not None:
            cfg[k] = f[k]
    att = f.get("attention", {})
    for k in ATTN_KEYS:
        # q_lora_rank null is a fact (a plain q_proj, DeepSeek-V2-Lite), not a gap: transformers' default is 1536
        if k in att and (att[k] is not None or k == "q_lora_rank"):
            cfg[k] = att[k]
    for k, v in (att.get("linear_attention") or {}).items():
        cfg[k] = v
    if "layer_types_count" in att and arch == "GptOssForCausalLM":
        n = f["num_hidden_layers"]
        cfg["layer_types"] = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    for k, v in (f.get("routing_and_misc") or {}).items():
        if k in (
            "scoring_func",
            "topk_method",
            "n_group",
            "topk_group",
            "norm_topk_prob",
            "routed_scaling_factor",
            "rope_theta",
        ):
            cfg[k] = v
    nf = f.get("native_format") or {}
    q = str(nf.get("quant_method", "")).lower()
    if q == "fp8":
        cfg["quantization_config"] = dict(FP8)
    elif q == "compressed-tensors":
        cfg["quantization_config"] = INT4
    elif q == "mxfp4":
        cfg["quantization_config"] = MXFP4
    cfg["torch_dtype"] = nf.get("torch_dtype", "bfloat16")
    return cfg


def main() -> None:
    text = FACTS.read_text()
    blocks = {name: yaml.safe_load(b) for name, b in re.findall(r"### (\S+)\n\n```yaml\n(.*?)```", text, re.S)}
    OUT.mkdir(parents=True, exist_ok=True)
    for pid, (name, family, block, sglang, methods, published) in P.items():
        f = blocks[block]
        arch = f["architectures"][0].split()[0]
        cfg = to_config(f, arch)
        if arch == "KimiK25ForConditionalGeneration":
            text_cfg = {k: v for k, v in cfg.items() if k not in ("quantization_config",)}
            text_cfg["architectures"] = ["DeepseekV3ForCausalLM"]
            cfg = {
                "architectures": [arch],
                "model_type": "kimi_k25",
                "text_config": text_cfg,
                "quantization_config": cfg.get("quantization_config"),
            }
        if cfg["model_type"] == "kimi_k2":
            # transformers has no kimi_k2 type: the checkpoints ship configuration_deepseek.py and name it in
            # config.json's auto_map, which --trust-remote-code loads (the modeling entries are not needed to plan)
            cfg["auto_map"] = {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}
        nf = f.get("native_format") or {}
        published = dict(published)
        # the longest matching prefix: qwen3-coder-next counts as Qwen3-Next does, not as qwen3-coder
        published["active_counts"] = ACTIVE_COUNTS[max((k for k in ACTIVE_COUNTS if pid.startswith(k)), key=len)]
        if arch == "Qwen3_5MoeForConditionalGeneration":
            # The decoder's keys sit under text_config (sglang/srt/configs/qwen3_5.py), as in the HF config.json
            text_cfg = {k: v for k, v in cfg.items() if k not in ("architectures",)}
            text_cfg["model_type"] = "qwen3_5_moe_text"
            cfg = {"architectures": [arch], "model_type": "qwen3_5_moe", "text_config": text_cfg}
            # ViT (depth 27, width 1152, MLP 4304) + merger to the text width, BF16, on the GPU (qwen_vit_bytes)
            cfg["estimated_bytes"] = {"vision": QWEN35_VISION[block]}
        if arch == "KimiK25ForConditionalGeneration":
            # MoonViT tower + projector, loaded on the GPU; not in the text config (kimi_k25.py shapes, below)
            cfg["estimated_bytes"] = {"vision": moonvit_bytes()}
        preset = {
            "id": pid,
            "name": name,
            "family": family,
            "hf_repos": f.get("hf_repos", []),
            "config": cfg,
            "checkpoint_formats": [nf.get("quant_method") or "bf16"],
            "kt_methods": methods,
            "sglang": {
                **sglang,
                "attention_backend": ATTENTION_BACKEND[family],
                "trust_remote_code": True,
                "served_model_name": pid,
            },
            "chat_template": TEMPLATES.get(family, "The checkpoint's own chat template."),
            "published": published,
            "sources": f.get("sources", [])
            + ["model-facts.md (ktwizard research notes; copy in tests/fixtures/oracles/)"],
            "unconfirmed": f.get("unconfirmed", []),
        }
        # the 2507 Thinking releases: the same architecture (their own parser, CHECKPOINT_RULES)
        preset["hf_repos"] = preset["hf_repos"] + EXTRA_REPOS.get(pid, [])
        # one checkpoint name, one preset (names are aliases): R1 is deepseek-r1's, an FP8 export its -fp8 preset's
        if pid == "deepseek-v3":
            preset["hf_repos"] = [r for r in preset["hf_repos"] if "-R1" not in r]
        if pid in FP8_VARIANTS:
            preset["hf_repos"] = [r for r in preset["hf_repos"] if r not in FP8_VARIANTS[pid]]
        if pid == "deepseek-r1":
            preset["hf_repos"] = ["deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-0528"]
            preset["unconfirmed"] = preset["unconfirmed"] + ["R1-0528 assumed identical to R1 (reference §7)"]
        if pid in ("glm-4.6", "glm-4.7"):
            preset["hf_repos"] = [r for r in preset["hf_repos"] if pid.upper()[4:] in r.upper()] or preset["hf_repos"]
        if pid in QWEN35_IDS:
            keep, note = QWEN35_IDS[pid]
            preset["hf_repos"], preset["unconfirmed"] = keep, preset["unconfirmed"] + ([note] if note else [])
        if pid in OWN_IDS:
            keep, ctx, note = OWN_IDS[pid]
            preset["hf_repos"] = [r for r in preset["hf_repos"] if r in keep] or keep
            if ctx:
                preset["config"]["max_position_embeddings"] = ctx
            preset["unconfirmed"] = preset["unconfirmed"] + ([note] if note else [])
        if pid == "qwen3-coder-next":
            preset["sources"] = preset["sources"] + [
                "Qwen/Qwen3-Coder-Next model card: 48 layers, hidden 2048, 16 Q / 2 KV heads of 256 (rotary 64), "
                "linear attention 32 V / 16 QK heads of 128, 512 experts (10 active, 1 shared) of 512, 262,144 tokens; "
                "non-thinking only",
                "kvcache-ai/ktransformers doc/en/kt-kernel/Qwen3-Coder-Next-Tutorial.md (BF16 and FP8, "
                "--tool-call-parser qwen3_coder, no reasoning parser)",
            ]
            preset["unconfirmed"] = [u for u in preset["unconfirmed"] if "Instruct config" not in u] + [
                "config.json taken from Qwen3-Next-80B-A3B's facts block; the model card's dimensions match it"
            ]
        if family == "qwen3.5":
            preset["unconfirmed"] = preset["unconfirmed"] + [
                "vision tower bytes from qwen3_vl.py's shapes and the config's dims, not from a checkpoint index",
                "parsers qwen3_coder / qwen3 as the Qwen3.5 model card's SGLang example (not re-read)",
            ]
        if family == "glm-5":
            preset["unconfirmed"] = preset["unconfirmed"] + ["tool parser glm47 assumed (GLM-4.7's format)"]
        if family == "mixtral":
            preset["unconfirmed"].append(
                "Mixtral under kt-kernel/SGLang: only the legacy ktransformers README (Aug 2024) claims support"
            )
        write(pid, preset)
        if pid in FP8_VARIANTS:
            write(f"{pid}-fp8", fp8_variant(preset, FP8_VARIANTS[pid]))
        for suffix, label, repos, quant, methods, note in QUANT_VARIANTS.get(pid, ()):
            write(f"{pid}-{suffix}", quant_variant(preset, suffix, label, repos, quant, methods, note))
    for pid in GLM5_NEXT:
        write(pid, glm5_next_preset(pid, blocks[pid]))
    m3 = minimax_m3_presets(blocks)
    for pid, preset in m3:
        write(pid, preset)
    for pid, (name, published) in DEEPSEEK_V4.items():
        write(pid, deepseek_v4_preset(pid, name, blocks[pid], published))
    n = len(P) + len(FP8_VARIANTS) + sum(map(len, QUANT_VARIANTS.values())) + len(GLM5_NEXT) + len(m3)
    n += len(DEEPSEEK_V4)
    print(f"wrote {n} presets to {OUT}", file=sys.stderr)


def write(pid: str, preset: dict) -> None:
    preset = with_checkpoints(preset)
    body = yaml.safe_dump(preset, sort_keys=False, width=120, allow_unicode=True)
    (OUT / f"{pid}.yaml").write_text(
        f"# Generated by tools/make_presets.py from tests/fixtures/oracles/model-facts.md; edit the generator.\n{body}"
    )


# Checkpoints of one facts block that people download under their own name: (repos, context, note).
OWN_IDS = {
    "minimax-m2": (["MiniMaxAI/MiniMax-M2", "MiniMaxAI/MiniMax-M2.1"], 0, ""),
    "qwen3-coder-next": (["Qwen/Qwen3-Coder-Next"], 0, ""),
    "minimax-m2.5": (["MiniMaxAI/MiniMax-M2.5"], 196608, ""),
    "minimax-m2.7": (["MiniMaxAI/MiniMax-M2.7"], 204800, "M2.7 context 204800 from its config (NVFP4 copy: 196608)"),
    "glm-5": (["zai-org/GLM-5"], 0, ""),
    "glm-5.1": (["zai-org/GLM-5.1"], 0, "GLM-5.1 config assumed equal to GLM-5's apart from the weights"),
    "glm-5.2": (["zai-org/GLM-5.2"], 0, ""),
}

# The vendors' official block-FP8 checkpoints of BF16 presets, which the KT tutorials serve with --kt-method FP8
# (doc/en/kt-kernel/Qwen3-Coder-Next-Tutorial.md, experts-sched-Tutorial.md). Same architecture; the quantization
# config is Qwen's and Z.ai's published one: e4m3, 128 x 128 weight blocks, dynamic activation scales.
FP8_VARIANTS = {
    "qwen3-next-80b-a3b": [
        "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
        "Qwen/Qwen3-Next-80B-A3B-Thinking-FP8",
    ],
    "qwen3-coder-next": ["Qwen/Qwen3-Coder-Next-FP8"],
    "qwen3-30b-a3b": [
        "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8",
        "Qwen/Qwen3-30B-A3B-Thinking-2507-FP8",
        "Qwen/Qwen3-30B-A3B-FP8",
    ],
    "qwen3-235b-a22b": [
        "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
        "Qwen/Qwen3-235B-A22B-Thinking-2507-FP8",
        "Qwen/Qwen3-235B-A22B-FP8",
    ],
    "qwen3-coder-480b-a35b": ["Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8"],
    "glm-4.5": ["zai-org/GLM-4.5-FP8"],
    "glm-4.5-air": ["zai-org/GLM-4.5-Air-FP8"],
    "glm-5": ["zai-org/GLM-5-FP8"],
    "glm-5.1": ["zai-org/GLM-5.1-FP8"],
    "glm-5.2": ["zai-org/GLM-5.2-FP8"],
}


def fp8_variant(preset: dict, repos: list[str]) -> dict:
    v = json.loads(json.dumps(preset))
    v["id"] = f"{preset['id']}-fp8"
    v["name"] = f"{preset['name']} FP8"
    v["hf_repos"] = repos
    v["config"]["quantization_config"] = dict(FP8)
    v["checkpoint_formats"] = ["fp8"]
    v["kt_methods"] = ["FP8"] + [m for m in preset["kt_methods"] if m.startswith("AMX")]
    v["sglang"]["served_model_name"] = v["id"]
    v["unconfirmed"] = v["unconfirmed"] + [
        "modules_to_not_convert of the FP8 checkpoint not recorded: router gates, norms, embeddings and lm_head are "
        "counted in BF16, every other linear in FP8 with 128 x 128 scales"
    ]
    return v


# Third-party and vendor re-quantizations people download under their own names: NVFP4 (ModelOpt, kt-kernel's
# NVFP4 method, GPU side SM100+) and GPTQ INT4 (kt-kernel's GPTQ_INT4 method).
# DeepSeek-R1's NVFP4 entry is set with its recipe below (NVFP4_R1).
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
QUANT_VARIANTS = {
    "qwen3-30b-a3b": [
        ("gptq-int4", "GPTQ-Int4", ["Qwen/Qwen3-30B-A3B-GPTQ-Int4"], GPTQ, ["GPTQ_INT4"], ""),
    ],
    "qwen3-235b-a22b": [
        ("gptq-int4", "GPTQ-Int4", ["Qwen/Qwen3-235B-A22B-GPTQ-Int4"], GPTQ, ["GPTQ_INT4"], ""),
    ],
}


def quant_variant(
    preset: dict, suffix: str, label: str, repos: list[str], quant: dict, methods: list[str], note: str
) -> dict:
    v = json.loads(json.dumps(preset))
    v["id"] = f"{preset['id']}-{suffix}"
    v["name"] = f"{preset['name']} {label}"
    v["hf_repos"] = repos
    v["config"]["quantization_config"] = dict(quant)
    v["checkpoint_formats"] = [suffix]
    v["kt_methods"] = methods
    v["sglang"]["served_model_name"] = v["id"]
    v["unconfirmed"] = v["unconfirmed"] + [f"{label} quantization_config written from the format's convention"]
    v["unconfirmed"] += [note] if note else []
    if v["id"] in CONFIRMED_QUANT:  # a variant whose quantization config was read from its real checkpoint
        v["unconfirmed"] = [u for u in v["unconfirmed"] if "quantization_config written" not in u]
        extra = CONFIRMED_QUANT[v["id"]]
        v["sources"] = v["sources"] + extra["sources"]
        v["unconfirmed"] += extra["unconfirmed"]
        v["config"]["estimated_bytes"] = extra["estimated_bytes"]
    return v


# --- DeepSeek-V4 (issue #43) ------------------------------------------------------------------------------------
# Their facts blocks carry the checkpoint's config.json keys as published (config_json), copied verbatim: the model
# class reads keys (compress_ratios, o_groups, hc_mult, expert_dtype, swiglu_limit) the generic table does not know.
DEEPSEEK_V4 = {
    "deepseek-v4-flash": (
        "DeepSeek-V4-Flash",
        {"total_params": 284e9, "active_params": 13e9, "source": "deepseek-ai/DeepSeek-V4-Flash model card: 284B, 13B"},
    ),
    "deepseek-v4-flash-0731": (
        "DeepSeek-V4-Flash-0731",
        {"total_params": 284e9, "active_params": 13e9, "source": "same architecture as DeepSeek-V4-Flash"},
    ),
    "deepseek-v4-pro": (
        "DeepSeek-V4-Pro",
        {"total_params": 1.6e12, "active_params": 49e9, "source": "deepseek-ai/DeepSeek-V4-Pro model card: 1.6T, 49B"},
    ),
}


def deepseek_v4_preset(pid: str, name: str, f: dict, published: dict) -> dict:
    return {
        "id": pid,
        "name": name,
        "family": "deepseek-v4",
        "hf_repos": f["hf_repos"],
        "config": dict(f["config_json"]),
        "checkpoint_formats": ["fp8+mxfp4"],
        # AMXINT4/AMXINT8 are not offered: the KT wrapper drops the checkpoint's SwiGLU clamp (swiglu_limit) for any
        # method but MXFP4/MXFP8 (kt_ep_wrapper.py:399-405, :5284-5310), so converted experts would compute wrongly
        "kt_methods": ["MXFP4"],
        "sglang": {
            "tool_call_parser": "deepseekv4",  # function_call/function_call_parser.py:57
            "reasoning_parser": "deepseek-v4",  # parser/reasoning_parser.py:403
            "attention_backend": "compressed",
            "trust_remote_code": True,
            "served_model_name": pid,
        },
        "chat_template": "No Jinja template ships: the repository's encoding/encoding_dsv4.py builds prompts; SGLang "
        "serves the tokenizer's own when present.",
        "published": {**published, "active_counts": "no_embedding"},
        "sources": f.get("sources", []) + ["model-facts.md (ktwizard research notes; copy in tests/fixtures/oracles/)"],
        "unconfirmed": f.get("unconfirmed", [])
        + [
            "published parameter counts recalled from the model cards (rounded), not re-read",
        ],
    }


# --- MiniMax-M3 (its own block: a vision-language wrapper with block-sparse attention) -----------------------------
# The facts block keeps the checkpoint's config.json nearly verbatim (text_config, vision_config), so the preset is
# the same JSON a downloaded folder holds and goes through the same parser (ktwizard/families/minimax_m3).
M3_SGLANG = {
    # kvcache-ai/ktransformers doc/en/kt-kernel/MiniMax-M3-Tutorial.md; function_call_parser.py:32 (minimax-m3)
    "tool_call_parser": "minimax-m3",
    "reasoning_parser": "minimax-m3",
    # kt_kernel/cli/utils/model_registry.py:180: the dense layers run on it; sparse layers are wrapped by
    # MiniMaxHybridAttnBackend whatever the backend (layers/attention/attention_registry.py:198-208)
    "attention_backend": "flashinfer",
}
# (id, name, repos, quantized checkpoint format or None (BF16), kt methods)
M3_CHECKPOINTS = (
    (
        "minimax-m3-mxfp8",
        "MiniMax-M3 MXFP8",
        ["MiniMaxAI/MiniMax-M3-MXFP8"],
        "mxfp8",
        ["MXFP8"],
    ),
    ("minimax-m3", "MiniMax-M3", ["MiniMaxAI/MiniMax-M3"], None, ["BF16"]),
)


def m3_vision_bytes(v: dict, text_hidden: int, projector: int) -> int:
    """The vision tower, projector and patch-merge MLP as the checkpoints store them (facts block `tensors.vision`):
    BF16 but the F32 patch embedding [hidden, channels, temporal, patch, patch]."""
    h, inter, n = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    merge = v["img_token_compression_config"]
    patch = v["patch_size"]
    embed = h * v["num_channels"] * merge["temporal_patch_size"] * patch * patch * 4
    mlp = (inter * h + inter) + (h * inter + h)  # fc1, fc2 with biases
    layer = 4 * h + mlp + 4 * (h * h + h)  # layer_norm1/2 weight + bias, the MLP, q/k/v/out_proj with biases
    pre = 2 * h
    proj = (projector * h + projector) + (text_hidden * projector + text_hidden)
    merged_in = text_hidden * merge["spatial_merge_size"] ** 2
    patch_merge = (text_hidden * merged_in + text_hidden) + (text_hidden * text_hidden + text_hidden)
    return embed + 2 * (n * layer + pre + proj + patch_merge)


FACTS_NOTE = "model-facts.md (ktwizard research notes; copy in tests/fixtures/oracles/)"


def minimax_m3_presets(blocks: dict) -> list[tuple[str, dict]]:
    f = blocks["minimax-m3"]
    out = []
    for pid, name, repos, quant, methods in M3_CHECKPOINTS:
        cfg: dict = {
            "architectures": list(f["architectures"]),
            # as the checkpoints' config.json: the config class ships with them (--trust-remote-code loads it)
            "auto_map": dict(f["auto_map"]),
            "model_type": f["model_type"],
            "text_config": dict(f["text_config"]),
            "vision_config": dict(f["vision_config"]),
            "projector_hidden_size": f["projector_hidden_size"],
            "torch_dtype": f["native_format"]["torch_dtype"],
        }
        if quant:
            q = dict(f["mxfp8_quantization_config"])
            q.pop("ignored_layers")
            cfg["quantization_config"] = q
        text = f["text_config"]
        cfg["estimated_bytes"] = {
            "vision": m3_vision_bytes(f["vision_config"], text["hidden_size"], f["projector_hidden_size"])
        }
        out.append(
            (
                pid,
                {
                    "id": pid,
                    "name": name,
                    "family": "minimax-m3",
                    "hf_repos": repos,
                    "config": cfg,
                    "checkpoint_formats": [quant or "bf16"],
                    "kt_methods": methods,
                    "sglang": {**M3_SGLANG, "trust_remote_code": True, "served_model_name": pid},
                    "chat_template": "The checkpoint's template; chat_template_kwargs.thinking_mode is enabled, "
                    "disabled or adaptive (KT's MiniMax-M3 tutorial).",
                    "published": {
                        "total_params": 428e9,
                        "active_params": 23e9,
                        "source": "MiniMaxAI/MiniMax-M3 model card as summarised in the stored index (id "
                        "55476735939): ~428B total, ~23B active; the BF16 headers sum to 427,040,140,160 params with "
                        "the vision tower",
                        # 23.50B without embedding and lm_head (24.73B with the head): the card's ~23B truncates it
                        "active_counts": "no_embedding_no_head",
                    },
                    "sources": f["sources"] + [FACTS_NOTE],
                    "unconfirmed": f["unconfirmed"]
                    + (
                        []
                        if quant
                        else [
                            "BF16 experts: kt-kernel 0.7.2 applies M3's clamped SwiGLU only under MXFP4/MXFP8 "
                            "(sglang/srt/layers/moe/kt_ep_wrapper.py:399-405), so this checkpoint's CPU experts would "
                            "need an MXFP8 copy; ktwizard refuses the plan and names MiniMax-M3-MXFP8"
                        ]
                    ),
                },
            )
        )
    return out


# --- GLM-5-Next (GLM-5.3-Flash) ---------------------------------------------------------------------------------------
# A vision-language config: the decoder's keys under text_config (sglang/srt/configs/glm5_next.py), written whole from
# the facts block (model-facts.md §9). Only the native block-FP8 checkpoint runs on sglang-kt 0.7.2
# (server_args.py:1535-1539), with --kt-method FP8 (:1620-1628): one preset, no BF16 or converted variants.
GLM5_NEXT = {"glm-5.3-flash": "GLM-5.3-Flash"}
GLM5_NEXT_TEXT_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings",
    "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group", "topk_group", "norm_topk_prob",
    "routed_scaling_factor", "scoring_func", "topk_method", "first_k_dense_replace", "moe_layer_freq", "q_lora_rank",
    "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "swiglu_limit", "mhc", "hc_mult",
    "hc_sinkhorn_iters", "hc_eps", "num_nextn_predict_layers", "index_head_dim", "index_n_heads", "index_topk",
    "index_kpool", "index_kpool_compress", "index_kpool_always_select_tail",
)  # fmt: skip


def glm5_next_preset(pid: str, f: dict) -> dict:
    t = f["text_config"]
    layers = t["num_hidden_layers"]
    dsa = [i for i in range(layers) if i % 4 == 3]  # configs/glm5_next.py:288-295
    text = {k: t[k] for k in GLM5_NEXT_TEXT_KEYS}
    text["model_type"] = f["text_model_type"]
    text["linear_attn_config"] = {
        **t["linear_attn_config"],
        "kda_layers": [i for i in range(layers) if i not in dsa],
        "full_attn_layers": dsa,
    }
    text["layer_types"] = ["deepseek_sparse_attention" if i in dsa else "linear_attention" for i in range(layers)]
    vision = f["vision_config"]
    # GlmOcrVisionModel (glm_ocr.py:150-233, glm4v.py:233-270) at these dims, BF16: loaded on the GPU by default
    # (model_config.py:234-240 keeps multimodal on); the facts block records the count
    vision_bytes = 2 * int(str(f["derived"]["vision_params_estimate"]).split()[0])
    cfg = {
        "architectures": f["architectures"],
        "model_type": f["model_type"],
        "text_config": text,
        "vision_config": vision,
        "quantization_config": dict(FP8),
        "torch_dtype": "bfloat16",
        "estimated_bytes": {"vision": vision_bytes},
    }
    return {
        "id": pid,
        "name": GLM5_NEXT[pid],
        "family": "glm5-next",
        "hf_repos": f["hf_repos"],
        "config": cfg,
        "checkpoint_formats": ["fp8"],
        "kt_methods": ["FP8"],
        "sglang": {
            "tool_call_parser": "glm47",
            "reasoning_parser": "glm45",
            "attention_backend": "nsa",
            "trust_remote_code": True,
            "served_model_name": pid,
        },
        "chat_template": "The checkpoint's own chat template.",
        "published": {"source": "no vendor parameter count found", "active_counts": "no_embedding_no_head"},
        "sources": f["sources"] + ["model-facts.md §9 (ktwizard research notes; copy in tests/fixtures/oracles/)"],
        "unconfirmed": f["unconfirmed"],
    }


# --- end GLM-5-Next ---


# --- Kimi K2.5 / K2.6 / K2.7 Code vision tower (issue 43, q35) -------------------------------------------------------
def moonvit_bytes(h: int = 1152, inter: int = 4304, depth: int = 27, pos: int = 64, patch: int = 14) -> int:
    """BF16 bytes of KimiK25ForConditionalGeneration's vision side, from sglang/srt/models/kimi_k25.py: MoonViT's
    Conv2d patch embed 3 x patch^2 -> h (+bias, :371-400), a learnable pos x pos x h position table (:227-245),
    `depth` encoder layers (two LayerNorms, qkv and proj with bias, MLP2 fc0/fc1 with bias, :99-135), a final
    LayerNorm (:443), and K2VLMultiModalProjector: LayerNorm(h), 4h -> 4h, 4h -> 7168, with bias (:542-570).
    Dims: the checkpoints' vision_config (vt_* 1152 / 4304 / 27, patch 14, init_pos_emb 64 x 64, merge 2 x 2),
    which are also configs/kimi_k25.py's defaults."""
    return vit_bytes(3 * patch * patch, pos * pos, 7168, final_norm=True, h=h, inter=inter, depth=depth)


def vit_bytes(patch_in: int, positions: int, out_hidden: int, final_norm: bool, h: int, inter: int, depth: int) -> int:
    """BF16 bytes of a ViT with biases (MoonViT, Qwen3.5's): a patch embed of `patch_in` inputs per patch, a
    position table, `depth` blocks (two LayerNorms, qkv, proj, fc1, fc2), an optional final LayerNorm, and a merger
    LayerNorm(h) + 4h -> 4h -> out_hidden."""
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    merger = 2 * h + 16 * h * h + 4 * h + 4 * h * out_hidden + out_hidden
    return 2 * (patch_in * h + h + positions * h + depth * block + (2 * h if final_norm else 0) + merger)


# --- Qwen3.5 / Qwen3.6 mid sizes (issue 43, q35) -------------------------------------------------------------------
# Facts blocks qwen3.5-35b-a3b and qwen3.5-122b-a10b; Qwen3.6-35B-A3B has the 35B's config (slime's
# qwen36-35B-A3B.sh sources the 3.5 script; the verbatim 3.6 config.json copy has the same text_config).
P.update(
    {
        "qwen3.5-35b-a3b": (
            "Qwen3.5-35B-A3B",
            "qwen3.5",
            "qwen3.5-35b-a3b",
            {"tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
            ["BF16", "AMXINT4", "AMXINT8"],
            {"total_params": 35e9, "active_params": 3e9, "source": "Qwen/Qwen3.5-35B-A3B model card: 35B, 3B active"},
        ),
        "qwen3.6-35b-a3b": (
            "Qwen3.6-35B-A3B",
            "qwen3.5",
            "qwen3.5-35b-a3b",
            {"tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
            ["BF16", "AMXINT4", "AMXINT8"],
            {"total_params": 35e9, "active_params": 3e9, "source": "Qwen/Qwen3.6-35B-A3B model card: 35B, 3B active"},
        ),
        "qwen3.5-122b-a10b": (
            "Qwen3.5-122B-A10B",
            "qwen3.5",
            "qwen3.5-122b-a10b",
            {"tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3"},
            ["BF16", "AMXINT4", "AMXINT8"],
            {
                "total_params": 122e9,
                "active_params": 10e9,
                "source": "Qwen/Qwen3.5-122B-A10B model card: 122B, 10B active",
            },
        ),
    }
)
ACTIVE_COUNTS["qwen3.6"] = "all"
QWEN35_IDS = {
    "qwen3.5-35b-a3b": (["Qwen/Qwen3.5-35B-A3B"], ""),
    "qwen3.6-35b-a3b": (["Qwen/Qwen3.6-35B-A3B"], ""),
}


def qwen_vit_bytes(out_hidden: int, h: int = 1152, inter: int = 4304, depth: int = 27) -> int:
    """BF16 bytes of Qwen3.5's ViT from the model class's shapes (sglang/srt/models/qwen3_vl.py:80-330): Conv3d patch
    embed 3x2x16x16 (+bias), 2304 position embeddings, `depth` blocks (LayerNorms, qkv, proj, fc1, fc2 with bias),
    merger LayerNorm + 4h -> 4h -> out_hidden; no deepstack mergers (deepstack_visual_indexes is [])."""
    return vit_bytes(3 * 2 * 16 * 16, 2304, out_hidden, final_norm=False, h=h, inter=inter, depth=depth)


# Facts block -> ViT bytes (out_hidden_size = the text width: the configs' vision_config).
QWEN35_VISION = {
    "qwen3.5-35b-a3b": qwen_vit_bytes(2048),
    "qwen3.5-122b-a10b": qwen_vit_bytes(3072),
    "qwen3.5-397b-a17b": qwen_vit_bytes(4096),
}
# Qwen's own block-FP8 and GPTQ-Int4 releases (repos named in public serving configs: vLLM recipes, tool-parser
# tables, a GPTQ compatibility table; see docs/models.md).
FP8_VARIANTS.update(
    {
        "qwen3.5-35b-a3b": ["Qwen/Qwen3.5-35B-A3B-FP8"],
        "qwen3.6-35b-a3b": ["Qwen/Qwen3.6-35B-A3B-FP8"],
        "qwen3.5-122b-a10b": ["Qwen/Qwen3.5-122B-A10B-FP8"],
        "qwen3.5-397b-a17b": ["Qwen/Qwen3.5-397B-A17B-FP8"],
    }
)
QWEN35_GPTQ_NOTE = "GPTQ experts of Qwen3.5 assumed per-expert tensors (kt-kernel's GPTQSafeTensorLoader layout)"
QUANT_VARIANTS.update(
    {
        pid: [("gptq-int4", "GPTQ-Int4", [f"Qwen/{name}-GPTQ-Int4"], GPTQ, ["GPTQ_INT4"], QWEN35_GPTQ_NOTE)]
        for pid, name in (
            ("qwen3.5-35b-a3b", "Qwen3.5-35B-A3B"),
            ("qwen3.5-122b-a10b", "Qwen3.5-122B-A10B"),
            ("qwen3.5-397b-a17b", "Qwen3.5-397B-A17B"),
        )
    }
)


# --- NVFP4 DeepSeek-R1 checkpoint (issue 43, fmt) ---------------------------------------------------------------------
# nvidia/DeepSeek-R1-0528-NVFP4-v2 (the NVFP4 checkpoint sglang's DeepSeek docs link). Its layout is NVIDIA's recipe:
# TensorRT-Model-Optimizer examples/deepseek/ptq.py disables every "*attn*" quantizer and "*head*", re-enables wo
# (o_proj) with --enable_wo_quant ("v2 additionally quantizes the wo module in attention layers", model card), writes
# kv_cache_quant_algo FP8 (enable_fp8_kvcache defaults True) and excludes the MTP layer ("layers.61*");
# quantize_to_nvfp4.py dequantizes every FP8 weight to BF16 and NVFP4-packs those with an amax: the dense MLPs, shared
# and routed experts and o_proj; attention's q/kv projections, the router, embeddings, lm_head and the whole MTP layer
# (its own embed_tokens / shared_head.head copies included) stay BF16. Counted this way the repository holds
# 413,306,106,784 B of tensors (the blobcache listing: 413,340,567,567 B in 350 files, tokenizer and configs
# included) and 393.6 B elements (the Hub's "394B params").
R1_H, R1_I, R1_V, R1_E = 7168, 2048, 129280, 256


def r1_mtp_bf16_bytes() -> int:
    """The BF16 MTP layer of the NVFP4 export: a MoE decoder layer, eh_proj, three norms, embed_tokens and head."""
    h, i, heads = R1_H, R1_I, 128
    attn = 1536 * h + heads * 192 * 1536 + 576 * h + heads * 256 * 512 + h * heads * 128 + 1536 + 512
    moe = (R1_E + 1) * 3 * i * h + R1_E * h  # routed + shared experts, router
    return 2 * (attn + moe + 2 * h + h * 2 * h + 3 * h + 2 * R1_V * h) + 4 * R1_E  # + the fp32 score bias


NVFP4_R1 = {
    "quant_method": "modelopt",
    "quant_algo": "NVFP4",
    "group_size": 16,
    "kv_cache_quant_algo": "FP8",
    "exclude_modules": [
        "lm_head",
        "model.layers.*.self_attn.q_a_proj",
        "model.layers.*.self_attn.q_b_proj",
        "model.layers.*.self_attn.kv_a_proj_with_mqa",
        "model.layers.*.self_attn.kv_b_proj",
        "model.layers.61*",
    ],
}
QUANT_VARIANTS["deepseek-r1"] = [("nvfp4", "NVFP4", ["nvidia/DeepSeek-R1-0528-NVFP4-v2"], NVFP4_R1, ["NVFP4"], "")]
CONFIRMED_QUANT = {
    "deepseek-r1-nvfp4": {
        "sources": [
            "NVIDIA/TensorRT-Model-Optimizer@1030a221 examples/deepseek/ptq.py (*attn* and *head* not quantized, wo "
            "with --enable_wo_quant, kv_cache_quant_algo FP8, MTP layer excluded)",
            "NVIDIA/TensorRT-Model-Optimizer@1ef1d72a examples/deepseek/quantize_to_nvfp4.py (FP8 dequantized to "
            "BF16; U8 weight, F8_E4M3 weight_scale per 16, F32 weight_scale_2 and input_scale)",
            "huggingface.co/nvidia/DeepSeek-R1-0528-FP4-v2 model card: v2 additionally quantizes wo",
            "repository size 413,340,567,567 B in 350 files (a public blobcache benchmark of "
            "nvidia_DeepSeek-R1-0528-NVFP4-v2); this layout counts 413,306,106,784 B of tensors",
        ],
        "unconfirmed": [
            "hf_quant_config.json's text not seen: exclude_modules written as globs of the recipe's exclusions "
            "(the export lists them per layer)"
        ],
        "estimated_bytes": {"mtp": r1_mtp_bf16_bytes()},
    }
}


# --- Checkpoint variants (issue 49) ---------------------------------------------------------------------------------
# One preset serves every checkpoint of its architecture, but the checkpoints do not all write the same output: the
# 2507 Instruct releases never think, the Thinking releases always do, DeepSeek-V3.2-Exp kept V3.1's tool calls.
# (pattern on the repo name, parser overrides, chat template note, source); first match wins. docs/parsers.md holds
# the table with the model cards and the runtime's detector lines.
NO_THINK_QWEN = (
    "serving_chat.py:1374-1379 turns reasoning on for --reasoning-parser qwen3 unless the request sends "
    "enable_thinking=false, and Qwen3Detector then reads an answer without </think> as reasoning "
    "(reasoning_parser.py:57-70): no reasoning parser"
)
CHECKPOINT_RULES: tuple[tuple[str, dict, str, str], ...] = (
    (
        r"^Qwen/Qwen3-.*-Instruct-2507",
        {"reasoning_parser": None},
        "The checkpoint's template; non-thinking only: no <think></think> blocks, enable_thinking not needed.",
        "Qwen/Qwen3-235B-A22B-Instruct-2507 and Qwen3-30B-A3B-Instruct-2507 model cards (non-thinking mode only); "
        + NO_THINK_QWEN,
    ),
    (
        r"^Qwen/Qwen3-Next-80B-A3B-Instruct",
        {"reasoning_parser": None},
        "The checkpoint's template; non-thinking only: no <think></think> blocks.",
        "Qwen/Qwen3-Next-80B-A3B-Instruct model card (non-thinking mode only); " + NO_THINK_QWEN,
    ),
    (
        r"^Qwen/Qwen3-.*-Thinking",
        {"reasoning_parser": "qwen3-thinking"},
        "The checkpoint's template opens <think> itself: the output carries only </think> (thinking only).",
        "Qwen3-*-Thinking-2507 / Qwen3-Next-80B-A3B-Thinking model cards (thinking mode only, template adds <think>); "
        "qwen3-thinking forces reasoning whatever the request (reasoning_parser.py:433-435) and adds no second "
        "<think> to the prompt (serving_chat.py:703-707); SGLang's reasoning-parser docs name it for these models",
    ),
    (
        r"^Qwen/Qwen3-Coder-",
        {"reasoning_parser": None},
        "The checkpoint's template; non-thinking only, Qwen3-Coder XML tool calls (<function=...><parameter=...>).",
        "Qwen/Qwen3-Coder-Next and Qwen3-Coder-480B-A35B-Instruct model cards (non-thinking only); "
        "qwen3_coder_detector.py (function_call_parser.py:69 maps qwen3_coder)",
    ),
    (
        r"^deepseek-ai/DeepSeek-V3\.2-Exp",
        {"tool_call_parser": "deepseekv31"},
        "",
        "DeepSeek-V3.2-Exp's template writes V3.1's tool calls (<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS); the DSML "
        "format (deepseekv32_detector.py) came with DeepSeek-V3.2 (sgl-project/sglang#14690)",
    ),
)


EXTRA_REPOS = {
    "qwen3-30b-a3b": ["Qwen/Qwen3-30B-A3B-Thinking-2507"],
    "qwen3-235b-a22b": ["Qwen/Qwen3-235B-A22B-Thinking-2507"],
}


def clean_repo(repo: str) -> str:
    """A repository id without the notes the facts blocks keep beside it ("... (same dims)", "(revision ...)")."""
    return re.sub(r"\s*\(.*\)\s*$", "", repo).strip()


def with_checkpoints(preset: dict) -> dict:
    """The preset with clean repo ids and each checkpoint's own parsers (CHECKPOINT_RULES over the preset's)."""
    preset = dict(preset)
    notes = [
        f"{clean_repo(r)}: facts read at {m[1]}"
        for r in preset["hf_repos"]
        if (m := re.search(r"\((revision \w+)\)", r))
    ]
    preset["hf_repos"] = list(dict.fromkeys(clean_repo(r) for r in preset["hf_repos"]))
    preset["unconfirmed"] = preset["unconfirmed"] + notes
    base = {k: preset["sglang"].get(k) for k in ("tool_call_parser", "reasoning_parser")}
    out = []
    for repo in preset["hf_repos"]:
        entry: dict = {"repo": repo, **base}
        for pattern, overrides, template, source in CHECKPOINT_RULES:
            if re.search(pattern, repo):
                entry.update(overrides)
                entry.update({"chat_template": template} if template else {})
                entry["source"] = source
                break
        out.append(entry)
    preset["checkpoints"] = out
    if out:  # the preset's own hints are its first checkpoint's: the one `download` fetches
        preset["sglang"] = {**preset["sglang"], **{k: out[0][k] for k in base}}
    return preset


if __name__ == "__main__":
    main()
