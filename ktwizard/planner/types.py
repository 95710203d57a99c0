"""The planner's values: goals in, a Plan out (flags with reasons, itemised budgets, warnings with fixes)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ktwizard import __version__
from ktwizard.notice import Notice
from ktwizard.planner.forecast.model import Forecast
from ktwizard.planner.memory.budget import BudgetItem, GpuBudget, HostBudget
from ktwizard.planner.memory.layers import LayerPlacement

__all__ = ["BudgetItem", "GpuBudget", "HostBudget", "LayerPlacement"]

Value = str | int | float | bool | tuple[str, ...] | None
# 2: memory model v2 (phases, ledger sources, margin); plans of schema 1 budget GPUs differently.
PLAN_SCHEMA = 2


PLACEMENTS = ("uniform", "frequency")  # the strategies ktwizard plans (the runtime knows more: catalog.py)


@dataclass(frozen=True)
class Goals:
    """What the user asks of a plan: context, concurrency, GPUs, method and the other choices."""

    context: int | None = None  # None: the longest that fits, up to 128k and the model's limit
    concurrency: int = 1
    gpus: tuple[int, ...] | None = None  # GPU indices; None: every visible GPU
    method: str | None = None  # None: the checkpoint's native method when the CPU runs it
    gpu_experts: int | None = None  # routed experts per MoE layer on GPU; None: as many as fit
    kv_dtype: str = "auto"  # auto (bf16) | fp8_e4m3
    layerwise_prefill: bool | None = None  # None: on for native methods when a full layer fits
    weights: str | None = None  # checkpoint folder on the host
    kt_weights: str | None = None  # converted CPU weights (AMXINT4/AMXINT8)
    port: int = 30000
    bind: str = "127.0.0.1"
    image: str | None = None
    chat_template: str | None = None
    served_name: str | None = None
    api_key_file: str | None = None  # the server's API key is read from this file at start (never in an argv)
    name: str | None = None  # the deployment's (container's) name; None: ktwizard-<model id>
    placement: str = "uniform"  # --kt-expert-placement-strategy: uniform | frequency
    expert_stats: str | None = None  # the routing dump frequency placement reads (--init-expert-location)
    record_routing: str | None = None  # a host folder the expert-distribution recorder writes its dumps to
    chunked_prefill: int | None = None  # --chunked-prefill-size; None: SGLang's default for the GPU size
    # --kt-gpu-prefill-token-threshold: chunks of at least this many tokens take the layerwise path; None: the
    # KT docs' value for the method (memory/sizing.layerwise_threshold)
    prefill_threshold: int | None = None
    # the runtime's parsers, when not the model's own (a relaunch that verify suggested: another checkpoint's)
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None


@dataclass(frozen=True)
class Flag:
    """One launch_server flag of a plan, with its value and reason."""

    name: str  # the launch_server flag, "--kt-method"
    value: Value  # True for a store_true flag
    why: str


@dataclass(frozen=True)
class EnvVar:
    """One environment variable of a plan, with its value and reason."""

    name: str
    value: str
    why: str


@dataclass(frozen=True)
class Suggestion:
    """A change of goals that would make the plan fit or serve better."""

    change: str  # "--context 65536"
    effect: str  # what it gives up and what it wins
    goals: Goals


@dataclass(frozen=True)
class ModelRef:
    """The model a plan is for, as the plan records it."""

    id: str
    name: str
    source: str
    exact: bool
    architecture: str
    routed_experts: int = 0  # per MoE layer: the most --kt-num-gpu-experts can be


@dataclass(frozen=True)
class Plan:
    """A deployment plan: flags, environment, memory budgets, forecast and notices."""

    model: ModelRef
    host: str
    goals: Goals
    method: str
    tp: int
    gpus: tuple[int, ...]
    gpu_experts: int
    max_total_tokens: int
    mem_fraction_static: float
    flags: tuple[Flag, ...]
    env: tuple[EnvVar, ...]
    gpu_budgets: tuple[GpuBudget, ...]
    host_budgets: tuple[HostBudget, ...]
    fits: bool
    overflows: tuple[str, ...] = ()
    notices: tuple[Notice, ...] = ()
    suggestions: tuple[Suggestion, ...] = ()
    image: str = ""
    model_path: str = ""
    served_name: str = ""
    forecast: Forecast | None = None  # decode and prefill at the plan's goals, before launch
    host_key: str = ""  # planner/calibration.host_key: which machine a bench calibration applies to
    layers: LayerPlacement | None = None  # KTransformers layer-wise alternative (DeepSeek-V2 family)
    binding: str = ""  # the GPU and phase whose peak limits the GPU experts ("GPU 0, longest prompt")
    schema: int = PLAN_SCHEMA  # plans from another ktwizard version are refused with both versions named
    made_by: str = __version__

    @staticmethod
    def load(data: object, where: str) -> Plan:
        """A plan read back from a file: refused, naming both versions, when another ktwizard wrote it."""
        from ktwizard.errors import BadInput
        from ktwizard.serial import from_data

        schema = data.get("schema", 1) if isinstance(data, dict) else None
        if schema != PLAN_SCHEMA:
            made = data.get("made_by", "an earlier version") if isinstance(data, dict) else "?"
            raise BadInput(
                f"{where}: a plan of schema {schema} (ktwizard {made}); this is ktwizard {__version__} (plan schema "
                f"{PLAN_SCHEMA}): plan again with this version"
            )
        return from_data(Plan, data, where)

    def predicted_peaks(self) -> dict[int, int]:
        """GPU index -> the planned peak (the binding phase): what the monitor marks and the peak check compares."""
        return {b.gpu: b.used for b in self.gpu_budgets}

    def flag(self, name: str) -> Value:
        return next((f.value for f in self.flags if f.name == name), None)

    @property
    def digest(self) -> str:
        """A short hash of what the server receives: labels the container, so drift is visible."""
        blob = json.dumps([[f.name, f.value] for f in self.flags] + [[e.name, e.value] for e in self.env], default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
