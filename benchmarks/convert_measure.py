"""kt-kernel 0.7.2's CPU-weight converter run for real on random-weight checkpoints, against the plan's figures.

    python benchmarks/convert_measure.py OUT.json [--shapes tiny,v2lite [--layers-per-process K]]

Needs KTWIZARD_KT_PYTHON (a Python with kt-kernel 0.7.2 and torch), KTWIZARD_KT_CONVERTER (convert_cpu_weights.py of
kvcache-ai/ktransformers 95009ea6) and a CPU with AVX512F + AVX512BW (the AMX classes' ISA). Each shape's checkpoint
is written with random BF16 weights in the real tensor layout (tests/safetensors_fixture.py), read by ktwizard's own
inspector into the spec the planner sizes, converted by ktwizard.deploy.convert.run (the code `ktwizard convert`
runs), and the measured peak RSS, /dev/shm scratch (sampled), seconds and output bytes are set beside
ktwizard.planner.convert.needs. Shapes: `tiny` is the test's (4 experts, H = I = 512); `v2lite` is DeepSeek-V2-Lite's
real widths (64 experts, H 2048, I 1408) with 3 decoder layers, the first dense.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ktwizard.planner.threads import ThreadPlan

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]


def shapes() -> dict[str, dict]:
    from ktwizard.models.presets import get_preset

    base = dict(get_preset("deepseek-v2-lite").config)
    tiny = dict(base, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, num_hidden_layers=2,
                first_k_dense_replace=1, hidden_size=512, moe_intermediate_size=512, intermediate_size=1024,
                vocab_size=1024, num_attention_heads=4, num_key_value_heads=4, n_group=1, topk_group=1)  # fmt: skip
    v2lite = dict(base, num_hidden_layers=3, first_k_dense_replace=1, vocab_size=8192)
    v2lite6 = dict(v2lite, num_hidden_layers=6)  # 5 MoE layers: does the peak grow layer by layer?
    v2lite12 = dict(v2lite, num_hidden_layers=12)  # 11 MoE layers: the growth per layer, held out from v2lite6
    return {"tiny": tiny, "v2lite": v2lite, "v2lite6": v2lite6, "v2lite12": v2lite12}


def scratch_sampler(stop: threading.Event, peak: list[int]) -> None:
    """The largest /dev/shm/kt_convert_* total seen, every 20 ms (the converter's per-layer .kt files, cc:618-619)."""
    while not stop.is_set():
        total = 0
        for d in Path("/dev/shm").glob("kt_convert_*"):
            for f in d.rglob("*"):
                with contextlib.suppress(OSError):
                    total += f.stat().st_size if f.is_file() else 0
        peak[0] = max(peak[0], total)
        time.sleep(0.02)


def rss_sampler(stop: threading.Event, peak: dict[str, int]) -> None:
    """The converter process's largest RssAnon / RssFile / RssShmem (/proc/PID/status), every 20 ms: anonymous
    memory is what the plan's RAM figure promises; file pages (the mmapped checkpoint, safe_open) are page cache the
    kernel can drop, which wait4's peak RSS counts too."""
    while not stop.is_set():
        for status in Path("/proc").glob("[0-9]*/status"):
            with contextlib.suppress(OSError):
                if b"convert_cpu_weights" not in (status.parent / "cmdline").read_bytes():
                    continue
                for line in status.read_text().splitlines():
                    key, _, value = line.partition(":")
                    if key in ("RssAnon", "RssFile", "RssShmem", "VmHWM"):
                        now = int(value.split()[0]) * 1024
                        peak[key] = max(peak.get(key, 0), now)
                        peak[key + "_now"] = now
        time.sleep(0.02)


def measure(name: str, cfg: dict, work: Path, per_process: int | None = None) -> dict:
    from test_convert import write_random

    from ktwizard.deploy.convert import converter, pinning_refusal, run
    from ktwizard.models.inspect import inspect_checkpoint
    from ktwizard.planner.convert import needs

    src = work / name
    write_random(src, cfg)
    spec = inspect_checkpoint(str(src)).spec
    plan = needs(spec, "AMXINT4", per_process)
    py, script = converter()
    pool = threads()
    stop, peak, rss = threading.Event(), [0], {}
    samplers = [
        threading.Thread(target=scratch_sampler, args=(stop, peak), daemon=True),
        threading.Thread(target=rss_sampler, args=(stop, rss), daemon=True),
    ]
    for t in samplers:
        t.start()
    at_layer: list[int] = []  # RssAnon as each layer starts: what earlier layers left resident

    def on_layer(done: int, total: int) -> None:
        at_layer.append(rss.get("RssAnon_now", 0))

    try:
        done = run(
            py, script, src, work / f"{name}-AMXINT4", "bf16", "int4", pool.cpuinfer, pool.pools, on_layer,
            unpinned=pinning_refusal(py) is not None, layers_per_process=per_process,
        )  # fmt: skip
    finally:
        stop.set()
        for t in samplers:
            t.join()
    out_bytes = sum(f.stat().st_size for f in done.output.rglob("*") if f.is_file() and f.suffix == ".safetensors")
    # the plan's RAM is the converter's own bytes over the interpreter's, plus the /dev/shm scratch (tmpfs is RAM)
    return {
        "shape": name,
        "checkpoint_bytes": (src / "model.safetensors").stat().st_size,
        "moe_layers": plan.layers,
        "layers_converted": done.layers,
        "seconds": round(done.seconds, 2),
        "plan_disk": plan.disk,
        "measured_disk": out_bytes,
        "plan_ram": plan.ram,
        "plan_scratch": plan.scratch,
        "measured_peak_rss": done.peak_rss,
        "measured_scratch_peak": peak[0],
        "sampled_peaks": {k: v for k, v in rss.items() if not k.endswith("_now")},  # of the converter, bytes
        "anon_at_layer_start": at_layer,  # the last entry is at completion
        "threads": pool.cpuinfer,
        "layers_per_process": per_process,
    }


def threads() -> ThreadPlan:
    """The threads and pools a plan gives this host, as `ktwizard convert` passes them (app/convert.py)."""
    from ktwizard.host.probe import probe
    from ktwizard.planner.threads import plan_threads

    return plan_threads(probe(with_engine=False))


def main() -> None:
    out = Path(sys.argv[1])
    wanted = sys.argv[3].split(",") if sys.argv[2:3] == ["--shapes"] else list(shapes())
    per = int(sys.argv[5]) if sys.argv[4:5] == ["--layers-per-process"] else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in wanted:
            rows.append(measure(name, shapes()[name], Path(tmp), per))
            print(json.dumps(rows[-1]), flush=True)
    out.write_text(json.dumps({"cpu": _cpu(), "rows": rows}, indent=1) + "\n")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
