"""Cross-check the routing-dump format and the placement arithmetic against torch and the runtime's own code.

Run on a machine with torch (the GPU machine): python benchmarks/routing_format_check.py DIR OUT.json
DIR holds kt-kernel 0.7.2's kt_kernel/experts_base.py and sglang-kt 0.7.2's kt_ep_wrapper.py (from the wheels).
1. torch.load(weights_only=True) reads the stand-in's torchsave output to the same counts;
2. ktwizard's reader reads a real torch.save of {"logical_count": int64 [steps, layers, experts], ...};
3. the runtime's generate_gpu_experts_masks and generate_uniform_masks (extracted from the wheels' source, run with
   torch) pick the same GPU experts as ktwizard's placement arithmetic, on a Zipf-like recording of a real preset.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "standin")]

import torch  # noqa: E402
from sglang.torchsave import save_counts, zipf  # noqa: E402

from ktwizard.models.presets import get_preset  # noqa: E402
from ktwizard.models.routing import read_counts  # noqa: E402
from ktwizard.planner.placement import frequency_masks, placement_report, uniform_masks  # noqa: E402


def runtime_function(path: Path, name: str):
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    ns: dict = {"torch": torch, "Optional": object}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), ns)  # the runtime's own code
    return ns[name]


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])

    spec = get_preset("qwen3-30b-a3b").spec()
    counts = zipf(spec.layers, spec.routed_experts, spec.moe_layers, steps=3)
    ours = Path("/tmp/ours.pt")
    save_counts(counts, ours)
    loaded = torch.load(ours, map_location="cpu", weights_only=True)
    same_load = loaded["logical_count"].tolist() == counts and loaded["logical_count"].dtype == torch.int64
    real = Path("/tmp/real.pt")
    torch.save(
        {
            "rank": 0,
            "logical_count": torch.tensor(counts, dtype=torch.int64),
            "average_utilization_rate_over_window": None,
        },
        real,
    )
    read = read_counts(real)
    summed = torch.tensor(counts).sum(0).tolist()
    same_read = [list(map(int, r)) for r in read.counts] == summed
    freq_fn = runtime_function(src / "kt_experts_base.py", "generate_gpu_experts_masks")
    uni_fn = runtime_function(src / "kt_ep_wrapper.py", "generate_uniform_masks")
    results = {}
    for per_layer in (4, 16, 64):
        total = per_layer * len(spec.moe_layers)
        theirs_f = freq_fn(torch.tensor(summed, dtype=torch.float32), total).tolist()
        theirs_u = uni_fn(spec.layers, spec.routed_experts, total, spec.moe_layers[0], 1).tolist()
        mine_f = frequency_masks(read, total)
        mine_u = uniform_masks(spec.layers, spec.routed_experts, spec.moe_layers, total)
        report = placement_report(read, spec, per_layer)
        calls = sum(map(sum, summed))
        pairs = zip(summed, theirs_f, strict=True)
        theirs_share = sum(v for row, m in pairs for v, k in zip(row, m, strict=True) if k) / calls
        results[per_layer] = {
            "frequency_masks_equal": theirs_f == mine_f,  # may differ only where counts tie (topk's tie order)
            "frequency_share_runtime": theirs_share,
            "uniform_masks_equal": theirs_u == mine_u,
            "uniform_share": report.uniform,
            "frequency_share": report.frequency,
        }
    result = {
        "torch": torch.__version__,
        "torch_load_reads_ours": same_load,
        "ours_reads_torch_save": same_read,
        "by_gpu_experts_per_layer": results,
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
