"""Run sglang-kt 0.7.2's own start-up code on ktwizard's renderings: its argument parser, `ServerArgs.__post_init__`
(which reads the checkpoint's config.json through transformers and settles backends, KV dtype, page size, ...) and
`check_server_args`, on a faked CUDA device of the host the plan was made for.

Runs in a virtual environment holding the sglang-kt 0.7.2 wheel (installed --no-deps) and its light dependencies
(transformers-kt, pydantic, orjson, dill, fastapi, numpy): `.ci/run` builds it. torch, triton and the CUDA kernels
are not installed: every module that is neither there nor in the standard library is a stub here, and torch is a
fake that answers the device questions (capability, memory, CUDA version) with the host's facts. The runtime's own
Python decides everything else.

stdin: {"gpu": {"cc": [9, 0], "memory_mib": 143771, "count": 1, "cudnn": 91600},
        "cases": [{"id", "argv", "env", "memory" (optional: the plan's ledger, see _memory)}]}
stdout: one JSON object per case: {"id", "ok", "error", "resolved": {field: value}, "flags": {rendered flag: value},
        "memory": {"reservation", "rest", "full_tokens"} when asked}
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import importlib.abc
import importlib.machinery
import io
import json
import logging
import os
import sys
import types

GPU: dict = {}
# Packages stubbed even when installed, and torch-family attributes that must look absent (no NPU/XPU/HPU/MUSA).
FORCE_STUB = {"torch", "triton", "sgl_kernel", "flashinfer", "deep_gemm", "kt_kernel", "torchvision", "torchaudio"}
ABSENT = {"npu", "hpu", "xpu", "musa", "mlu", "xla"}
RESOLVED = (
    "attention_backend",
    "kv_cache_dtype",
    "page_size",
    "disable_custom_all_reduce",
    "chunked_prefill_size",
    "cuda_graph_max_bs",
    "max_running_requests",
    "expert_distribution_recorder_buffer_size",
    "nsa_prefill_backend",
    "nsa_decode_backend",
    "tool_call_parser",
    "moe_runner_backend",
)


class StubMeta(abc.ABCMeta):
    """A class whose every attribute, call, item and operator is another stub: enough for module-level code of
    kernels and models the start-up path imports but never runs."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return StubMeta(name, (Stub,), {})

    def __call__(cls, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # used as a decorator
        return StubMeta("value", (Stub,), {})

    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __bool__(cls):
        return False

    def __iter__(cls):
        return iter(())

    def __getitem__(cls, key):
        return StubMeta("item", (Stub,), {})

    def __setitem__(cls, key, value):
        pass

    def __delitem__(cls, key):
        pass

    def __or__(cls, other):
        return cls

    __ror__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __or__
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __pow__ = __and__ = __rand__ = __or__

    def __neg__(cls):
        return cls

    def __lt__(cls, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __int__(cls):
        return 0

    def __float__(cls):
        return 0.0

    def __index__(cls):
        return 0

    def __len__(cls):
        return 0

    def __contains__(cls, item):
        return False

    def __enter__(cls):
        return cls

    def __exit__(cls, *a):
        return False

    def __hash__(cls):
        return id(cls)

    def __eq__(cls, other):
        return cls is other

    def __mro_entries__(cls, bases):
        return (Stub,)


class Stub(metaclass=StubMeta):
    def __init_subclass__(cls, **kw):
        pass


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name in ABSENT or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return StubMeta(name, (Stub,), {})


def _fake_torch() -> types.ModuleType:
    torch = StubModule("torch")
    torch.__path__ = []
    torch.__version__ = "2.9.1"  # sglang_kt-0.7.2 METADATA pins torch==2.9.1

    class dtype:  # torch.dtype: real instances, so isinstance checks and dtype maps behave
        def __init__(self, name: str, itemsize: int) -> None:
            self.name, self.itemsize = name, itemsize
            self.is_floating_point = "float" in name

        def __repr__(self) -> str:
            return f"torch.{self.name}"

    torch.dtype = dtype
    sizes = {"float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1,
             "uint8": 1, "int8": 1, "bool": 1, "bfloat16": 2, "float16": 2, "half": 2, "int16": 2, "float32": 4,
             "float": 4, "int32": 4, "uint32": 4, "float64": 8, "double": 8, "int64": 8, "long": 8}  # fmt: skip
    for name, size in sizes.items():
        setattr(torch, name, dtype(name, size))
    limits = {"float8_e4m3fn": (448.0, 2**-6, 0.125), "float8_e5m2": (57344.0, 2**-14, 0.25),
              "float8_e4m3fnuz": (240.0, 2**-7, 0.125), "bfloat16": (3.3895e38, 1.1755e-38, 0.0078125),
              "float16": (65504.0, 6.1035e-05, 0.000977), "float32": (3.4028e38, 1.1755e-38, 1.1921e-07)}  # fmt: skip

    def finfo(d):
        top, tiny, eps = limits.get(d.name, limits["float32"])
        return types.SimpleNamespace(max=top, min=-top, tiny=tiny, smallest_normal=tiny, eps=eps, bits=8 * d.itemsize)

    def iinfo(d):
        bits = 8 * d.itemsize
        signed = not d.name.startswith("uint")
        return types.SimpleNamespace(max=2 ** (bits - signed) - 1, min=-(2 ** (bits - 1)) if signed else 0, bits=bits)

    torch.finfo, torch.iinfo = finfo, iinfo

    class Tensor:  # shapes and real element sizes: the runtime's byte estimates call element_size() on these
        def __init__(self, shape, dtype_) -> None:
            self.shape, self.dtype = tuple(shape), dtype_ or torch.float32

        def element_size(self) -> int:
            return self.dtype.itemsize

        def numel(self) -> int:
            n = 1
            for d in self.shape:
                n *= d
            return n

    def tensor(data=(), dtype=None, **_):
        return Tensor((len(data) if isinstance(data, (list, tuple)) else 1,), dtype)

    def empty(*shape, dtype=None, **_):
        return Tensor(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape, dtype)

    torch.tensor, torch.empty = tensor, empty
    torch._utils = types.SimpleNamespace(_element_size=lambda d: d.itemsize)
    cuda = StubModule("torch.cuda")
    cuda.__path__ = []
    cuda.is_available = lambda: True
    cuda.get_device_capability = lambda *a, **k: tuple(GPU["cc"])
    cuda.device_count = lambda: GPU["count"]
    cuda.get_device_name = lambda *a, **k: GPU.get("name", "NVIDIA GPU")
    cuda.mem_get_info = lambda *a, **k: (GPU["memory_mib"] << 20, GPU["memory_mib"] << 20)
    torch.cuda = cuda
    # the image's cuDNN (assets/docker/versions.yaml), as torch.backends.cudnn.version() codes it; None: unknown
    backends, cudnn = StubModule("torch.backends"), StubModule("torch.backends.cudnn")
    backends.__path__, cudnn.__path__ = [], []
    cudnn.version = lambda: GPU.get("cudnn")
    backends.cudnn, torch.backends = cudnn, backends
    version = StubModule("torch.version")
    version.cuda, version.hip, version.git_version = "12.9", None, "fake"
    torch.version = version
    return torch


def _fake_triton() -> types.ModuleType:
    triton = StubModule("triton")
    triton.__path__ = []
    triton.__version__ = "3.5.1"

    def no_gpu():
        raise RuntimeError("no GPU in this check")

    target = types.SimpleNamespace(get_current_target=no_gpu)
    triton.runtime = types.SimpleNamespace(driver=types.SimpleNamespace(active=target))
    return triton


class Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self.real: dict[str, bool] = {}

    def _installed(self, top: str) -> bool:
        if top not in self.real:
            self.real[top] = any(
                f.find_spec(top, None) for f in sys.meta_path if f is not self and hasattr(f, "find_spec")
            )
        return self.real[top]

    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top == "sglang" or top in sys.stdlib_module_names:
            return None
        if top not in FORCE_STUB and (self._installed(top) or not self._from_sglang()):
            return None  # installed, or asked for by another library (transformers probing optional packages)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    @staticmethod
    def _from_sglang() -> bool:
        """Whether the import being resolved comes from the runtime's own code (or from a stub it imported)."""
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if not module.startswith(("importlib", "_frozen_importlib")) and module != __name__:
                return module.split(".")[0] in ("sglang", *FORCE_STUB)
            frame = frame.f_back
        return False

    def create_module(self, spec):
        if spec.name == "torch":
            return _fake_torch()
        if spec.name == "triton":
            return _fake_triton()
        parent, _, leaf = spec.name.rpartition(".")
        if parent == "torch" and leaf in ("cuda", "version", "backends"):
            return getattr(sys.modules["torch"], leaf)
        if spec.name == "torch.backends.cudnn":
            return sys.modules["torch"].backends.cudnn
        module = StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def _memory(job: dict, args, mc) -> dict:
    """The runtime's own load-time memory decisions with the rendered flags on this card: the MXFP4 layerwise
    reservation (model_runner.py:593-607 gate; kt_ep_wrapper.py:3396-3494 registry and estimate, the MoE layers
    registered as kt_ep_wrapper.py:5373 does), the profile of what is left for the pools (memory_profiler.py:160-176,
    free memory after the weights as the plan's ledger puts it) and, for DeepSeek-V4, DSv4MemoryCalculator's pool
    sizes from it capped by --max-total-tokens (model_runner_kv_cache_mixin.py:517-530)."""
    from sglang.srt.model_executor import memory_profiler as mp
    from sglang.srt.utils import common

    torch = sys.modules["torch"]
    reservation = 0
    if (args.kt_method or "").upper() == "MXFP4" and (args.kt_gpu_prefill_token_threshold or 0) > 0:
        from sglang.srt.layers.moe import kt_ep_wrapper as kt

        for registry in (kt._MXFP4_PREFILL_LAYER_REGISTRY, kt._MXFP4_LAYERWISE_MANAGERS):
            registry.clear()
        kt._MXFP4_LAYERWISE_DISABLED_REASONS.clear()
        gpu_method = type(job["gpu_method"], (), {})()  # what the checkpoint's quant config picks (ktwizard's word)
        device = types.SimpleNamespace(type="cuda", index=0)
        for index in job["moe_layers"]:
            layer = types.SimpleNamespace(parameters=lambda: iter([types.SimpleNamespace(device=device)]))
            for name in kt._Mxfp4PrefillSlot.RAW_NAMES:
                setattr(layer, name, torch.empty((1,), dtype=torch.int8))
            config = types.SimpleNamespace(
                method=args.kt_method, weight_path=args.kt_weight_path, num_layers=job["layers"], layer_idx=index
            )
            method = types.SimpleNamespace(
                gpu_prefill_token_threshold=args.kt_gpu_prefill_token_threshold,
                kt_config=config,
                gpu_method=gpu_method,
                global_num_experts=job["experts"],
                _full_init_args=(job["hidden"], job["moe_intermediate"] // args.tp_size, torch.bfloat16),
            )
            kt._register_mxfp4_prefill_layer(method, layer)
        reservation = kt.get_mxfp4_layerwise_prefill_reservation_bytes()
    common.get_available_gpu_memory = lambda *a, **k: job["free_after_weights"] / (1 << 30)
    rest = mp.profile_available_bytes(
        device="cuda",
        gpu_id=0,
        total_gpu_memory=job["after_context"] / (1 << 30),
        mem_fraction_static=args.mem_fraction_static,
        reservation_bytes=reservation,
    )
    out = {"reservation": reservation, "rest": rest, "full_tokens": None}
    if job.get("dsv4"):
        calc = mp.DSv4MemoryCalculator(
            model_config=mc,
            page_size=args.page_size,
            swa_ratio=args.swa_full_tokens_ratio,
            is_speculative=args.speculative_algorithm is not None,
        )
        sizes = calc.calculate_pool_sizes(rest)
        if args.max_total_tokens is not None and sizes.full_max_total_num_tokens > args.max_total_tokens:
            sizes = calc.get_pool_sizes_by_configuration(max_total_tokens=args.max_total_tokens)
        out["full_tokens"] = sizes.full_max_total_num_tokens
    return out


def _value(v):
    return v if isinstance(v, (str, int, float, bool, type(None))) else str(v)


def main() -> int:
    job = json.load(sys.stdin)
    GPU.update(job["gpu"])
    sys.meta_path.insert(0, Stubs())
    logging.disable(logging.CRITICAL)
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        from transformers.utils import import_utils

        # transformers' placeholders for classes whose backends (torchvision, PIL) are absent raise on any method;
        # the runtime's configs only register their processors at import (configs/utils.py:18), which a start-up
        # check never uses: the placeholders answer with stubs instead
        def placeholder_attr(cls, key):
            if key.startswith("_") or key in ("is_dummy", "mro", "call"):
                return type.__getattribute__(cls, key)
            return StubMeta(key, (Stub,), {})

        import_utils.DummyObject.__getattribute__ = placeholder_attr  # type: ignore[method-assign]
        from sglang.srt import server_args as sa
        from sglang.srt.utils import common

    # Kernels register themselves as torch custom ops at import (utils/common.py:2150-2210): nothing to register here
    import sglang.srt.utils as utils

    for module in (common, utils):
        module.direct_register_custom_op = lambda *a, **k: None
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        from sglang.srt.configs.model_config import is_deepseek_nsa
    # nvidia-smi is not here: the device's memory is the host's (utils/common.py:1724 reads it from nvidia-smi)
    common.get_nvgpu_memory_capacity = lambda: float(GPU["memory_mib"])
    parser = argparse.ArgumentParser()
    sa.ServerArgs.add_cli_args(parser)
    # ServerArgs.from_cli_args renames these dests to its fields (server_args.py:6058-6063)
    renamed = {"tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size", "data_parallel_size": "dp_size",
               "attention_context_parallel_size": "attn_cp_size", "moe_data_parallel_size": "moe_dp_size",
               "expert_parallel_size": "ep_size"}  # fmt: skip
    dests = {option: renamed.get(a.dest, a.dest) for option, a in parser._option_string_actions.items()}
    base_env = dict(os.environ)
    for case in job["cases"]:
        os.environ.clear()
        os.environ.update(base_env)
        os.environ.update(case.get("env", {}))
        for fn in vars(common).values():  # device answers are cached per process (lru_cache)
            if hasattr(fn, "cache_clear"):
                fn.cache_clear()
        out = {"id": case["id"], "ok": True, "error": "", "resolved": {}}
        try:
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                args = sa.prepare_server_args(case["argv"])
                args.check_server_args()
            out["resolved"] = {k: _value(getattr(args, k, None)) for k in RESOLVED}
            # does the runtime take the model for a DeepSeek sparse-attention one (its indexer, its pool)?
            mc = args.get_model_config()
            out["resolved"]["dsa_model"] = bool(is_deepseek_nsa(mc.hf_config))
            # what the runtime builds: MLA or not, a vision tower or not (configs/model_config.py:231, :534-656)
            out["resolved"]["mla"] = getattr(mc.attention_arch, "name", str(mc.attention_arch)) == "MLA"
            out["resolved"]["multimodal"] = bool(mc.is_multimodal)
            # each rendered flag's field as the runtime settled it, under the flag's name (its parser's dest)
            out["flags"] = {a: _value(getattr(args, dests[a], None)) for a in case["argv"] if a in dests}
            if case.get("memory"):
                with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    out["memory"] = _memory(case["memory"], args, mc)
        except SystemExit as exc:
            out.update(ok=False, error=f"argument parser exited ({exc.code}): {quiet.getvalue()[-300:]}")
        except Exception as exc:  # noqa: BLE001 - any start-up failure is the verdict we report
            out.update(ok=False, error=f"{exc.__class__.__name__}: {exc}"[:600])
            if os.environ.get("KTW_ACCEPT_DEBUG"):
                import traceback

                traceback.print_exc(file=sys.__stderr__)
        quiet.seek(0)
        quiet.truncate()
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
