"""Write the pool configurations the device run constructs (benchmarks/pool_bytes_device.py), from the bundled
presets' attention facts: python benchmarks/pool_bytes_cases.py OUT.json"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ktwizard.models import dsv4_kv
from ktwizard.models.presets import _spec
from ktwizard.planner.memory import linear_state


def cases() -> list[dict]:
    out: list[dict] = []
    for p in ("glm-5", "deepseek-v3.2"):
        a = _spec(p).attention
        for size in (65536, 262144):
            for dt in ("fp8", "bf16"):
                out.append(
                    dict(
                        id=f"{p}/nsa/{dt}/{size}",
                        preset=p,
                        kind="nsa",
                        kv_dtype=dt,
                        size=size,
                        kv_lora_rank=a.kv_lora_rank,
                        qk_rope_head_dim=a.qk_rope_head_dim,
                        layers=a.full_attention_layers,
                        index_head_dim=a.index_head_dim,
                    )
                )
    for p in ("minimax-m3", "minimax-m3-mxfp8"):
        s = _spec(p)
        a = s.attention
        for size in (65536, 262144):
            for dt in ("bf16", "fp8"):
                out.append(
                    dict(
                        id=f"{p}/msa/{dt}/{size}",
                        preset=p,
                        kind="minimax_sparse",
                        kv_dtype=dt,
                        size=size,
                        page_size=1,
                        layers=s.layers,
                        kv_heads=a.kv_heads,
                        head_dim=a.head_dim,
                        index_head_dim=a.index_head_dim,
                        index_layers=a.index_layers,
                        index_value_layers=a.index_value_layers,
                        tp=1,
                    )
                )
    for p in ("deepseek-v4-flash", "deepseek-v4-pro"):
        s = _spec(p)
        a = s.attention
        for tokens, chunk, conc in ((65536, 8192, 4), (262144, 16384, 8), (1048576, 8192, 1)):
            cap = dsv4_kv.full_tokens(tokens, chunk, conc)
            out.append(
                dict(
                    id=f"{p}/dsv4/{tokens}/{chunk}/{conc}",
                    preset=p,
                    kind="dsv4",
                    tokens=tokens,
                    chunk=chunk,
                    concurrency=conc,
                    max_total_tokens=cap,
                    swa_ratio=dsv4_kv.swa_ratio(cap, chunk, conc),
                    max_num_reqs=conc,
                    layers=s.layers,
                    compress_ratios=list(a.compress_ratios),
                    qk_nope_head_dim=a.qk_nope_head_dim,
                    qk_rope_head_dim=a.qk_rope_head_dim,
                    index_head_dim=a.index_head_dim,
                    window=a.sliding_window,
                )
            )
    for p, tps in (
        ("qwen3.5-397b-a17b", (1, 2)),
        ("qwen3.5-35b-a3b", (1,)),
        ("qwen3-next-80b-a3b", (1,)),
        ("glm-5.3-flash", (1, 2)),
    ):
        s = _spec(p)
        a = s.attention
        for tp in tps:
            for conc in (4, 16):
                slots = linear_state.slots(conc, linear_state.slots_per_request(s))
                out.append(
                    dict(
                        id=f"{p}/state/tp{tp}/{conc}",
                        preset=p,
                        kind="kda" if a.kind == "hybrid_dsa" else "mamba",
                        tp=tp,
                        concurrency=conc,
                        slots=slots,
                        linear_layers=linear_state.linear_layers(s),
                        linear_key_heads=a.linear_key_heads,
                        linear_key_head_dim=a.linear_key_head_dim,
                        linear_value_heads=a.linear_value_heads,
                        linear_value_head_dim=a.linear_value_head_dim,
                        linear_conv_kernel=a.linear_conv_kernel,
                    )
                )
    for p in ("qwen3.5-397b-a17b", "qwen3-next-80b-a3b"):
        s = _spec(p)
        a = s.attention
        for size in (65536, 262144):
            out.append(
                dict(
                    id=f"{p}/full_kv/bf16/{size}",
                    preset=p,
                    kind="mha_full",
                    kv_dtype="bf16",
                    size=size,
                    page_size=1,
                    layers=a.full_attention_layers,
                    kv_heads=a.kv_heads,
                    head_dim=a.head_dim,
                    tp=1,
                )
            )
    a = _spec("glm-5.3-flash").attention
    for size in (65536, 262144):
        for dt in ("fp8", "bf16"):
            for conc in (1, 4):
                out.append(
                    dict(
                        id=f"glm-5.3-flash/dsa/{dt}/{size}/{conc}",
                        preset="glm-5.3-flash",
                        kind="glm5_next_dsa",
                        kv_dtype=dt,
                        size=size,
                        concurrency=conc,
                        req_pool_size=conc,
                        kv_lora_rank=a.kv_lora_rank,
                        layers=a.full_attention_layers,
                        index_head_dim=a.index_head_dim,
                    )
                )
    for p, conc in (("glm-5", 3), ("deepseek-v4-flash", 1), ("minimax-m3", 8)):
        out.append(dict(id=f"{p}/req_table/65536/{conc}", preset=p, kind="req_table", context=65536, concurrency=conc))
    for p in ("qwen3.5-397b-a17b", "qwen3-next-80b-a3b"):
        s = _spec(p)
        a = s.attention
        conc = 4
        out.append(
            dict(
                id=f"{p}/hybrid_req/65536/{conc}",
                preset=p,
                kind="hybrid_req",
                context=65536,
                concurrency=conc,
                tp=1,
                slots=linear_state.slots(conc, linear_state.slots_per_request(s)),
                linear_layers=linear_state.linear_layers(s),
                linear_key_heads=a.linear_key_heads,
                linear_key_head_dim=a.linear_key_head_dim,
                linear_value_heads=a.linear_value_heads,
                linear_value_head_dim=a.linear_value_head_dim,
                linear_conv_kernel=a.linear_conv_kernel,
            )
        )
    return out


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(cases(), indent=1))
    print(len(cases()), "cases")
