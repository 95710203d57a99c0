"""Every launch_server flag and environment variable of a plan, each with its reason."""

from __future__ import annotations

import re

from ktwizard.families.registry import of as family_of
from ktwizard.host.profile import GPU
from ktwizard.models.presets import Recipe, SglangHints
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner import flag_groups as G
from ktwizard.planner.memory.sizing import Sizing
from ktwizard.planner.methods import MethodChoice
from ktwizard.planner.model_flags import attention_flags, moe_runner_flags
from ktwizard.planner.threads import ThreadPlan
from ktwizard.planner.types import EnvVar, Flag, Goals
from ktwizard.runtime import release as runtime_env
from ktwizard.runtime import rules
from ktwizard.runtime.version import SGLANG_KT, SGLANG_KT_VERSION

SERVED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")


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
    """The flags in the order they render (planner/flag_groups.py, one named group each), and the notes on where
    they differ from the model's tested recipe."""
    x = G.FlagInputs(spec, goals, hints, choice, sizing, threads, gpu_experts, mfs, gpus)
    f = [*G.identity(x), *G.server(x), *G.pools(x), *G.experts(x), *G.placement(x), *G.batching(x)]
    f += attention_flags(spec, goals, hints, sizing, gpus)
    # flags the family's runtime refuses (GLM-5-Next: mixed chunks, server_args.py:1597-1601) are never rendered
    refused = family_of(spec).refused_flags()
    f = [fl for fl in f if fl.name not in refused]
    f += [*moe_runner_flags(spec, gpus), *G.precision(x), *G.parsers(x), *G.operations(x)]
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
            f"+3.1 to +4.9 GiB); torch {runtime_env.SGLANG_KT_TORCH_PIN}, pinned by {SGLANG_KT}, reads only this "
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
                f"read the checkpoint's own config.json: {SGLANG_KT_VERSION}'s default reloads every DeepSeek-family "
                "config into DeepSeek-V4's class, whose index_topk=512 default turns a DeepSeek-V3/Kimi K2 checkpoint "
                "into a sparse-attention model it has no indexer weights for (hf_transformers_utils.py:397, :483-500)",
            )
        )
    if spec is not None:
        env += [EnvVar(name, value, why) for name, value, why in family_of(spec).env(spec)]
    return tuple(env)
