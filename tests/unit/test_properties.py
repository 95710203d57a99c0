"""Property tests for every parser that reads what others wrote: whatever the input, the parser returns a value or
raises BadInput (one line for the person) - never another exception, never a hang."""

from __future__ import annotations

import contextlib
import json
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktwizard.errors import BadInput
from ktwizard.host.spec import host_from_spec
from ktwizard.models.config import parse_config
from ktwizard.models.inspect import _indexed
from ktwizard.models.presets import get_preset
from ktwizard.models.safetensors import read_header
from ktwizard.monitor.metrics import parse_scrape
from ktwizard.planner.types import Plan

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=12,
)
KIMI = get_preset("kimi-k2.7-code").config
KEYS = sorted(k for k in KIMI if k != "quantization_config") + ["text_config", "layer_types", "mlp_only_layers"]


@FAST
@given(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6))
def test_config_json_with_any_values(changes):
    cfg = {**KIMI, **changes}
    try:
        arch = parse_config(cfg, "config.json")
    except BadInput:
        return
    assert arch.layers > 0 and arch.routed_experts > 0 and arch.moe_layers


@FAST
@given(json_values)
def test_config_json_of_any_shape(data):
    with contextlib.suppress(BadInput):
        parse_config(data, "config.json")


@FAST
@given(
    st.one_of(st.binary(max_size=64), json_values.map(lambda v: json.dumps(v).encode())),
    st.one_of(st.none(), st.integers(0, 2**64 - 1)),
)
def test_safetensors_headers(body, declared):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.safetensors"
        length = len(body) if declared is None else declared
        path.write_bytes(struct.pack("<Q", length) + body)
        with contextlib.suppress(BadInput):
            read_header(path)


@FAST
@given(json_values)
def test_safetensors_index(data):
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "model.safetensors.index.json"
        index.write_text(json.dumps(data))
        try:
            files = _indexed(Path(tmp), index)
        except BadInput:
            return
        assert all(f.parent == Path(tmp) for f in files)  # never outside the checkpoint folder


@FAST
@given(json_values)
def test_host_specs(data):
    try:
        host = host_from_spec(data, "host spec")
    except BadInput:
        return
    assert host.memory.total > 0


@FAST
@given(st.dictionaries(st.sampled_from(["gpus", "cpu", "memory_gib", "numa_nodes", "name"]), json_values, max_size=5))
def test_host_specs_near_valid(changes):
    base = {
        "gpus": [{"name": "NVIDIA H200", "memory_gib": 141}],
        "cpu": {"cores_per_socket": 8, "flags": ["avx2"]},
        "memory_gib": 64,
    }
    with contextlib.suppress(BadInput):
        host_from_spec({**base, **changes}, "host spec")


@FAST
@given(json_values)
def test_plan_files(data):
    with contextlib.suppress(BadInput):
        Plan.load(data, "plan.json")


@FAST
@given(
    st.lists(
        st.one_of(
            st.text(max_size=40),
            st.sampled_from(
                [
                    "# TYPE sglang:num_running_reqs gauge",
                    'sglang:num_running_reqs{tp_rank="0"} NaN',
                    'sglang:num_running_reqs{tp_rank="0"} abc',
                    "# TYPE sglang:prompt_tokens_total counter",
                    "sglang:prompt_tokens_total 1e400",
                    'sglang:time_to_first_token_seconds_bucket{le="x"} 3',
                    "# TYPE sglang:time_to_first_token_seconds histogram",
                ]
            ),
        ),
        max_size=8,
    )
)
def test_prometheus_text(lines):
    # the sampler turns these errors into a down sample with the reason (tested in test_monitor)
    with contextlib.suppress(ValueError, KeyError, TypeError):
        parse_scrape("\n".join(lines), 0.0)


@FAST
@given(st.lists(st.one_of(st.text(max_size=30), json_values.map(json.dumps)), max_size=6))
def test_sse_chunks(payloads):
    """The bench client's stream parser: a chunk that is not a JSON object is one clear RuntimeError."""
    import asyncio

    from ktwizard.bench.client import stream_chat

    class Resp:
        status_code = 200

        async def aiter_bytes(self):
            for p in payloads:
                yield f"data: {p}\n".encode()

        async def aread(self):
            return b""

    class Http:
        def stream(self, *a, **k):
            class Ctx:
                async def __aenter__(self):
                    return Resp()

                async def __aexit__(self, *exc):
                    return False

            return Ctx()

    with contextlib.suppress(RuntimeError):
        asyncio.run(stream_chat(Http(), "http://x", "m", "hi", 1))
