"""What a forecast rests on, term by term, for `--explain` and the plan table."""

from __future__ import annotations

from ktwizard.planner.forecast.setup import Setup, StepTime, cpu_bandwidth, upload_copy, vec_switch, weight_decode
from ktwizard.planner.forecast.speeds import socket_bandwidth
from ktwizard.planner.forecast.terms import CORE_BW, HELD_OUT, TERMS, Terms


def rests_on(s: Setup, st: StepTime, t: Terms = TERMS) -> tuple[str, ...]:
    spec, m = s.spec, s.memory
    bw = cpu_bandwidth(s, t)
    return (
        f"CPU experts: {1 - s.hit:.0%} of routed calls at {bw / 1e9:.0f} GB/s sustained = "
        f"{t.cpu_bw_eff:.2f} x {socket_bandwidth(m) / 1e9:.0f} GB/s per socket ({m.channels_per_socket} x "
        f"{m.kind}-{m.speed_mts}, {m.source or 'stated'})"
        + (
            f"; {s.sockets} subpools (--kt-threadpool-count) add threads, not read bandwidth: every published "
            "two-subpool run reads as one socket does (setup.cpu_bandwidth)"
            if s.sockets > 1
            else ""
        )
        + (
            f", never more than the {s.measured_bps / 1e9:.0f} GB/s per socket read measured ({s.measured_source})"
            + (
                " (binds: the memory is slower than its rating)"
                if s.measured_bps < socket_bandwidth(m) * t.cpu_bw_eff
                else ""
            )
            if s.measured_bps is not None
            else ""
        )
        + f", capped at {s.threads} threads x {CORE_BW / 1e9:.0f} GB/s; {st.cpu_s * 1e3:.1f} ms per step",
        f"GPU: dense weights and GPU experts read at {t.gpu_bw_eff:.2f} x {s.gpu.bandwidth / 1e12:.2f} TB/s "
        f"({s.gpu.why}), KV at {t.attn_bw_eff:.2f} x that (decode attention, one query token per stream); "
        f"{st.gpu_s * 1e3:.1f} ms per step",
        f"fixed {t.layer_step_s * 1e3:.2f} ms per MoE layer and step x {spec.moe_layer_count} layers"
        + (f", {t.allreduce_s * 1e6:.0f} us per all-reduce x 2 per layer at TP {s.tp}" if s.tp > 1 else "")
        + f"; {st.fixed_s * 1e3:.1f} ms per step (published small-active models run far below their bandwidth bound)",
        f"GPU hit rate {s.hit:.1%} ("
        + (
            "from routing statistics"
            if s.hit_rate is not None
            else f"{s.gpu_experts} of {spec.routed_experts} experts per layer, uniform placement"
        )
        + ")",
        f"concurrency: distinct experts per step of each group (CPU, GPU) grow as n(1-(1-k share/n)^c), the share "
        f"being the hit rate; CPU math at {t.cpu_flops_eff:.2f} x "
        f"{s.threads} threads x {s.clock / 1e9:.2f} GHz x {s.vec_flops_per_cycle or s.flops_per_cycle} FLOP/cycle "
        f"(kt-kernel's vec path, up to {vec_switch(s)} tokens a pass; {s.flops_per_cycle} above it) bounds batched "
        f"steps ({s.clock_why or 'clock stated'})",
        f"prefill: {t.request_s * 1e3:.0f} ms per request, then chunks of {s.chunk} (the rendered "
        "--chunked-prefill-size); "
        + (
            f"at or above {s.threshold} tokens each layer's CPU experts cross PCIe at {t.pcie_eff:.2f} x "
            f"{s.gpu.pcie / 1e9:.0f} GB/s per GPU, at most {upload_copy(s, t) / 1e9:.0f} GB/s together (rank 0's host "
            f"copy: {t.upload_copy_eff:.2f} x one socket's {socket_bandwidth(m) / 1e9:.0f} GB/s)"
            if s.threshold is not None
            else "no layerwise path"
        )
        + f"; GPU GEMMs and attention at {t.gpu_flops_eff:.2f} x {s.gpu.flops / 1e12:.0f} TFLOP/s",
        "terms fitted to published SGLang-KT runs (what each rests on: docs/forecast.md) and validated on machines "
        "and authors never fitted; ranges are "
        "the held-out error's 10th-90th percentile ("
        + ", ".join(f"{k} {lo:+.0%}..{hi:+.0%}" for k, (lo, hi) in HELD_OUT.items())
        + "; "
        "benchmarks/results/forecast-validation.md)",
        *((decode_note(s),) if s.decode_cycles else ()),
        *((note,) if (note := model_note(spec.model_type)) else ()),
    )


NEW_MODELS = "benchmarks/results/forecast-validation-new-models.md"


def decode_note(s: Setup) -> str:
    spec = s.spec
    weights = (
        spec.experts_per_token
        * (1 - s.hit)
        * spec.moe_layer_count
        * spec.params_by_group.get("routed_experts", 0)
        / max(1, spec.moe_layer_count * spec.routed_experts)
    )
    one = weights * weight_decode(s, spec.experts_per_token / max(1, spec.routed_experts))
    return (
        f"{s.method} experts: kt-kernel decodes each weight to BF16 on the shuffle pipes before its dot product "
        f"({s.decode_cycles:.3f} cycles per weight from the kernel's instruction count, per token on the mat-vec "
        f"path): {one * 1e3:.1f} ms per step for one stream on {s.threads} threads, a floor under the CPU experts' time"
    )


def model_note(model_type: str) -> str:
    """What the forecast of a model no fit has seen rests on: the published figures it was checked against, if any
    (never fitted, outside the band's evidence)."""
    if model_type == "deepseek_v4":
        return (
            "DeepSeek-V4: no V4 run was fitted; decode attention reads each layer's window, the indexer's top-k and "
            "the compressed entries. Checked on KT's 8 x RTX 5090 tutorial (26.5 tok/s, 8 threads): +14 %, CPU "
            f"assumed; another author's Xeon Gold 6138 run (AMXINT4, top-4): -10 % ({NEW_MODELS})"
        )
    if model_type.startswith("glm5_next"):
        return (
            "GLM-5-Next: NOT validated. The one published figure (KT PR #2173: 4 x RTX 5090, 64 threads, no GPU "
            "experts) decodes at 15.4 tok/s where this model forecasts 2.0 x that (cause unresolved: per-layer "
            f"hyper-connection and KDA work, or thread oversubscription); read decode as an upper bound ({NEW_MODELS})"
        )
    if model_type.startswith("qwen3_5"):
        return (
            "Qwen3.5: prefill checked on ktransformers#1914 (Qwen3.5-122B-A10B-FP8, AVX2 build): -2 % to +25 % from "
            "969 tokens, +68 % for a 2-token prompt; "
            f"its decode shares Qwen3-Next's fitted terms but no Qwen3.5 decode figure was checked ({NEW_MODELS})"
        )
    if model_type.startswith("minimax_m3") or model_type == "glm_moe_dsa":
        return "no published SGLang-KT figure for this model: the forecast is the fitted terms applied to its facts"
    return ""
