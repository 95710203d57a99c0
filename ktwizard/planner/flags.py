"""Every launch_server flag and environment variable of a plan, each with its reason."""

from __future__ import annotations

import re

from ktwizard.families.registry import of as family_of
from ktwizard.host.profile import GPU
from ktwizard.models.presets import Recipe, SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.memory import linear_state
from ktwizard.planner.memory.sizing import Sizing
from ktwizard.planner.methods import MethodChoice
from ktwizard.planner.model_flags import attention_flags, moe_runner_flags
from ktwizard.planner.threads import ThreadPlan
from ktwizard.planner.types import EnvVar, Flag, Goals
from ktwizard.runtime import release as runtime_env
from ktwizard.runtime import rules

SERVED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")
SERVED_BAD = re.compile(r"[^A-Za-z0-9._:/@+-]+")


def _blackwell(gpus: tuple[GPU, ...]) -> bool:
    return any(g.cc_major >= 12 for g in gpus)


def build_flags(
    spec: ModelSpec,
    goals: Goals,
    hints: SglangHints,
    recipe: Recipe | None,
    choice: MethodChoice,
    sizing: Sizing,
    threads: ThreadPlan,
    gpu_experts: int,
    mfs: float,
    gpus: tuple[GPU, ...],
) -> tuple[tuple[Flag, ...], list[Notice]]:
    model_path = goals.weights or f"/models/{spec.id}"
    kt_path = model_path if choice.native else (goals.kt_weights or f"{model_path}-{choice.method}")
    # a folder name can hold anything; the id clients send is kept to a plain pattern
    served = goals.served_name or hints.served_model_name or (SERVED_BAD.sub("-", spec.id).strip("-.") or "model")
    tp = sizing.tp
    f = [
        Flag("--model-path", model_path, "the checkpoint folder"),
        Flag(
            "--kt-weight-path",
            kt_path,
            "CPU expert weights: the checkpoint itself for native methods; KT is enabled only when this is set"
            if choice.native
            else f"{choice.method} CPU weights converted ahead of time",
        ),
        Flag(
            "--served-model-name",
            served,
            "the model id clients send"
            + (" (GitHub Copilot keys its Kimi fixes on it)" if spec.id.startswith("kimi") else ""),
        ),
        Flag("--host", goals.bind, "listen address; 127.0.0.1 unless you ask otherwise"),
        Flag("--port", goals.port, "HTTP port"),
        Flag(
            "--mem-fraction-static",
            mfs,
            "SGLang sizes the KV pool as (free after weights) - (free after the CUDA context) x (1 - this): the "
            "smallest value whose pool covers --max-total-tokens with a margin, so the pool never shrinks; what the "
            "cap leaves holds graphs, workspaces"
            + (", the layerwise-prefill layer" if sizing.layerwise else "")
            + " and activations (every phase checked)",
        ),
    ]
    if hints.trust_remote_code:
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
    f += [
        Flag("--context-length", sizing.context, "longest request, in tokens"),
        Flag("--max-running-requests", goals.concurrency, "concurrent requests the KV pool is sized for"),
    ]
    if sizing.state_pool:  # planner/memory/linear_state.py: else the state pool takes 0.9/1.9 of the KV budget
        f.append(
            Flag(
                "--max-mamba-cache-size",
                sizing.state_pool.slots,
                f"linear-attention state slots: {linear_state.slots_per_request(spec)} per running request, so the KV "
                "pool keeps the rest of its budget",
            )
        )
    f += [
        Flag("--prefill-max-requests", goals.concurrency, "let every running request prefill in one batch"),
        Flag(
            "--max-total-tokens",
            sizing.pool.max_total_tokens,
            "caps the KV pool at what the goals need (context x concurrency"
            + (
                ", counted in cells of all layers as SGLang does for sliding-window models"
                if sizing.pool.swa_full_tokens_ratio
                else ""
            )
            + "), so the pool is deterministic and what it leaves stays free",
        ),
        Flag(
            "--kt-num-gpu-experts",
            gpu_experts,
            f"the most routed experts per MoE layer that fit after everything else ({spec.routed_experts} max)"
            if goals.gpu_experts is None
            else "requested",
        ),
        Flag("--kt-method", choice.method, choice.why),
    ]
    if sizing.layerwise:
        th = sizing.threshold
        chosen = "requested" if goals.prefill_threshold else "KT docs / recipe value for the method"
        f.append(
            Flag(
                "--kt-gpu-prefill-token-threshold",
                th,
                f"prefill chunks of {th} tokens or more upload each layer's CPU experts and run the whole layer on "
                f"the GPU (kt_ep_wrapper.py:5754; {chosen}); shorter ones run their CPU experts on the CPU. Memory: "
                "the full-layer buffer the first such chunk builds is budgeted in the region SGLang leaves free, and "
                f"the short-prompt phase at {th} tokens; speed: the forecast shows the first token on both sides"
                + (
                    f" (a {th}-token threshold above the {sizing.chunk}-token chunk never takes the layerwise path)"
                    if th > sizing.chunk
                    else ""
                ),
            )
        )
        if choice.method != "MXFP4" and goals.placement != "frequency":
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
    f += [
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
        *(
            [
                Flag(
                    "--init-expert-location",
                    goals.expert_stats,
                    "the routing counts frequency placement ranks (checked against this model's layers x experts)",
                )
            ]
            if goals.placement == "frequency" and goals.expert_stats
            else []
        ),
        *(
            [
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
            if goals.record_routing
            else []
        ),
        Flag("--enable-mixed-chunk", True, "mix prefill chunks with decode so running requests keep decoding"),
        Flag("--tensor-parallel-size", tp, f"{tp} GPU(s): attention heads split {spec.attention.heads // tp} per rank"),
        Flag(
            "--disable-shared-experts-fusion", True, "KT forces it when --kt-weight-path is set; explicit for clarity"
        ),
        Flag(
            "--chunked-prefill-size",
            sizing.chunk,
            f"SGLang's default for this GPU size is {sizing.chunk_default}"
            + (
                "; chosen with --chunked-prefill-size, its activations budgeted on every GPU"
                if goals.chunked_prefill
                else "; raised to the recipe-tested 16384 for layerwise prefill on a large card"
                if sizing.chunk > sizing.chunk_default
                else ""
            )
            + ("; capped at the KV pool" if sizing.chunk < min(sizing.chunk_default, 16384) else ""),
        ),
        Flag(
            "--cuda-graph-max-bs",
            sizing.graph_bs,
            "no larger decode batch can run: capturing bigger graphs only costs memory",
        ),
    ]
    f += attention_flags(spec, goals, hints, sizing, gpus)
    # flags the family's runtime refuses (GLM-5-Next: mixed chunks, server_args.py:1597-1601) are never rendered
    refused = family_of(spec).refused_flags()
    f = [fl for fl in f if fl.name not in refused]
    f += moe_runner_flags(spec, gpus)
    if _blackwell(gpus) and (
        spec.expert_format.kind.startswith("fp8") or spec.other_format.kind.startswith("fp8") or spec.attention.mla
    ):
        f.append(
            Flag(
                "--fp8-gemm-backend",
                "triton",
                "DeepGEMM's JIT is unstable on SM120 with the pinned stack; the recipe uses Triton",
            )
        )
    elif _blackwell(gpus):
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
    elif goals.kv_dtype == "fp8_e4m3" and not family_of(spec).fixed_kv(spec):
        f.append(Flag("--kv-cache-dtype", "fp8_e4m3", "FP8 KV cache: half the bytes per token"))
    if hints.reasoning_parser:
        f.append(Flag("--reasoning-parser", hints.reasoning_parser, "separates the model's reasoning from its answer"))
    if hints.tool_call_parser:
        f.append(
            Flag(
                "--tool-call-parser", rules.tool_parser(hints.tool_call_parser), "parses this model family's tool calls"
            )
        )
    if goals.chat_template:
        f.append(Flag("--chat-template", goals.chat_template, "the chat template you gave"))
    if tp > 1:
        f += [
            Flag("--enable-p2p-check", True, "multi-GPU: check peer-to-peer access instead of assuming it (KT docs)"),
            Flag("--disable-custom-all-reduce", True, rules.CUSTOM_AR_WHY),
        ]
    if sizing.layerwise:
        f.append(Flag("--watchdog-timeout", 3000, "long layerwise prefills can exceed the default watchdog (KT docs)"))
    f.append(Flag("--sampling-defaults", "model", "use the checkpoint's generation_config sampling defaults"))
    f.append(
        Flag(
            "--uvicorn-access-log-exclude-prefixes",
            ("/metrics", "/health"),
            "keep ktwizard monitor's 1 Hz polling out of the log",
        )
    )
    return tuple(f), _recipe_notes(recipe, f, sizing)


def _recipe_notes(recipe: Recipe | None, flags: list[Flag], sizing: Sizing) -> list[Notice]:
    """Where ktwizard's choice differs from the tested recipe for this model, say so and why."""
    if recipe is None:
        return []
    notes = []
    mine = {fl.name: fl for fl in flags}
    why = {
        "--kt-num-gpu-experts": "ktwizard fills the GPU memory left after the budget; the recipe notes the expert "
        "count changed performance little",
        "--mem-fraction-static": "ktwizard computes it bottom-up from the budget; the recipe's --max-total-tokens "
        "cap left the layerwise buffer room anyway",
        "--kt-cpuinfer": "ktwizard keeps a quarter of the physical cores (2-8) for OpenMP and system threads",
        "--chunked-prefill-size": "ktwizard follows SGLang's table for this GPU size",
        "--context-length": "the context was set by your goals",
        "--max-total-tokens": "context x concurrency of your goals",
    }
    for var in recipe.env:
        if var in runtime_env.IGNORED:
            notes.append(
                Notice("info", f"Recipe '{recipe.id}' sets {var}; this plan does not", runtime_env.IGNORED[var])
            )
    for name, value in recipe.flags.items():
        flag = "--" + name.replace("_", "-")
        have = mine.get(flag)
        if (
            have is None
            or value is True
            or have.value == value
            or flag in ("--port", "--served-model-name", "--chat-template")
        ):
            continue
        notes.append(
            Notice(
                "info",
                f"Recipe '{recipe.id}' uses {flag} {value}; this plan uses {have.value}",
                why.get(flag, have.why),
            )
        )
    return notes


def build_env(
    gpus: tuple[GPU, ...],
    threads: ThreadPlan,
    choice: MethodChoice,
    record_routing: str | None = None,
    spec: ModelSpec | None = None,
) -> tuple[EnvVar, ...]:
    env = [
        EnvVar("HF_HUB_OFFLINE", "1", "never reach the Hub at start-up: the weights are local"),
        EnvVar(
            "OMP_NUM_THREADS",
            str(threads.reserve),
            "OpenMP in the GPU process uses the cores kt-kernel's worker pools leave free: torch's and kt-kernel's own "
            "(its extension links a libgomp of its own and sizes its parallel regions by omp_get_max_threads)",
        ),
        EnvVar(
            runtime_env.ALLOC_CONF,
            runtime_env.EXPANDABLE,
            f"expandable segments keep the allocator within 0.2 GiB of the live peak (the default allocator needed "
            f"+3.1 to +4.9 GiB); torch {runtime_env.SGLANG_KT_TORCH_PIN}, pinned by sglang-kt 0.7.2, reads only this "
            "name (pytorch/pytorch#183387)",
        ),
    ]
    if choice.cpu_variant:
        env.append(
            EnvVar(
                "KT_KERNEL_CPU_VARIANT",
                choice.cpu_variant,
                f"load kt-kernel's {choice.cpu_variant} build: {choice.method} has no safe kernel in the build this "
                "CPU would select",
            )
        )
    # SGLANG_ENABLE_JIT_DEEPGEMM=0 (the recipe's) is not rendered: 0.7.2 enables DeepGEMM only on SM 9.0, 10.0 and
    # 10.3 (layers/deep_gemm_wrapper/configurer.py:17-24), so on the recipe's SM 12.0 it is already off
    env.append(
        EnvVar(
            rules.HEALTH_GENERATION_ENV,
            "0",
            "/health answers from the server's state instead of generating a token: a generating probe gets 503 "
            "during a long KT prefill (http_server.py:495-560, 20 s), so routers and liveness probes would drop a "
            "busy server",
        )
    )
    if record_routing:
        env.append(EnvVar(runtime_env.RECORDER_DIR, record_routing, "where the recorder writes dumps"))
    if spec is not None and rules.reads_config_backup(spec):
        env.append(
            EnvVar(
                rules.CONFIG_BACKUP_ENV,
                "none",
                "read the checkpoint's own config.json: 0.7.2's default reloads every DeepSeek-family config into "
                "DeepSeek-V4's class, whose index_topk=512 default turns a DeepSeek-V3/Kimi K2 checkpoint into a "
                "sparse-attention model it has no indexer weights for (hf_transformers_utils.py:397, :483-500)",
            )
        )
    if spec is not None:
        env += [EnvVar(name, value, why) for name, value, why in family_of(spec).env(spec)]
    return tuple(env)
