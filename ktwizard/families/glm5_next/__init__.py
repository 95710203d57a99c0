"""GLM-5-Next (GLM-5.3-Flash): KDA linear-attention layers + DSA layers under 4-stream hyper-connections.

Config and tensors: models/glm5_next.py; the runtime's start-up and pool rules: rules.py beside this file
(server_args.py:1481-1730, glm5_next_memory_pool.py)."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ktwizard.families import readers
from ktwizard.families.base import COMMON_LIVE_SETS, Batch, Family, FlagRow, LiveSet, Pool, StepParts
from ktwizard.families.dsa import DsaKv
from ktwizard.families.glm5_next import live_sets, rules, weights
from ktwizard.families.schemes import dsa_flags
from ktwizard.models import glm5_next as model
from ktwizard.models.spec import ModelSpec


@dataclass(frozen=True)
class Glm5Next(Family):
    def kv_pool(self, spec: ModelSpec, tokens: int, tp: int, dtype_bytes: int, chunk: int, concurrency: int) -> Pool:
        # Glm5NextNSATokenToKVPool: the runtime floors the pool to whole 64-token pages (:636-640), and every buffer
        # holds size + page_size rows (memory_pool.py:1441, :1801; glm5_next_memory_pool.py:168-177); the KPool
        # live tails of each request slot come out of the same budget (model_runner_kv_cache_mixin.py:613-622)
        cell = spec.kv_cell_bytes(tp, dtype_bytes)
        cap = ceil(tokens / rules.PAGE_SIZE) * rules.PAGE_SIZE
        tail = rules.tail_bytes(spec, concurrency)
        return Pool(
            cap,
            (cap + rules.PAGE_SIZE) * cell + tail,
            f"({cap} + {rules.PAGE_SIZE}) tokens x {cell} B (latent KV and indexer keys of "
            f"{spec.attention.full_attention_layers} DSA layers) + {tail} B of KPool tails for {concurrency} "
            "request(s) (glm5_next_memory_pool.py:160-196, model_runner_kv_cache_mixin.py:94-159, :195-227)",
        )

    def dsa_kv(self, spec: ModelSpec, capabilities: tuple[str, ...], min_major: int, asked: str) -> DsaKv | None:
        return rules.kv_for(capabilities)  # the GPU profile fixes the KV dtype

    def fixed_kv(self, spec: ModelSpec) -> bool:
        return True

    def replicated_attention(self, spec: ModelSpec, tp: int) -> tuple[int, int] | None:
        return (0, 0) if tp == 1 else (weights.replicated(spec), 0)

    def linear_layers(self, spec: ModelSpec) -> int:
        return spec.layers - spec.attention.full_attention_layers

    def state_slots_per_request(self, spec: ModelSpec) -> int:
        """The radix cache is forced off (server_args.py:1664-1667): one slot per request (:597-598)."""
        return 1

    def linear_layer_state(self, spec: ModelSpec, tp: int) -> tuple[int, int] | None:
        return weights.kda_layer_state(spec, tp)

    def attention_flags(
        self, spec: ModelSpec, kv_dtype: str, backend_hint: str, kv: DsaKv | None, min_major: int
    ) -> list[FlagRow]:
        kv = kv or rules.kv_for(())
        src = "server_args.py:1692-1706: GLM-5-Next's KPool4 dispatcher, the only one it accepts"
        return [
            *dsa_flags(kv, rules.NSA_BACKEND, rules.NSA_BACKEND, src),
            (
                "--moe-runner-backend",
                rules.MOE_RUNNER,
                "GLM-5-Next accepts only the triton MoE runner (server_args.py:1586-1594: the others do not carry its "
                "swiglu_limit)",
            ),
            (
                "--disable-radix-cache",
                True,
                "GLM-5-Next's KPool tails are per request: the runtime turns the prefix cache off itself "
                "(server_args.py:1664-1667)",
            ),
        ]

    def refused_flags(self) -> frozenset[str]:
        return rules.REFUSED_FLAGS

    def graph_max_bs(self) -> int | None:
        return rules.GRAPH_MAX_BS

    def start_problems(
        self, spec: ModelSpec, method: str, capabilities: tuple[str, ...], kv_dtype: str
    ) -> tuple[str, ...]:
        found = (rules.method_problem(spec, method), rules.kv_problem(spec, capabilities, kv_dtype))
        return tuple(p for p in found if p)

    def gpu_problem(self, spec: ModelSpec, capabilities: tuple[str, ...]) -> str | None:
        return rules.gpu_problem(spec, capabilities)

    def layerwise_refusal(self, spec: ModelSpec) -> str | None:
        return rules.layerwise_reason()

    def kernel_needs(self) -> tuple[tuple[str, str], ...]:
        return (("nsa trtllm (KPool4)", "server_args.py:1692-1706"),)

    def attention_step(self, spec: ModelSpec, tp: int, batch: Batch, common: StepParts) -> StepParts:
        return live_sets.attention_step(spec, tp, batch, common)

    def live_sets(self) -> tuple[LiveSet, ...]:
        return (
            *COMMON_LIVE_SETS,
            LiveSet("prefill chunk", "the 4-stream mHC residual beside the KDA / DSA layer's activations",
                    "srt/models/glm5_next.py:218-246"),
            LiveSet("prefill chunk", "KDA chunk temporaries, or the DSA indexer's 32-row logits chunk and keys",
                    "srt/layers/attention/fla/kda.py:1141-1197; nsa/glm5_next_indexer_logits.py:28-158"),
            LiveSet("decode", "each request's KDA conv + temporal state and its KPool key / score tails",
                    "srt/layers/attention/mamba/mamba_utils.py:197-232; glm5_next_memory_pool.py:179-196"),
        )  # fmt: skip


FAMILY = Glm5Next(
    "glm5_next",
    (model.ARCHITECTURE,),
    (model.KIND,),
    readers.deepseek_moe,
    model.attention,
    model.attention_tensors,
    readers.gate_experts_shared,
    unwrap=model.unwrap,
    full_attention_at=model.full_attention_layers,
    source="sglang/srt/models/glm5_next.py",
)
