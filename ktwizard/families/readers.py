"""The config readers and tensor layouts families share: GQA / MLA attention, the DeepSeek, GLM-4, Qwen3 and
every-layer MoE layouts, the vision-language unwrappers (moved from models/families.py, issue #50)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ktwizard.errors import BadInput
from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.family import MoeLayout, text_config_unwrap
from ktwizard.models.spec import Attention
from ktwizard.models.tensors import Tensor, experts, gpt_oss_experts, gqa, linear_attention, mla, mlp, plain

# --- how configs read -----------------------------------------------------------------------------------------


def gqa_attention(
    cfg: ConfigReader, layers: int, kind: str = "gqa", full_layers: int = 0, sliding: int = 0
) -> Attention:
    heads = cfg.need("num_attention_heads")
    hidden = cfg.need("hidden_size")
    return Attention(
        kind=kind,
        heads=heads,
        kv_heads=cfg.count("num_key_value_heads") or heads,
        head_dim=cfg.count("head_dim") or (hidden // heads if heads else 0),
        full_attention_layers=full_layers or layers,
        sliding_window=sliding,
        linear_key_heads=cfg.count("linear_num_key_heads"),
        linear_key_head_dim=cfg.count("linear_key_head_dim"),
        linear_value_heads=cfg.count("linear_num_value_heads"),
        linear_value_head_dim=cfg.count("linear_value_head_dim"),
        linear_conv_kernel=cfg.count("linear_conv_kernel_dim"),
    )


def mla_attention(cfg: ConfigReader, layers: int) -> Attention:
    heads = cfg.need("num_attention_heads")
    nsa = "index_topk" in cfg.data or cfg.get("architectures", [""])[0] == "DeepseekV32ForCausalLM"
    return Attention(
        kind="mla_nsa" if nsa else "mla",
        heads=heads,
        kv_heads=heads,
        q_lora_rank=cfg.count("q_lora_rank"),
        kv_lora_rank=cfg.need("kv_lora_rank"),
        qk_nope_head_dim=cfg.need("qk_nope_head_dim"),
        qk_rope_head_dim=cfg.need("qk_rope_head_dim"),
        v_head_dim=cfg.need("v_head_dim"),
        index_n_heads=cfg.count("index_n_heads"),
        index_head_dim=cfg.count("index_head_dim"),
        full_attention_layers=layers,
    )


def qwen3_next_attention(cfg: ConfigReader, layers: int) -> Attention:
    full = sum(1 for i in range(layers) if is_full_attention(cfg.data, i))
    return gqa_attention(cfg, layers, "hybrid_linear", full)


def is_full_attention(cfg: dict[str, Any], layer: int) -> bool:
    """Qwen3-Next / Qwen3.5: config `layer_types` when given, else every `full_attention_interval`-th layer
    (sglang/srt/configs/qwen3_5.py and qwen3_next.py derive layer_types the same way)."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and layer < len(types):
        return types[layer] == "full_attention"
    interval = cfg.get("full_attention_interval") or 4
    return (layer + 1) % int(interval) == 0


def gpt_oss_attention(cfg: ConfigReader, layers: int) -> Attention:
    types = cfg.get("layer_types") or ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    if not isinstance(types, list):
        raise BadInput(f"{cfg.where}: config.json 'layer_types' must be a list")
    full = sum(1 for t in types if t == "full_attention")
    return gqa_attention(cfg, layers, "gqa_swa", full, cfg.count("sliding_window", 128))


def deepseek_moe(cfg: ConfigReader, layers: int) -> MoeLayout:
    moe_inter = cfg.need("moe_intermediate_size")
    shared = cfg.count("n_shared_experts")
    first_dense, freq = cfg.count("first_k_dense_replace"), cfg.count("moe_layer_freq", 1) or 1
    return MoeLayout(
        experts=cfg.need("n_routed_experts"),
        moe_intermediate=moe_inter,
        moe_layers=tuple(i for i in range(layers) if i >= first_dense and i % freq == 0),
        shared_experts=shared,
        shared_intermediate=moe_inter * shared,
        score_bias=cfg.get("topk_method") == "noaux_tc",
        dense_intermediate=cfg.count("intermediate_size"),
    )


def glm4_moe(cfg: ConfigReader, layers: int) -> MoeLayout:
    moe_inter = cfg.need("moe_intermediate_size")
    shared = cfg.count("n_shared_experts")
    return MoeLayout(
        experts=cfg.need("n_routed_experts"),
        moe_intermediate=moe_inter,
        moe_layers=tuple(range(cfg.count("first_k_dense_replace"), layers)),
        shared_experts=shared,
        shared_intermediate=moe_inter * shared,
        score_bias=True,
        dense_intermediate=cfg.count("intermediate_size"),
    )


def qwen3_moe(cfg: ConfigReader, layers: int, shared_key: str | None = None) -> MoeLayout:
    step = cfg.count("decoder_sparse_step", 1) or 1
    only_mlp = cfg.get("mlp_only_layers") or []
    if not isinstance(only_mlp, list):
        raise BadInput(f"{cfg.where}: config.json 'mlp_only_layers' must be a list of layer numbers")
    shared_inter = cfg.count(shared_key) if shared_key else 0
    return MoeLayout(
        experts=cfg.need("num_experts"),
        moe_intermediate=cfg.need("moe_intermediate_size"),
        moe_layers=tuple(i for i in range(layers) if i not in set(only_mlp) and (i + 1) % step == 0),
        shared_experts=1 if shared_inter else 0,
        shared_intermediate=shared_inter,
    )


def every_layer_moe(score_bias: bool) -> Callable[[ConfigReader, int], MoeLayout]:
    """Mixtral, MiniMax-M2, gpt-oss: every layer is MoE and intermediate_size is one expert's width."""

    def read(cfg: ConfigReader, layers: int) -> MoeLayout:
        return MoeLayout(
            experts=cfg.need("num_local_experts"),
            moe_intermediate=cfg.need("intermediate_size"),
            moe_layers=tuple(range(layers)),
            score_bias=score_bias,
        )

    return read


# Qwen3.5 ships as a vision-language model: the decoder's keys are under text_config and its tensors under
# model.language_model. (sglang/srt/models/qwen3_5.py:91 matches `model(.language_model)?.layers.N`).
qwen3_5_unwrap = text_config_unwrap("model.language_model.")


def kimi_vl_unwrap(cfg: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = cfg.get("text_config")
    if not isinstance(text, dict) or (cfg.get("architectures") or [""])[0] != "KimiK25ForConditionalGeneration":
        return cfg, "model."
    quant = text.get("quantization_config", cfg.get("quantization_config"))
    return {**text, "quantization_config": quant}, "language_model.model."


# --- which tensors a layer has ----------------------------------------------------------------------------------


def mla_tensors(p: str, a: Arch, i: int) -> Iterator[Tensor]:
    return mla(f"{p}.self_attn", a)


def gqa_tensors(
    bias: bool = False, qk_norm: str = "", sinks: bool = False
) -> Callable[[str, Arch, int], Iterator[Tensor]]:
    def layer(p: str, a: Arch, i: int) -> Iterator[Tensor]:
        norm = "" if qk_norm == "per_head_optional" and not a.qk_norm else qk_norm.replace("_optional", "")
        return gqa(f"{p}.self_attn", a, bias=bias, qk_norm=norm, out_bias=sinks, sinks=sinks)

    return layer


def hybrid_tensors(split_projections: bool) -> Callable[[str, Arch, int], Iterator[Tensor]]:
    """Qwen3-Next (fused in_proj_qkvz / in_proj_ba) and Qwen3.5 (in_proj_qkv, _z, _b, _a: qwen3_5.py:270-305)."""

    def layer(p: str, a: Arch, i: int) -> Iterator[Tensor]:
        if i in a.full_attention_at:
            return gqa(f"{p}.self_attn", a, bias=False, qk_norm="per_head", gate=True)
        return linear_attention(f"{p}.linear_attn", a, split_projections)

    return layer


def gate_experts_shared(p: str, a: Arch) -> Iterator[Tensor]:
    """DeepSeek, Kimi, GLM, Qwen3: mlp.gate (+ score bias), mlp.experts.N, mlp.shared_experts."""
    yield plain(f"{p}.mlp.gate.weight", (a.routed_experts, a.hidden))
    if a.score_bias:
        yield plain(f"{p}.mlp.gate.e_score_correction_bias", (a.routed_experts,), "F32")
    yield from experts(f"{p}.mlp.experts", a)
    if a.shared_intermediate:
        yield from mlp(f"{p}.mlp.shared_experts", a.shared_intermediate, a.hidden, a.other_format)


def qwen3_shared_expert(p: str, a: Arch) -> Iterator[Tensor]:
    """Qwen3-Next / Qwen3.5: one gated shared expert."""
    if a.shared_intermediate:
        yield from mlp(f"{p}.mlp.shared_expert", a.shared_intermediate, a.hidden, a.other_format)
        yield plain(f"{p}.mlp.shared_expert_gate.weight", (1, a.hidden))


def qwen3_next_moe_tensors(p: str, a: Arch) -> Iterator[Tensor]:
    yield plain(f"{p}.mlp.gate.weight", (a.routed_experts, a.hidden))
    yield from experts(f"{p}.mlp.experts", a)
    yield from qwen3_shared_expert(p, a)


def qwen3_5_moe_tensors(p: str, a: Arch) -> Iterator[Tensor]:
    """Qwen3.5 stores each layer's experts packed: gate_up_proj [E, 2I, H] and down_proj [E, H, I] (kt-kernel's BF16
    loader reads exactly these, kt_kernel/utils/loader.py:573-582, 690-712)."""
    if a.expert_format.kind != "bf16":  # quantized Qwen3.5 releases keep per-expert tensors, as Qwen3-Next
        yield from qwen3_next_moe_tensors(p, a)
        return
    e, i, h = a.routed_experts, a.moe_intermediate, a.hidden
    yield plain(f"{p}.mlp.gate.weight", (e, h))
    yield plain(f"{p}.mlp.experts.gate_up_proj", (e, 2 * i, h))
    yield plain(f"{p}.mlp.experts.down_proj", (e, h, i))
    yield from qwen3_shared_expert(p, a)


def block_sparse_moe_tensors(p: str, a: Arch) -> Iterator[Tensor]:
    """Mixtral: block_sparse_moe.gate, experts.N.w1/w3/w2 (no score bias: MiniMax-M2's is in minimax_m3.moe_tensors)."""
    yield plain(f"{p}.block_sparse_moe.gate.weight", (a.routed_experts, a.hidden))
    yield from experts(f"{p}.block_sparse_moe.experts", a, ("w1", "w3", "w2"))


def gpt_oss_moe_tensors(p: str, a: Arch) -> Iterator[Tensor]:
    yield plain(f"{p}.mlp.router.weight", (a.routed_experts, a.hidden))
    yield plain(f"{p}.mlp.router.bias", (a.routed_experts,))
    yield from gpt_oss_experts(f"{p}.mlp.experts", a)
