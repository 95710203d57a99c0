"""The layer-wise placement as a KTransformers optimize-rule YAML file, in the seed issue's schema: one rule per
device range and rule kind, layer numbers as compact regex alternations such as `([4-9]|[1][0-1])`."""

from __future__ import annotations

from ktwizard.errors import BadInput
from ktwizard.planner.types import Plan
from ktwizard.render.quote import comment
from ktwizard.runtime.version import SGLANG_KT

MODELING = "ktransformers.models.modeling_deepseek"


def _tens(lo: int, hi: int) -> list[str]:
    """Regex alternatives for lo..hi inclusive, one per run of numbers sharing all digits but the last."""
    out = []
    n = lo
    while n <= hi:
        prefix, last = divmod(n, 10)
        top = min(hi, prefix * 10 + 9)
        digits = f"[{last}-{top % 10}]" if top > n else f"[{last}]" if prefix else str(last)
        if prefix == 0:
            out.append(f"[{last}-{top}]" if top > n else str(last))
        else:
            out.append("".join(f"[{d}]" for d in str(prefix)) + digits)
        n = top + 1
    return out


def layer_regex(layers: list[int] | range) -> str:
    """'(...)' alternation matching exactly these layer numbers (runs become ranges)."""
    nums = sorted(set(layers))
    if not nums:
        raise ValueError("no layers")
    alts: list[str] = []
    start = nums[0]
    for prev, cur in zip(nums, [*nums[1:], None], strict=True):
        if cur != prev + 1:
            alts += _tens(start, prev)
            if cur is not None:
                start = cur
    return "(" + "|".join(alts) + ")"


def _dev(gpu: int) -> str:
    return f"cuda:{gpu}"


def kt_rules_data(plan: Plan) -> list[dict]:
    lp = plan.layers
    if lp is None:
        raise BadInput(
            "kt-rules: the injection-rule schema ktwizard writes is DeepSeek-V2's (the seed issue's); this model has "
            "no layer-wise placement"
        )
    if not lp.fits:
        raise BadInput("kt-rules: the layer-wise placement does not fit: " + "; ".join(lp.overflows))
    moe = set(lp.moe_layers)
    rules: list[dict] = [
        {
            "match": {"name": r"^model\.embed_tokens"},
            "replace": {
                "class": "default",
                "kwargs": {"generate_device": _dev(lp.ranges[0].gpu), "prefill_device": _dev(lp.ranges[0].gpu)},
            },
        }
    ]
    ranges = [r for r in lp.ranges if r.last >= r.first]
    for r in ranges:
        d = _dev(r.gpu)
        rules.append(
            {
                "match": {
                    "name": rf"^model\.layers\.{layer_regex(r.layers)}\.",
                    "class": f"{MODELING}.DeepseekV2YarnRotaryEmbedding",
                },
                "replace": {
                    "class": "ktransformers.operators.RoPE.YarnRotaryEmbedding",
                    "kwargs": {"generate_device": d, "prefill_device": d},
                },
            }
        )
    for r in ranges:
        d = _dev(r.gpu)
        rules.append(
            {
                "match": {
                    "name": rf"^model\.layers\.{layer_regex(r.layers)}\.(?!self_attn\.kv_b_proj).*$",
                    "class": "torch.nn.Linear",
                },
                "replace": {
                    "class": "ktransformers.operators.linear.KTransformersLinear",
                    "kwargs": {
                        "generate_device": d,
                        "prefill_device": d,
                        "generate_op": "KLinearMarlin",
                        "prefill_op": "KLinearTorch",
                    },
                },
            }
        )
    for r in ranges:
        moe_here = [i for i in r.layers if i in moe]
        if moe_here:
            d = _dev(r.gpu)
            rules.append(
                {
                    "match": {
                        "name": rf"^model\.layers\.{layer_regex(moe_here)}\.mlp$",
                        "class": f"{MODELING}.DeepseekV2MoE",
                    },
                    "replace": {
                        "class": "ktransformers.operators.experts.KDeepseekV2MoE",
                        "kwargs": {"generate_device": d, "prefill_device": d},
                    },
                }
            )
    for r in ranges:
        d = _dev(r.gpu)
        on_gpu = [i for i in r.layers if i in moe and i not in r.cpu_expert_layers]
        if on_gpu:
            rules.append(
                {
                    "match": {"name": rf"^model\.layers\.{layer_regex(on_gpu)}\.mlp\.experts$"},
                    "replace": {
                        "class": "ktransformers.operators.experts.KTransformersExperts",
                        "kwargs": {
                            "prefill_device": d,
                            "prefill_op": "KExpertsTorch",
                            "generate_device": d,
                            "generate_op": "KExpertsTorch",
                            "out_device": d,
                        },
                    },
                    "recursive": False,
                }
            )
        if r.cpu_expert_layers:
            rules.append(
                {
                    "match": {"name": rf"^model\.layers\.{layer_regex(list(r.cpu_expert_layers))}\.mlp\.experts$"},
                    "replace": {
                        "class": "ktransformers.operators.experts.KTransformersExperts",
                        "kwargs": {
                            "prefill_device": d,
                            "prefill_op": "KExpertsTorch",
                            "generate_device": "cpu",
                            "generate_op": "KExpertsCPU",
                            "out_device": d,
                        },
                    },
                    "recursive": False,
                }
            )
    for r in ranges:
        d = _dev(r.gpu)
        rules.append(
            {
                "match": {"name": rf"^model\.layers\.{layer_regex(r.layers)}\.self_attn$"},
                "replace": {
                    "class": "ktransformers.operators.attention.KDeepseekV2Attention",
                    "kwargs": {"generate_device": d, "prefill_device": d},
                },
            }
        )
    rules.append(
        {
            "match": {"name": "^model$"},
            "replace": {
                "class": "ktransformers.operators.models.KDeepseekV2Model",
                "kwargs": {
                    "per_layer_prefill_intput_threshold": 0,  # (sic) the operator's own spelling; 0 = off
                    "transfer_map": {r.first: _dev(r.gpu) for r in ranges[1:]},
                },
            },
        }
    )
    for i, r in enumerate(ranges):
        d = _dev(r.gpu)
        name = rf"(^model\.layers\.{layer_regex(r.layers)}\.)"
        if i == len(ranges) - 1:
            name += r"|(^model\.norm)|(^lm_head)"
        rules.append(
            {
                "match": {"name": name},
                "replace": {"class": "default", "kwargs": {"generate_device": d, "prefill_device": d}},
            }
        )
    return rules


def kt_rules_text(plan: Plan) -> str:
    import yaml

    lp = plan.layers
    head = [
        f"# KTransformers optimize rules generated by ktwizard for {comment(plan.model.name)} on {comment(plan.host)}",
        "# For the original KTransformers runtime (ktransformers.server / local_chat, --optimize_config_path),",
        f"# not SGLang-KT: {SGLANG_KT} reads no rule file; its placement is the launch flags (--format args).",
    ]
    if lp is not None:
        head += [f"# {comment(line, 400)}" for line in lp.explanation]
    return "\n".join(head) + "\n" + yaml.safe_dump(kt_rules_data(plan), sort_keys=False, width=200)
