"""Throughput before launch: decode per stream and in total, and prefill (time to first token), at the plan's own
context and concurrency. Each step's time is a sum of stated terms (planner/forecast/terms.py says what each rests
on; docs/forecast.md says why): the CPU-resident experts that a step's tokens reach, read at the bandwidth of the
sockets kt-kernel's NUMA subpools span (each subpool holds its slice of every expert in its own node's memory), or
computed at the CPU's peak when batches grow; the GPU's weights read at its bandwidth and its KV at the rate decode
attention reaches; a fixed cost per MoE layer and step; all-reduces under tensor parallelism. Prefill runs in the
rendered --chunked-prefill-size chunks: below the layerwise threshold the CPU computes its experts, above it each
layer's CPU experts are uploaded over PCIe and run on the GPU; a request pays a fixed cost once."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ktwizard.models.spec import ModelSpec
from ktwizard.planner.forecast.attention import attention_flops, attention_read
from ktwizard.planner.forecast.explain import rests_on
from ktwizard.planner.forecast.setup import Setup, StepTime, cpu_bandwidth, cpu_flops, upload_copy, weight_decode
from ktwizard.planner.forecast.terms import HELD_OUT, TERMS, Terms
from ktwizard.planner.memory import items as M

DECODE_CONTEXTS = (0, 2048, 8192, 32768, 131072)
PREFILL_PROMPTS = (1024, 2048, 8192, 32768)


def _expert_params(spec: ModelSpec) -> float:
    return spec.params_by_group.get("routed_experts", 0) / max(1, spec.moe_layer_count * spec.routed_experts)


def touched(experts: int, share: float, k: int, tokens: int) -> float:
    """Expected distinct experts of a group of `experts` that `tokens` tokens reach, each token picking k experts
    and the group drawing `share` of the picks, spread evenly inside the group: experts x (1 - (1 - k share /
    experts)^tokens). The whole layer (share 1) at one token: k."""
    if experts <= 0 or share <= 0:
        return 0.0
    p = min(1.0, k * share / experts)  # one token's chance of picking a given expert of the group
    return experts * (1 - (1 - p) ** max(0, tokens))


def touched_split(s: Setup, tokens: int) -> tuple[float, float]:
    """Distinct CPU and GPU experts per layer that a step of `tokens` reaches. The GPU's share of routed picks is the
    hit rate: the recorded statistics' when a placement file is given, else the GPU experts' count share (uniform
    routing). With many streams the union covers nearly all of a group, whatever its share."""
    E, k, g = s.spec.routed_experts, s.spec.experts_per_token, min(s.gpu_experts, s.spec.routed_experts)
    return touched(E - g, 1 - s.hit, k, tokens), touched(g, s.hit, k, tokens)


def _cpu_experts(s: Setup, tokens: int, t: Terms) -> float:
    """The CPU-resident experts for `tokens` tokens (a decode batch or a prefill chunk): their reads at the host's
    bandwidth, their math at its peak, or (MXFP4 / MXFP8) their weights' decode to BF16, whichever binds."""
    spec, L = s.spec, s.spec.moe_layer_count
    on_cpu = 1 - s.hit
    read = touched_split(s, tokens)[0] * L * M.cpu_bytes_per_expert(spec, s.method) / cpu_bandwidth(s, t)
    weights = tokens * spec.experts_per_token * on_cpu * L * _expert_params(spec)  # routed weights the CPU multiplies
    math = 2.0 * weights / cpu_flops(s, t, tokens)
    # microscaled methods (MXFP4 / MXFP8) decode each weight to BF16 on the shuffle pipes, per token at decode
    decode = weights * weight_decode(s, tokens * spec.experts_per_token / max(1, spec.routed_experts))
    return max(read, math, decode)


def decode_step(s: Setup, context: int, concurrency: int, t: Terms = TERMS) -> StepTime:
    spec, L = s.spec, s.spec.moe_layer_count
    c = max(1, concurrency)
    dense = M.non_expert_per_rank(spec, s.tp) - spec.bytes_by_group.get("embeddings", 0) // s.tp
    gpu_experts = touched_split(s, c)[1] * L * M.gpu_side_expert_bytes(spec) / s.tp
    gpu = (dense + gpu_experts) / (s.gpu.bandwidth * t.gpu_bw_eff) + attention_read(s, context, c, t)
    fixed = L * t.layer_step_s + (2 * spec.layers * t.allreduce_s if s.tp > 1 else 0.0)
    return StepTime(cpu_s=_cpu_experts(s, c, t), gpu_s=gpu, fixed_s=fixed)


def prefill_chunk(s: Setup, n: int, prefix: int, t: Terms = TERMS) -> tuple[float, str]:
    """Seconds for one prefill chunk of `n` tokens after `prefix`, and the path the runtime takes for it."""
    spec = s.spec
    E, k, L = spec.routed_experts, spec.experts_per_token, spec.moe_layer_count
    gpu_flops = s.gpu.flops * t.gpu_flops_eff
    # FP8 checkpoints run their GEMMs on FP8 tensor cores (Ada, Hopper, Blackwell): twice the BF16 rate
    gemm_flops = gpu_flops * (2 if spec.other_format.kind.startswith("fp8") and s.gpu.fp8 else 1)
    attn = attention_flops(spec, n, prefix) / s.tp / gpu_flops
    fixed = L * t.layer_step_s
    routed_active = k * L * _expert_params(spec)
    if s.threshold is not None and n >= s.threshold:
        # Each rank uploads its shard over its own link, all links together no faster than the host's copy path.
        link = min(s.tp * s.gpu.pcie * t.pcie_eff, upload_copy(s, t))
        # kt_ep_wrapper.py (_prepare_weight_*): expert by expert, rank 0 writes every rank's shard into a pinned
        # double buffer, then each rank copies its own shard; the write of one overlaps the copies of the last.
        # (A fixed cost per expert for its barrier fits to 0 on the published runs.)
        upload = (E - s.gpu_experts) * L * M.gpu_side_expert_bytes(spec) / link
        math = 2.0 * n * spec.params_active / s.tp / gemm_flops  # the published runs show no overlap with the upload
        return upload + math + attn + fixed + _allreduce(s, n, t), "layerwise"
    on_cpu = 1 - s.hit
    dense = 2.0 * n * (spec.params_active - routed_active * on_cpu) / s.tp / gemm_flops
    return _cpu_experts(s, n, t) + dense + attn + fixed + _allreduce(s, n, t), "hybrid"


def _allreduce(s: Setup, n: int, t: Terms) -> float:
    """Tensor parallelism all-reduces every layer's attention and MoE output for all `n` tokens (BF16): a ring
    moves 2 (tp - 1) / tp of it through each GPU's link."""
    if s.tp == 1:
        return 0.0
    size = n * s.spec.hidden * 2
    return 2 * s.spec.layers * size * 2 * (s.tp - 1) / s.tp / (s.gpu.pcie * t.ar_bw_eff)


def prefill_time(s: Setup, prompt: int, t: Terms = TERMS) -> tuple[float, str]:
    """Time to first token: the request's fixed cost (tokenizing, scheduling, the first token's sampling and
    return), then the prompt in chunks of the rendered --chunked-prefill-size."""
    total, done, paths = t.request_s, 0, set()
    while done < prompt:
        n = min(s.chunk, prompt - done)
        secs, path = prefill_chunk(s, n, done, t)
        total, done = total + secs, done + n
        paths.add(path)
    return total, "+".join(sorted(paths)) or "none"


def band(value: float, kind: str) -> tuple[float, float]:
    """The range a forecast `value` of `kind` (decode | prefill) carries: what the published figures lay at, given
    the 10th and 90th percentile of the held-out error (forecast / published - 1) on sources never fitted."""
    lo, hi = HELD_OUT[kind]
    return round(value / (1 + hi), 1), round(value / (1 + lo), 1)


@dataclass(frozen=True)
class DecodePoint:
    """Forecast decode speed at one context length and concurrency."""

    context_tokens: int
    concurrency: int
    tok_s_per_stream: float
    tok_s_total: float
    range: tuple[float, float] = (0.0, 0.0)  # tok/s per stream, from the held-out error (band)


@dataclass(frozen=True)
class PrefillPoint:
    """Forecast prefill speed and time to first token for one prompt length."""

    prompt_tokens: int
    tok_s: float
    ttft_s: float
    path: str  # hybrid (CPU experts) | layerwise (experts uploaded per layer) | both over the chunks
    range: tuple[float, float] = (0.0, 0.0)  # prompt tok/s, from the held-out error (band)


@dataclass(frozen=True)
class Forecast:
    """A plan's forecast: decode and prefill points and what they rest on."""

    context_tokens: int  # the plan's goals the headline numbers are at
    concurrency: int
    decode: tuple[DecodePoint, ...]
    prefill: tuple[PrefillPoint, ...]
    rests_on: tuple[str, ...]
    calibration: str = ""  # "calibrated by bench on <date>: x0.93", or empty
    factor: float = 1.0
    step: dict[str, float] = field(default_factory=dict)  # the decode step's terms at the goals, seconds
    gpu_known: bool = True  # False: the GPU is in no data sheet ktwizard holds; the ranges span its memory class
    gpu_note: str = ""  # what was assumed of an unknown GPU, said on the plan
    # Prompts one token under and at the rendered --kt-gpu-prefill-token-threshold: the hybrid and the layerwise
    # path's first token, so the plan shows what the threshold does; empty without a layerwise path in reach
    across_threshold: tuple[PrefillPoint, ...] = ()

    def decode_at(self, context: int, concurrency: int) -> DecodePoint:
        return min(self.decode, key=lambda p: (abs(p.context_tokens - context), abs(p.concurrency - concurrency)))

    @property
    def at_goals(self) -> DecodePoint:
        return self.decode_at(self.context_tokens, self.concurrency)

    @property
    def single(self) -> DecodePoint:
        """One stream at a short context: the figure tutorials publish."""
        return self.decode_at(0, 1)

    @property
    def prefill_at_goals(self) -> PrefillPoint:
        return min(self.prefill, key=lambda p: abs(p.prompt_tokens - self.context_tokens))


def ends(s: Setup) -> tuple[Setup, Setup]:
    """The setup at the slow and fast ends of what its GPU may be: itself twice for a card the data sheets know, an
    unknown card's memory class's slowest and fastest (speeds.gpu_speed)."""
    if s.gpu.known:
        return s, s
    return replace(s, gpu=s.gpu.at(0)), replace(s, gpu=s.gpu.at(1))


def spread(values: tuple[float, float, float], kind: str) -> tuple[float, float]:
    """The range of a forecast computed at the GPU's slow end, its middle and its fast end: the held-out band
    around each, their union."""
    lows, highs = zip(*(band(v, kind) for v in values), strict=True)
    return min(lows), max(highs)


def decode_point(s: Setup, context: int, concurrency: int, factor: float = 1.0, t: Terms = TERMS) -> DecodePoint:
    slow, fast = ends(s)
    per, lo, hi = (factor / decode_step(x, context, concurrency, t).total_s for x in (s, slow, fast))
    return DecodePoint(
        context, concurrency, round(per, 2), round(per * concurrency, 2), spread((lo, per, hi), "decode")
    )


def prefill_point(s: Setup, prompt: int, t: Terms = TERMS) -> PrefillPoint:
    secs, path = prefill_time(s, prompt, t)  # a bench calibrates decode only: prefill is not scaled by its factor
    slow, fast = ends(s)
    lo, hi = (prompt / prefill_time(x, prompt, t)[0] for x in (slow, fast))
    return PrefillPoint(
        prompt, round(prompt / secs, 1), round(secs, 2), path, spread((lo, prompt / secs, hi), "prefill")
    )


def forecast(
    s: Setup, context: int, concurrency: int, factor: float = 1.0, calibration: str = "", t: Terms = TERMS
) -> Forecast:
    contexts = sorted({c for c in DECODE_CONTEXTS if c <= context} | {context})
    streams = sorted({1, max(1, concurrency)})
    decode = tuple(decode_point(s, ctx, c, factor, t) for ctx in contexts for c in streams)
    prompts = sorted({p for p in PREFILL_PROMPTS if p <= max(context, PREFILL_PROMPTS[0])} | {max(1, context)})
    prefill = [prefill_point(s, p, t) for p in prompts]
    th = s.threshold
    across = (prefill_point(s, th - 1, t), prefill_point(s, th, t)) if th is not None and 1 < th <= s.chunk else ()
    st = decode_step(s, context, concurrency, t)
    return Forecast(
        context_tokens=context,
        concurrency=max(1, concurrency),
        decode=decode,
        prefill=tuple(prefill),
        rests_on=rests_on(s, st, t),
        calibration=calibration,
        factor=factor,
        step={"cpu_s": st.cpu_s, "gpu_s": st.gpu_s, "fixed_s": st.fixed_s},
        gpu_known=s.gpu.known,
        gpu_note="" if s.gpu.known else s.gpu.why,
        across_threshold=across,
    )
