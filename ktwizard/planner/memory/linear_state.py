"""The linear-attention state pool of hybrid models (Qwen3-Next, Qwen3.5: the gated-delta-net configs SGLang treats
as `mambaish`, model_runner.py:1660-1670, :1730-1737), as sglang-kt 0.7.2 sizes and allocates it.

Left to itself the runtime gives the state pool mamba_full_memory_ratio / (1 + ratio) = 0.9 / 1.9 of the KV budget
(model_runner_kv_cache_mixin.py:325-340), so a plan whose pool was sized for its tokens alone gets about half of them
(262,144 promised, 147,306 allocated). ktwizard renders --max-mamba-cache-size instead (:310-314 takes it as given):
the slots the scheduler needs, MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO (3, :47) per running request with the
radix cache on and the default no_buffer strategy (:590-603; server_args.py:1226-1229), so the KV pool keeps the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.families.registry import of as family_of
from ktwizard.models.spec import ModelSpec

SLOTS_PER_REQUEST = 3  # model_runner_kv_cache_mixin.py:47, applied at :597-603: max requests = slots // 3
CONV_DTYPE_BYTES = 2  # mamba_utils.py:68: SGLANG_MAMBA_CONV_DTYPE, bfloat16 by default
SSM_DTYPE_BYTES = 4  # mamba_utils.py:71: float32 unless the config's mamba_ssm_dtype or SGLANG_MAMBA_SSM_DTYPE says


@dataclass(frozen=True)
class LinearLayerState:
    """One linear-attention layer's state for one request on one TP rank (mamba_utils.py:142-170)."""

    conv_elements: int  # conv_dim / tp x (conv_kernel - 1)
    ssm_elements: int  # heads / tp x head_dim x state_size

    @property
    def bytes(self) -> int:
        return self.conv_elements * CONV_DTYPE_BYTES + self.ssm_elements * SSM_DTYPE_BYTES


def slots_per_request(spec: ModelSpec) -> int:
    """The family's slots per request (Family.state_slots_per_request: a family running with the radix cache forced
    off keeps one slot per request, :597-598)."""
    return family_of(spec).state_slots_per_request(spec)


def layer_state(spec: ModelSpec, tp: int) -> LinearLayerState:
    """Mamba2StateShape.create as qwen3_next.py:284-303 calls it: intermediate = value heads x value dim, groups = key
    heads (widened to a multiple of TP when they do not divide, mamba_utils.py:29-38), state size = key dim. A family
    whose linear layers keep another state answers itself (Family.linear_layer_state)."""
    a = spec.attention
    own = family_of(spec).linear_layer_state(spec, tp)
    if own is not None:
        return LinearLayerState(*own)
    groups = a.linear_key_heads
    if groups % tp:
        groups += tp - groups  # extra_groups_for_head_shards
    conv_dim = a.linear_value_heads * a.linear_value_head_dim + 2 * groups * a.linear_key_head_dim
    conv = conv_dim // tp * (a.linear_conv_kernel - 1)
    ssm = a.linear_value_heads // tp * a.linear_value_head_dim * a.linear_key_head_dim
    return LinearLayerState(conv, ssm)


def linear_layers(spec: ModelSpec) -> int:
    return family_of(spec).linear_layers(spec)


def per_request(spec: ModelSpec, tp: int) -> int:
    """mamba_cache_per_req (mamba_utils.py:116-125): one request's state over every linear-attention layer."""
    n = linear_layers(spec)
    return layer_state(spec, tp).bytes * n if n else 0


def slots(concurrency: int, per_request: int = SLOTS_PER_REQUEST) -> int:
    """--max-mamba-cache-size: the state slots the scheduler needs to run `concurrency` requests."""
    return per_request * concurrency


@dataclass(frozen=True)
class StatePool:
    """The linear-attention state pool: its slots and the bytes they take."""

    slots: int  # --max-mamba-cache-size
    per_request: int
    counted: int  # what handle_max_mamba_cache subtracts from the KV budget: slots x per request (:342-347)
    allocated: int  # what MambaPool allocates: slots + 1 (memory_pool.py:244-262)


def state_pool(spec: ModelSpec, tp: int, concurrency: int) -> StatePool | None:
    one = per_request(spec, tp)
    if not one:
        return None
    n = slots(concurrency, slots_per_request(spec))
    return StatePool(n, one, n * one, (n + 1) * one)
