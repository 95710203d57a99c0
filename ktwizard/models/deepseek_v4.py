"""DeepSeek-V4 (Flash, Pro): how its config reads and every tensor its native checkpoint holds.

The checkpoint keeps DeepSeek's own names (`embed.weight`, `layers.N.attn.wq_a.weight`, `layers.N.ffn.experts.E.w1
.weight`, `mtp.0.*`), which sglang-kt 0.7.2 renames while loading (models/deepseek_v4.py:1609-1679
remap_weight_name_to_dpsk_hf_format); the shapes are the model class's parameters (models/deepseek_v4.py:224-670
Compressor / C4Indexer / MQALayer, :979-1038 the decoder layer's hyper-connections, :1243-1295 the model's).

Attention is one shared KV head (MQA, head_dim 512 of which 64 rotary) over three kinds of layer, by
`compress_ratios[layer]`: 0 keeps only a 128-token sliding window; 128 adds a compressor that pools every 128 tokens
into one KV entry; 4 pools every 4 tokens (overlapping windows) and adds an indexer that picks `index_topk` of them.
Routed experts are MXFP4 (`expert_dtype: fp4`), everything else block-FP8 with ue8m0 scales under `.scale`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ktwizard.errors import BadInput
from ktwizard.models.arch import Arch, ConfigReader
from ktwizard.models.formats import WeightFormat
from ktwizard.models.spec import Attention
from ktwizard.models.tensors import Tensor, experts, hyper_connections, linear, mlp, plain
from ktwizard.runtime.version import KT_KERNEL

ARCHITECTURE = "DeepseekV4ForCausalLM"
RATIOS = (0, 4, 128)  # models/deepseek_v4.py:502 asserts these
FP8_UE8M0 = WeightFormat("fp8_ue8m0", 128)
MXFP4 = WeightFormat("mxfp4", 32)


def formats(cfg: dict) -> tuple[WeightFormat, WeightFormat]:
    """(routed experts, every other quantized linear). deepseek-ai's checkpoints declare fp8 (e4m3, 128 x 128 blocks,
    ue8m0 scales) for the model and `expert_dtype: fp4` for the routed experts, which ship as MXFP4
    (configs/_model_config_dsv4.py:97-104 tells FP4 from FP8 experts by the same key's dtype)."""
    q = cfg.get("quantization_config")
    if not q and cfg.get("expert_dtype") == "fp4":
        # NVIDIA's NVFP4 releases keep their quantization in hf_quant_config.json and the native `ffn.experts.E.w1`
        # names, which kt-kernel 0.7.2's NVFP4 loader does not read (it looks for mlp.experts.E.gate_proj,
        # kt_kernel/utils/loader.py:1316-1335): refused rather than sized as BF16
        raise BadInput(
            "this DeepSeek-V4 checkpoint declares FP4 experts without a quantization_config (NVIDIA's ModelOpt NVFP4 "
            f"release?): {KT_KERNEL}'s NVFP4 loader reads mlp.experts.*.gate_proj names, not V4's ffn.experts.*.w1 "
            "(kt_kernel/utils/loader.py:1316-1335); use deepseek-ai's own checkpoint with --method MXFP4"
        )
    if not q:
        return WeightFormat("bf16"), WeightFormat("bf16")
    method = str(q.get("quant_method", "")).lower() if isinstance(q, dict) else ""
    if method != "fp8":
        raise BadInput(
            f"DeepSeek-V4 with quantization '{method}' is not supported yet: ktwizard sizes deepseek-ai's own FP8 + "
            "MXFP4 checkpoints (deepseek-ai/DeepSeek-V4-Flash, -Pro)"
        )
    return (MXFP4 if cfg.get("expert_dtype") == "fp4" else FP8_UE8M0), FP8_UE8M0


def compress_ratios(cfg: ConfigReader, layers: int) -> tuple[int, ...]:
    ratios = cfg.get("compress_ratios")
    if not isinstance(ratios, list) or len(ratios) < layers or not all(r in RATIOS for r in ratios):
        raise BadInput(
            f"{cfg.where}: config.json 'compress_ratios' must list 0, 4 or 128 for each of the {layers} layers"
        )
    if len(ratios) > 4 * layers:
        raise BadInput(f"{cfg.where}: config.json 'compress_ratios' is longer than any real model")
    return tuple(int(r) for r in ratios)


def attention(cfg: ConfigReader, layers: int) -> Attention:
    """MQALayer's facts (models/deepseek_v4.py:458-670). `head_dim` is the 2604 checkpoints' key; the nope part is
    head_dim - rope (configs/model_config.py:569-571, SGLANG_DSV4_MODE=2604)."""
    heads = cfg.need("num_attention_heads")
    rope = cfg.need("qk_rope_head_dim")
    head_dim = cfg.count("head_dim") or (cfg.count("qk_nope_head_dim") + rope)
    if head_dim <= rope:
        raise BadInput(f"{cfg.where}: config.json 'head_dim' must exceed qk_rope_head_dim")
    if cfg.count("num_key_value_heads", 1) != 1:
        raise BadInput(f"{cfg.where}: DeepSeek-V4 has one KV head (models/deepseek_v4.py:503 asserts it)")
    groups = cfg.need("o_groups")
    if groups == 0 or heads % groups:
        raise BadInput(f"{cfg.where}: config.json 'o_groups' must divide num_attention_heads")
    return Attention(
        kind="dsv4",
        heads=heads,
        kv_heads=1,
        head_dim=head_dim,
        q_lora_rank=cfg.need("q_lora_rank"),
        qk_nope_head_dim=head_dim - rope,
        qk_rope_head_dim=rope,
        v_head_dim=head_dim,
        index_n_heads=cfg.need("index_n_heads"),
        index_head_dim=cfg.need("index_head_dim"),
        full_attention_layers=layers,
        sliding_window=cfg.count("sliding_window") or cfg.count("window_size", 128),
        compress_ratios=compress_ratios(cfg, layers),
        o_lora_rank=cfg.need("o_lora_rank"),
        o_groups=groups,
        index_topk=cfg.need("index_topk"),
        hc_mult=cfg.count("hc_mult", 4),
    )


def hash_layers(cfg: ConfigReader) -> int:
    """The first layers route by token id (`ffn.gate.tid2eid`), not by score: deepseek_v2.py:439-483 reads
    `num_hash_layers` (the checkpoint's key; the config class's default is n_hash_layers = 3)."""
    return cfg.count("num_hash_layers", cfg.count("n_hash_layers", 3))


# --- the checkpoint's tensors --------------------------------------------------------------------------------------


def _compressor(p: str, a: Arch, ratio: int, head_dim: int) -> Iterator[Tensor]:
    """Compressor (models/deepseek_v4.py:224-262): wkv and wgate in BF16 (loaded fused as wkv_gate, :1950-1977),
    ratio 4 overlapping two windows (coff 2), an fp32 positional table `ape` [ratio, coff x head_dim]."""
    coff = 2 if ratio == 4 else 1
    yield plain(f"{p}.wkv.weight", (coff * head_dim, a.hidden))
    yield plain(f"{p}.wgate.weight", (coff * head_dim, a.hidden))
    yield plain(f"{p}.norm.weight", (head_dim,))
    yield plain(f"{p}.ape", (ratio, coff * head_dim), "F32")


def _attention(p: str, a: Arch, ratio: int) -> Iterator[Tensor]:
    at, h, f = a.attention, a.hidden, a.other_format
    yield plain(f"{p}.q_norm.weight", (at.q_lora_rank,))
    yield plain(f"{p}.kv_norm.weight", (at.head_dim,))
    yield plain(f"{p}.attn_sink", (at.heads,), "F32")
    yield from linear(f"{p}.wq_a", at.q_lora_rank, h, f)
    yield from linear(f"{p}.wq_b", at.heads * at.head_dim, at.q_lora_rank, f)
    yield from linear(f"{p}.wkv", at.head_dim, h, f)
    yield from linear(f"{p}.wo_a", at.o_groups * at.o_lora_rank, at.heads * at.head_dim // at.o_groups, f)
    yield from linear(f"{p}.wo_b", h, at.o_groups * at.o_lora_rank, f)
    if ratio:
        yield from _compressor(f"{p}.compressor", a, ratio, at.head_dim)
    if ratio == 4:  # C4Indexer (models/deepseek_v4.py:358-405)
        yield from linear(f"{p}.indexer.wq_b", at.index_n_heads * at.index_head_dim, at.q_lora_rank, f)
        yield plain(f"{p}.indexer.weights_proj.weight", (at.index_n_heads, h))
        yield from _compressor(f"{p}.indexer.compressor", a, 4, at.index_head_dim)


def _ffn(p: str, a: Arch, hashed: bool) -> Iterator[Tensor]:
    """The MoE block: a BF16 gate; hash layers keep a token-id -> experts table instead of the score bias
    (deepseek_v2.py:338, :534); routed experts w1/w3/w2 (gate/up/down); one shared expert in the model's format."""
    yield plain(f"{p}.gate.weight", (a.routed_experts, a.hidden))
    if hashed:
        yield Tensor(f"{p}.gate.tid2eid", (a.vocab, a.experts_per_token), "I64", 0)  # an index table, not weights
    else:
        yield plain(f"{p}.gate.bias", (a.routed_experts,), "F32")
    yield from experts(f"{p}.experts", a, ("w1", "w3", "w2"))
    if a.shared_intermediate:
        yield from mlp(f"{p}.shared_experts", a.shared_intermediate, a.hidden, a.other_format, ("w1", "w3", "w2"))


def _block(p: str, a: Arch, ratio: int, hashed: bool) -> Iterator[Tensor]:
    yield plain(f"{p}.attn_norm.weight", (a.hidden,))
    yield plain(f"{p}.ffn_norm.weight", (a.hidden,))
    yield from hyper_connections(p, a.hidden, a.attention.hc_mult)  # models/deepseek_v4.py:1029-1038
    yield from _attention(f"{p}.attn", a, ratio)
    yield from _ffn(f"{p}.ffn", a, hashed)


def _hc_head(p: str, a: Arch) -> Iterator[Tensor]:
    hc = a.attention.hc_mult
    yield plain(f"{p}hc_head_base", (hc,), "F32")
    yield plain(f"{p}hc_head_fn", (hc, hc * a.hidden), "F32")
    yield plain(f"{p}hc_head_scale", (1,), "F32")


def _mtp(j: int, a: Arch) -> Iterator[Tensor]:
    """The next-n layer under `mtp.{j}.` (models/deepseek_v4_nextn.py; names as :1609-1640 remap them): a decoder block
    with a window-only attention and score-routed experts, the embedding / hidden projections and their norms, and its
    own hyper-connection head. Loaded only for speculative decoding: filed as MTP, apart from the groups."""
    p = f"mtp.{j}"
    yield from _block(p, a, 0, False)
    for name in ("enorm", "hnorm", "norm"):
        yield plain(f"{p}.{name}.weight", (a.hidden,))
    yield from linear(f"{p}.e_proj", a.hidden, a.hidden, a.other_format)
    yield from linear(f"{p}.h_proj", a.hidden, a.hidden, a.other_format)
    yield from _hc_head(f"{p}.", a)


def tensors(a: Arch) -> Iterator[Tensor]:
    """Every tensor of the checkpoint as it names them, the MTP layer(s) under `mtp.` last."""
    yield plain("embed.weight", (a.vocab, a.hidden))
    for i in range(a.layers):
        yield from _block(f"layers.{i}", a, a.attention.compress_ratios[i], i < a.hash_layers)
    yield plain("norm.weight", (a.hidden,))
    yield from _hc_head("", a)
    if not a.tied:
        yield plain("head.weight", (a.vocab, a.hidden))
    for j in range(a.mtp_layers):
        yield from _mtp(j, a)
