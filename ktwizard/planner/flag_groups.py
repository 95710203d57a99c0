"""The launch_server flags of a plan in named groups, in the order the command renders them (planner/flags.py
joins them). Each group reads one frozen FlagInputs and returns its flags with their reasons; family specifics
come from the family (families/<name>/), never from a switch on its name here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ktwizard.families.registry import of as family_of
from ktwizard.host.profile import GPU
from ktwizard.models.presets import SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.planner.memory import linear_state
from ktwizard.planner.memory.sizing import Sizing
from ktwizard.planner.methods import MethodChoice
from ktwizard.planner.threads import ThreadPlan
from ktwizard.planner.types import Flag, Goals
from ktwizard.runtime import rules

SERVED_BAD = re.compile(r"[^A-Za-z0-9._:/@+-]+")


@dataclass(frozen=True)
class FlagInputs:
    """Everything the flags of one plan are made from."""

    spec: ModelSpec
    goals: Goals
    hints: SglangHints
    choice: MethodChoice
    sizing: Sizing
    threads: ThreadPlan
    gpu_experts: int
    mfs: float
    gpus: tuple[GPU, ...]

    @property
    def model_path(self) -> str:
        return self.goals.weights or f"/models/{self.spec.id}"

    @property
    def blackwell(self) -> bool:
        return any(g.cc_major >= 12 for g in self.gpus)


def identity(x: FlagInputs) -> list[Flag]:
    """Where the weights are, the name clients send, where it listens and how much of the GPU SGLang takes."""
    spec, goals, choice = x.spec, x.goals, x.choice
    kt_path = x.model_path if choice.native else (goals.kt_weights or f"{x.model_path}-{choice.method}")
    # a folder name can hold anything; the id clients send is kept to a plain pattern
    served = goals.served_name or x.hints.served_model_name or (SERVED_BAD.sub("-", spec.id).strip("-.") or "model")
    return [
        Flag("--model-path", x.model_path, "the checkpoint folder"),
        Flag(
            "--kt-weight-path",
            kt_path,
            "CPU expert weights: the checkpoint itself for native methods; KT is enabled only when this is set"
            if choice.native
            else f"{choice.method} CPU weights converted ahead of time",
        ),
        Flag("--served-model-name", served, "the model id clients send" + family_of(spec).served_name_why(spec)),
        Flag("--host", goals.bind, "listen address; 127.0.0.1 unless you ask otherwise"),
        Flag("--port", goals.port, "HTTP port"),
        Flag(
            "--mem-fraction-static",
            x.mfs,
            "SGLang sizes the KV pool as (free after weights) - (free after the CUDA context) x (1 - this): the "
            "smallest value whose pool covers --max-total-tokens with a margin, so the pool never shrinks; what the "
            "cap leaves holds graphs, workspaces"
            + (", the layerwise-prefill layer" if x.sizing.layerwise else "")
            + " and activations (every phase checked)",
        ),
    ]


def server(x: FlagInputs) -> list[Flag]:
    """Remote code, idling, metrics, cache reports and kt-kernel's CPU pools."""
    threads = x.threads
    f = []
    if x.hints.trust_remote_code:
        f.append(Flag("--trust-remote-code", True, "the checkpoint ships its own model / tokenizer code"))
    f += [
        Flag("--sleep-on-idle", True, "stop busy-polling when idle: kt-kernel shares these cores"),
        Flag("--enable-metrics", True, "Prometheus /metrics for ktwizard monitor"),
        Flag(
            "--enable-cache-report",
            True,
            "answers say how many prompt tokens the prefix cache served (usage_processor.py:13-37), so `ktwizard "
            "bench` never reports a cache hit as prefill speed",
        ),
        Flag("--kt-cpuinfer", threads.cpuinfer, threads.why),
        Flag(
            "--kt-threadpool-count",
            threads.pools,
            f"one pool per NUMA node holding usable CPUs (nodes {', '.join(map(str, threads.nodes))}); "
            "the argparse default 2 fails on one-node machines",
        ),
    ]
    if threads.nodes != tuple(range(threads.pools)):
        f.append(
            Flag(
                "--kt-numa-nodes", tuple(str(n) for n in threads.nodes), "pools bound to the nodes this process may use"
            )
        )
    return f


def pools(x: FlagInputs) -> list[Flag]:
    """The context, the requests and the KV / state pools they are sized for."""
    sizing, goals = x.sizing, x.goals
    f = [
        Flag("--context-length", sizing.context, "longest request, in tokens"),
        Flag("--max-running-requests", goals.concurrency, "concurrent requests the KV pool is sized for"),
    ]
    if sizing.state_pool:  # planner/memory/linear_state.py: else the state pool takes 0.9/1.9 of the KV budget
        f.append(
            Flag(
                "--max-mamba-cache-size",
                sizing.state_pool.slots,
                f"linear-attention state slots: {linear_state.slots_per_request(x.spec)} per running request, so the "
                "KV pool keeps the rest of its budget",
            )
        )
    sliding = ", counted in cells of all layers as SGLang does for sliding-window models"
    f += [
        Flag("--prefill-max-requests", goals.concurrency, "let every running request prefill in one batch"),
        Flag(
            "--max-total-tokens",
            sizing.pool.max_total_tokens,
            "caps the KV pool at what the goals need (context x concurrency"
            + (sliding if sizing.pool.swa_full_tokens_ratio else "")
            + "), so the pool is deterministic and what it leaves stays free",
        ),
    ]
    return f


def experts(x: FlagInputs) -> list[Flag]:
    """How many routed experts the GPU holds, the CPU method, and the layerwise prefill threshold."""
    spec, goals = x.spec, x.goals
    return [
        Flag(
            "--kt-num-gpu-experts",
            x.gpu_experts,
            f"the most routed experts per MoE layer that fit after everything else ({spec.routed_experts} max)"
            if goals.gpu_experts is None
            else "requested",
        ),
        Flag("--kt-method", x.choice.method, x.choice.why),
        *(layerwise(x) if x.sizing.layerwise else []),
    ]


def layerwise(x: FlagInputs) -> list[Flag]:
    """The layerwise-prefill threshold, and the expert update that follows each layerwise prefill."""
    sizing, goals = x.sizing, x.goals
    th = sizing.threshold
    chosen = "requested" if goals.prefill_threshold else "KT docs / recipe value for the method"
    never = f" (a {th}-token threshold above the {sizing.chunk}-token chunk never takes the layerwise path)"
    f = [
        Flag(
            "--kt-gpu-prefill-token-threshold",
            th,
            f"prefill chunks of {th} tokens or more upload each layer's CPU experts and run the whole layer on "
            f"the GPU (kt_ep_wrapper.py:5754; {chosen}); shorter ones run their CPU experts on the CPU. Memory: "
            "the full-layer buffer the first such chunk builds is budgeted in the region SGLang leaves free, and "
            f"the short-prompt phase at {th} tokens; speed: the forecast shows the first token on both sides"
            + (never if th > sizing.chunk else ""),
        )
    ]
    if x.choice.method != "MXFP4" and goals.placement != "frequency":
        # After each layerwise prefill the update makes each layer's GPU experts that batch's most-routed ones
        # (kt_ep_wrapper.py:5855-5862 -> _update_gpu_experts_from_batch :6051, select_top_experts_from_batch
        # :4842, copy_experts_weights_int4 :4889): with frequency placement what `placement show` and the
        # forecast describe would be gone after the first long prompt
        f.append(
            Flag(
                "--kt-enable-dynamic-expert-update",
                True,
                "after each prefill over the threshold, each layer's GPU experts become that prompt's most-routed "
                "ones (kt_ep_wrapper.py:5855-5862); helps most at low GPU-expert ratios (KT experts-scheduling "
                "benchmark)",
            )
        )
    return f


def placement(x: FlagInputs) -> list[Flag]:
    """Deferred experts, where GPU experts are placed, and the routing recorder when one is asked for."""
    goals = x.goals
    f = [
        Flag(
            "--kt-max-deferred-experts-per-token",
            1,
            "overlap one deferred expert per token with the next step (KT README: 1-4 recommended; more costs "
            "accuracy)",
        ),
        Flag(
            "--kt-expert-placement-strategy",
            goals.placement,
            "the most-routed experts of the whole model, read from --init-expert-location (a layer with hot experts "
            "gets more)"
            if goals.placement == "frequency"
            else "equal GPU experts per layer (the real default; the help text says frequency, which needs a "
            "statistics file)",
        ),
    ]
    if goals.placement == "frequency" and goals.expert_stats:
        f.append(
            Flag(
                "--init-expert-location",
                goals.expert_stats,
                "the routing counts frequency placement ranks (checked against this model's layers x experts)",
            )
        )
    if goals.record_routing:
        f += [
            Flag(
                "--expert-distribution-recorder-mode",
                "stat",
                "count routed tokens per layer and expert while `ktwizard placement record` drives traffic",
            ),
            Flag(
                "--expert-distribution-recorder-buffer-size",
                rules.RECORDER_PASSES,
                "the recorder keeps only the last N forward passes (default 1000, which the default `placement "
                "record` run already wraps: server_args.py:3112-3116); this window is budgeted per GPU",
            ),
        ]
    return f


def batching(x: FlagInputs) -> list[Flag]:
    """Mixed chunks, tensor parallelism, the prefill chunk and the CUDA-graph batch cap."""
    sizing, tp = x.sizing, x.sizing.tp
    chunk_why = f"SGLang's default for this GPU size is {sizing.chunk_default}" + (
        "; chosen with --chunked-prefill-size, its activations budgeted on every GPU"
        if x.goals.chunked_prefill
        else "; raised to the recipe-tested 16384 for layerwise prefill on a large card"
        if sizing.chunk > sizing.chunk_default
        else ""
    )
    capped = "; capped at the KV pool" if sizing.chunk < min(sizing.chunk_default, 16384) else ""
    return [
        Flag("--enable-mixed-chunk", True, "mix prefill chunks with decode so running requests keep decoding"),
        Flag(
            "--tensor-parallel-size", tp, f"{tp} GPU(s): attention heads split {x.spec.attention.heads // tp} per rank"
        ),
        Flag(
            "--disable-shared-experts-fusion", True, "KT forces it when --kt-weight-path is set; explicit for clarity"
        ),
        Flag("--chunked-prefill-size", sizing.chunk, chunk_why + capped),
        Flag(
            "--cuda-graph-max-bs",
            sizing.graph_bs,
            "no larger decode batch can run: capturing bigger graphs only costs memory",
        ),
    ]


def precision(x: FlagInputs) -> list[Flag]:
    """The FP8 GEMM path on Blackwell, the sliding-window share and the KV cache dtype."""
    spec, sizing = x.spec, x.sizing
    f = []
    fp8 = spec.expert_format.kind.startswith("fp8") or spec.other_format.kind.startswith("fp8") or spec.attention.mla
    if x.blackwell and fp8:
        f.append(
            Flag(
                "--fp8-gemm-backend",
                "triton",
                "DeepGEMM's JIT is unstable on SM120 with the pinned stack; the recipe uses Triton",
            )
        )
    elif x.blackwell:
        f.append(Flag("--fp8-gemm-backend", "triton", "SM120 (Blackwell workstation): the recipe-tested FP8 GEMM path"))
    if sizing.pool.swa_full_tokens_ratio is not None:
        f.append(
            Flag(
                "--swa-full-tokens-ratio",
                sizing.pool.swa_full_tokens_ratio,
                "sliding-window layers keep only their window and the chunks in flight: the smallest share that "
                f"holds them leaves the full-attention pool {sizing.tokens} tokens",
            )
        )
    if sizing.checkpoint_kv:
        f.append(Flag("--kv-cache-dtype", *sizing.checkpoint_kv))
    elif x.goals.kv_dtype == "fp8_e4m3" and not family_of(spec).fixed_kv(spec):
        f.append(Flag("--kv-cache-dtype", "fp8_e4m3", "FP8 KV cache: half the bytes per token"))
    return f


def parsers(x: FlagInputs) -> list[Flag]:
    """The reasoning and tool-call parsers of the family, and the chat template the user gave."""
    hints, f = x.hints, []
    if hints.reasoning_parser:
        f.append(Flag("--reasoning-parser", hints.reasoning_parser, "separates the model's reasoning from its answer"))
    if hints.tool_call_parser:
        f.append(
            Flag(
                "--tool-call-parser", rules.tool_parser(hints.tool_call_parser), "parses this model family's tool calls"
            )
        )
    if x.goals.chat_template:
        f.append(Flag("--chat-template", x.goals.chat_template, "the chat template you gave"))
    return f


def operations(x: FlagInputs) -> list[Flag]:
    """Multi-GPU checks, the watchdog, sampling defaults and the access log."""
    f = []
    if x.sizing.tp > 1:
        f += [
            Flag("--enable-p2p-check", True, "multi-GPU: check peer-to-peer access instead of assuming it (KT docs)"),
            Flag("--disable-custom-all-reduce", True, rules.CUSTOM_AR_WHY),
        ]
    if x.sizing.layerwise:
        f.append(Flag("--watchdog-timeout", 3000, "long layerwise prefills can exceed the default watchdog (KT docs)"))
    f.append(Flag("--sampling-defaults", "model", "use the checkpoint's generation_config sampling defaults"))
    f.append(
        Flag(
            "--uvicorn-access-log-exclude-prefixes",
            ("/metrics", "/health"),
            "keep ktwizard monitor's 1 Hz polling out of the log",
        )
    )
    return f
