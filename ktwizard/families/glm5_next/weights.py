"""GLM-5-Next's tensors every TP rank holds whole, and its KDA layers' state (moved from planner/memory/items.py and
linear_state.py, issue #50; the family answers Glm5Next.replicated_attention and linear_layer_state)."""

from __future__ import annotations

from ktwizard.models.formats import WeightFormat
from ktwizard.models.spec import ModelSpec
from ktwizard.models.tensors import linear


def _linear_bytes(out_f: int, in_f: int, fmt: WeightFormat) -> int:
    return sum(t.nbytes for t in linear("w", out_f, in_f, fmt))


def replicated(spec: ModelSpec) -> int:
    """GLM-5-Next's attention and mHC tensors every rank holds whole (sizes as models/glm5_next.py counts them):
    DSA layers' q_a / kv_a projections and their norms (deepseek_v2.py:1485-1511) and the whole KPool indexer
    (ReplicatedLinear wq_b / wk / weights_proj, its norm, gate and ape: nsa_indexer_kpool.py:111-148); KDA layers'
    f_a / g_a (kimi_linear.py:240-269), the GLM b_proj (ReplicatedLinear, glm5_next.py:335-341) and o_norm; and every
    layer's hyper-connection parameters (plain nn.Parameters, glm5_next.py:605-615: the 'other' group)."""
    a, h, f = spec.attention, spec.hidden, spec.other_format
    ih, idim, ql = a.index_n_heads, a.index_head_dim, a.q_lora_rank
    dsa = (
        _linear_bytes(ql, h, f)
        + _linear_bytes(a.kv_lora_rank + a.qk_rope_head_dim, h, f)
        + (ql + a.kv_lora_rank) * 2
        + (ih * idim * ql + idim * h + 2 * idim + ih * h + idim * h + 4 * idim) * 2
    )
    n, d = a.linear_value_heads, a.linear_value_head_dim
    kda = (2 * d * h + n * h + d) * 2
    linear_layers = spec.layers - a.full_attention_layers
    return dsa * a.full_attention_layers + kda * linear_layers + spec.bytes_by_group.get("other", 0)


def kda_layer_state(spec: ModelSpec, tp: int) -> tuple[int, int]:
    """GLM-5-Next's KDA layers: KimiLinearStateShape.create (mamba_utils.py:197-232, called by configs/glm5_next.py
    mamba2_cache_params): three conv states (q, k, v) of heads x head_dim / tp x (kernel - 1), and a temporal state
    of heads / tp x head_dim x head_dim. (conv elements, SSM elements) of one request on one rank."""
    a = spec.attention
    conv = 3 * (a.linear_value_heads * a.linear_value_head_dim // tp) * (a.linear_conv_kernel - 1)
    ssm = a.linear_value_heads // tp * a.linear_value_head_dim * a.linear_value_head_dim
    return conv, ssm
