"""Measure the GPU bytes sglang-kt 0.7.2's own KV / state pool classes allocate (run on a GPU machine).

Usage: python pool_bytes_device.py SGLANG_SRC_PARENT CASES.json OUT.json

It imports the runtime's real pool modules from the wheel's unpacked source (mem_cache/memory_pool.py,
deepseekv4_memory_pool.py, glm5_next_memory_pool.py, configs/mamba_utils.py, model_executor/memory_profiler.py) and
stubs only what cannot load without the full serving stack: compiled kernels (sgl_kernel) and the packages the import
chain reaches but no pool constructor calls (transformers, zmq, PIL, ...), plus three sglang modules whose import pulls
the whole quantization / model-config graph (hf_transformers_utils, configs.model_config, layers.quantization,
mem_cache.pool_registry). The constructors themselves are the runtime's code, unchanged; each case records
torch.cuda.memory_allocated() before and after construction and the pool's own size report where it has one.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
import traceback
import types
from pathlib import Path

# Named for clarity; the fallback finder stubs any other top-level package the machine lacks as well
STUB_PACKAGES = ("sgl_kernel", "transformers", "pybase64", "zmq", "PIL", "safetensors", "partial_json_parser", "einops")
STUB_SGLANG = (
    "sglang.srt.utils.hf_transformers_utils",
    "sglang.srt.configs.model_config",
    "sglang.srt.mem_cache.pool_registry",
    "sglang.srt.layers.quantization",
    # server_args imports the OpenAI protocol (pydantic models over stubbed types) for its parser lists
    "sglang.srt.function_call",
    "sglang.srt.entrypoints",
    "sglang.srt.parser",
)
STUBBED: list[str] = []
NEVER_STUB = {
    "chardet",
    "charset_normalizer",
    "simplejson",
    "brotli",
    "brotlicffi",
    "socks",
    "winreg",
    "msvcrt",
    "_winapi",
}
DEVICE = os.environ.get("POOL_DEVICE", "cuda")


class _Any:
    """A stand-in object for anything read from a stubbed module: callable, subclassable, falsy."""

    def __init__(self, name: str = "stub") -> None:
        self._n = name

    def __getattr__(self, k: str) -> _Any:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _Any(self._n + "." + k)

    def __call__(self, *a: object, **k: object) -> object:
        if len(a) == 1 and not k and callable(a[0]) and not isinstance(a[0], _Any):
            return a[0]  # used as a decorator: keep the function
        return _Any(self._n + "()")

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (object,)

    def __bool__(self) -> bool:
        return False

    def __or__(self, o: object) -> _Any:
        return self

    __ror__ = __or__

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())


class _StubModule(types.ModuleType):
    def __getattr__(self, k: str) -> _Any:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _Any(self.__name__ + "." + k)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots: set[str], exact_prefix: bool) -> None:
        self.roots, self.exact_prefix = roots, exact_prefix

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        key = name if self.exact_prefix else name.split(".")[0]
        if self.exact_prefix:
            hit = any(key == r or key.startswith(r + ".") for r in self.roots)
        else:  # the fallback: any top-level package the machine lacks, bar the optional ones probed by try/except
            hit = key in self.roots or (
                not key.startswith("_")
                and key not in NEVER_STUB
                and importlib.machinery.PathFinder.find_spec(key) is None
            )
        return importlib.machinery.ModuleSpec(name, self, is_package=True) if hit else None

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        m = _StubModule(spec.name)
        m.__path__ = []
        STUBBED.append(spec.name)
        return m

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        pass


def install(src_parent: str) -> None:
    sys.path.insert(0, src_parent)
    sys.meta_path.insert(0, _Finder(set(STUB_SGLANG), True))
    sys.meta_path.append(_Finder(set(STUB_PACKAGES), False))  # only when the real package is absent
    # skip sglang/__init__.py (the frontend language API) and configs/__init__.py (every model's config class)
    for name in ("sglang", "sglang.srt.configs"):
        pkg = types.ModuleType(name)
        pkg.__path__ = [src_parent + "/" + name.replace(".", "/")]
        sys.modules[name] = pkg


def measure(build, torch):  # type: ignore[no-untyped-def]
    if DEVICE == "cpu":  # a local dry run of the import chain and constructors (no allocator figures)
        return build(), 0, 0
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    pool = build()
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated()
    reserved = torch.cuda.memory_reserved()
    return pool, after - before, reserved


def tensors_bytes(obj, seen=None) -> int:  # type: ignore[no-untyped-def]
    """Bytes of every CUDA tensor reachable from the pool's attributes (a cross-check of memory_allocated)."""
    import torch

    seen = set() if seen is None else seen
    total = 0
    if isinstance(obj, torch.Tensor):
        if (obj.is_cuda or DEVICE == "cpu") and obj.data_ptr() not in seen:
            seen.add(obj.data_ptr())
            total += obj.untyped_storage().nbytes()
        return total
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, (list, tuple)):
        return sum(tensors_bytes(x, seen) for x in obj)
    if isinstance(obj, dict):
        return sum(tensors_bytes(x, seen) for x in obj.values())
    d = getattr(obj, "__dict__", None)
    if d is not None and type(obj).__module__.startswith(("sglang", "__main__")):
        return sum(tensors_bytes(x, seen) for x in d.values())
    return 0


def main() -> int:
    src_parent, cases_path, out_path = sys.argv[1:4]
    install(src_parent)
    import torch
    from sglang.srt.configs import mamba_utils as mu
    from sglang.srt.mem_cache import memory_pool as mp

    if DEVICE == "cpu":
        torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu"
    results: dict = {"torch": torch.__version__, "device": name, "cases": []}
    try:
        from sglang.srt.mem_cache import deepseekv4_memory_pool as v4
        from sglang.srt.model_executor.memory_profiler import DSv4MemoryCalculator
    except Exception:
        v4 = None
        results["v4_import_error"] = traceback.format_exc()[-2000:]
    try:
        from sglang.srt.mem_cache import glm5_next_memory_pool as g5n
    except Exception:
        g5n = None
        results["glm5_next_import_error"] = traceback.format_exc()[-2000:]
    dtypes = {"fp8": torch.float8_e4m3fn, "bf16": torch.bfloat16}
    cases = json.loads(Path(cases_path).read_text())
    for c in cases:
        rec = dict(c)
        try:
            rec.update(run_case(c, torch, mp, mu, v4, g5n, dtypes, DSv4MemoryCalculator if v4 else None))
        except Exception:
            rec["error"] = traceback.format_exc()[-3000:]
        results["cases"].append(rec)
        torch.cuda.empty_cache()
    results["stubbed"] = sorted(set(STUBBED))
    Path(out_path).write_text(json.dumps(results, indent=1))
    print(
        json.dumps([{k: r.get(k) for k in ("id", "allocated", "reported", "error")} for r in results["cases"]])[:6000]
    )
    return 0


def _mamba2_params(mu, c: dict):
    """Qwen3-Next / Qwen3.5's Mamba2 state, as qwen3_next.py:284-303 describes it to the pool."""
    shape = mu.Mamba2StateShape.create(
        tp_world_size=c["tp"],
        intermediate_size=c["linear_value_heads"] * c["linear_value_head_dim"],
        n_groups=c["linear_key_heads"],
        num_heads=c["linear_value_heads"],
        head_dim=c["linear_value_head_dim"],
        state_size=c["linear_key_head_dim"],
        conv_kernel=c["linear_conv_kernel"],
    )
    return mu.Mamba2CacheParams(shape=shape, layers=list(range(c["linear_layers"])))


def run_case(c, torch, mp, mu, v4, g5n, dtypes, calc_cls):  # type: ignore[no-untyped-def]
    kind, dev = c["kind"], DEVICE
    out: dict = {}
    if kind == "nsa":  # model_runner_kv_cache_mixin.py:843-857 with calculate_mla_kv_cache_dim (:349-386)
        dt = dtypes[c["kv_dtype"]]
        dim = c["kv_lora_rank"] + c["qk_rope_head_dim"]
        if dt == torch.float8_e4m3fn:
            dim = c["kv_lora_rank"] + c["kv_lora_rank"] // 128 * 4 + c["qk_rope_head_dim"] * 2
        pool, alloc, _ = measure(
            lambda: mp.NSATokenToKVPool(
                c["size"],
                page_size=64,
                kv_lora_rank=c["kv_lora_rank"],
                dtype=dt,
                qk_rope_head_dim=c["qk_rope_head_dim"],
                layer_num=c["layers"],
                device=dev,
                index_head_dim=c["index_head_dim"],
                enable_memory_saver=False,
                kv_cache_dim=dim,
            ),
            torch,
        )
        out["reported"] = int(pool.get_kv_size_bytes())  # NSA's includes the index buffers (memory_pool.py)
    elif kind == "minimax_sparse":  # mixin :929-950
        n, sparse, kv_sparse = c["layers"], c["index_layers"], c["index_value_layers"]
        dense_ids = list(range(n - sparse))
        sparse_ids = list(range(n - sparse, n))
        disable = sparse_ids[kv_sparse:]
        pool, alloc, _ = measure(
            lambda: mp.MiniMaxSparseKVPool(
                size=c["size"],
                page_size=c["page_size"],
                dtype=dtypes[c["kv_dtype"]],
                index_dtype=torch.bfloat16,
                head_num=c["kv_heads"],
                head_dim=c["head_dim"],
                idx_head_dim=c["index_head_dim"],
                dense_layer_ids=dense_ids,
                sparse_layer_ids=sparse_ids,
                disable_value_sparse_layer_ids=disable,
                device=dev,
                enable_memory_saver=False,
                start_layer=0,
                end_layer=n,
            ),
            torch,
        )
        rep = 0
        for sub in (pool.main_pool, pool.index_kv_pool, pool.index_k_pool):
            if sub is not None:
                s = sub.get_kv_size_bytes()
                rep += sum(s) if isinstance(s, tuple) else s
        out["reported"] = int(rep)
    elif kind == "dsv4":  # mixin :479-556 sizes, :741-789 construction
        # get_ring_size reads only speculative_algorithm from the global server args (deepseekv4_memory_pool.py:649-652)
        from sglang.srt import server_args as sa

        sa.set_global_server_args_for_scheduler(types.SimpleNamespace(speculative_algorithm=None))
        mc = types.SimpleNamespace(
            qk_nope_head_dim=c["qk_nope_head_dim"],
            qk_rope_head_dim=c["qk_rope_head_dim"],
            index_head_dim=c["index_head_dim"],
            compress_ratios=c["compress_ratios"],
            window_size=c["window"],
        )
        calc = calc_cls(model_config=mc, page_size=256, swa_ratio=c["swa_ratio"])
        sizes = calc.get_pool_sizes_by_configuration(max_total_tokens=c["max_total_tokens"])
        out["bytes_per_full_token"] = calc.bytes_per_full_token
        out["pool_sizes"] = (
            {k: int(getattr(sizes, k)) for k in sizes._fields}
            if hasattr(sizes, "_fields")
            else ({k: int(v) for k, v in vars(sizes).items()})
        )
        pool, alloc, _ = measure(
            lambda: v4.DeepSeekV4TokenToKVPool(
                max_num_reqs=c["max_num_reqs"],
                swa_size=sizes.swa_max_total_num_tokens,
                c4_size=sizes.c4_max_total_num_tokens,
                c128_size=sizes.c128_max_total_num_tokens,
                c4_state_pool_size=sizes.c4_state_pool_size,
                c128_state_pool_size=sizes.c128_state_pool_size,
                page_size=256,
                swa_page_size=256,
                dtype=torch.float8_e4m3fn,
                state_dtype=torch.float32,
                qk_nope_head_dim=c["qk_nope_head_dim"],
                qk_rope_head_dim=c["qk_rope_head_dim"],
                indexer_head_dim=c["index_head_dim"],
                layer_num=c["layers"],
                device=dev,
                enable_memory_saver=False,
                compression_ratios=c["compress_ratios"],
                start_layer=0,
                end_layer=c["layers"],
            ),
            torch,
        )
    elif kind in ("mamba", "kda"):  # HybridReqToTokenPool's MambaPool (memory_pool.py:212-262)
        if kind == "mamba":  # qwen3_next.py:284-303
            params = _mamba2_params(mu, c)
        else:  # configs/glm5_next.py:479-485
            shape = mu.KimiLinearStateShape.create(
                tp_world_size=c["tp"],
                num_heads=c["linear_value_heads"],
                head_dim=c["linear_value_head_dim"],
                conv_kernel_size=c["linear_conv_kernel"],
            )
            params = mu.KimiLinearCacheParams(shape=shape, layers=list(range(c["linear_layers"])))
        out["mamba_cache_per_req"] = int(params.mamba_cache_per_req)
        pool, alloc, _ = measure(
            lambda: mp.MambaPool(size=c["slots"], spec_state_size=c["slots"], cache_params=params, device=dev),
            torch,
        )
        out["reported"] = int(pool.mamba_cache.mem_usage_bytes())
    elif kind == "req_table":  # ReqToTokenPool (memory_pool.py:129-147), max_context_len = context + 4 (mixin :678)
        pool, alloc, _ = measure(
            lambda: mp.ReqToTokenPool(
                size=c["concurrency"], max_context_len=c["context"] + 4, device=dev, enable_memory_saver=False
            ),
            torch,
        )
    elif kind == "hybrid_req":  # HybridReqToTokenPool as the mixin builds it for mambaish models (:713-724)
        params = _mamba2_params(mu, c)
        pool, alloc, _ = measure(
            lambda: mp.HybridReqToTokenPool(
                size=c["concurrency"],
                mamba_size=c["slots"],
                mamba_spec_state_size=c["concurrency"],
                max_context_len=c["context"] + 4,
                device=dev,
                enable_memory_saver=False,
                cache_params=params,
                enable_mamba_extra_buffer=False,
            ),
            torch,
        )
    elif kind == "glm5_next_dsa":  # glm5_next_memory_pool.py:65-200 via build_glm5_next_kv_pool (:541-583)
        dt = dtypes[c["kv_dtype"]]
        pool, alloc, _ = measure(
            lambda: g5n.Glm5NextNSATokenToKVPool(
                size=c["size"],
                page_size=64,
                kv_lora_rank=c["kv_lora_rank"],
                dtype=dt,
                qk_rope_head_dim=0,
                layer_num=c["layers"],
                device=dev,
                index_head_dim=c["index_head_dim"],
                enable_memory_saver=False,
                kv_cache_dim=c["kv_lora_rank"],
                req_pool_size=c["req_pool_size"],
            ),
            torch,
        )
    elif kind == "mha_full":  # HybridLinearKVPool's full-attention MHATokenToKVPool (memory_pool.py:1186-)
        pool, alloc, _ = measure(
            lambda: mp.MHATokenToKVPool(
                size=c["size"],
                page_size=c["page_size"],
                dtype=dtypes[c["kv_dtype"]],
                head_num=c["kv_heads"],
                head_dim=c["head_dim"],
                layer_num=c["layers"],
                device=dev,
                enable_memory_saver=False,
            ),
            torch,
        )
        s = pool.get_kv_size_bytes()
        out["reported"] = int(sum(s) if isinstance(s, tuple) else s)
    else:
        raise ValueError(kind)
    out["allocated"] = int(alloc)
    out["tensor_bytes"] = int(tensors_bytes(pool))
    del pool
    return out


if __name__ == "__main__":
    sys.exit(main())
