"""Replay one Kimi K2 decoder layer's GPU allocations, in the runtime's order, with torch's default caching allocator
and with expandable segments, and measure what the allocator reserves above the live peak.

The order follows sglang-kt 0.7.2 (runtime-memory-audit-2 §6, forward_mha.py:265-390 for the chunked MHA attention
step, deepseek_v2.py:768-860 and fused_marlin_moe.py:151-164 for the MoE step, kt_ep_wrapper.py:2685-2693 for the
INT4 restore): 2 layers kept, then 60 layers x 2 passes of attention step -> free -> MoE step -> restore, at chunk
16,384 over a prefix of 131,072 tokens (chunked) or 131,072 tokens in one shot.

Two measures per allocator setting, each in a fresh process (the variable is read when CUDA starts):
  unlimited  peak reserved - peak allocated
  capped     the smallest cap above the live peak that survives (torch.cuda.set_per_process_memory_fraction), from a
             sweep of offsets: the allocator overhead a plan must leave for this pattern
Run on a GPU machine: python3 benchmarks/allocator_replay.py --out results.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

GiB = 2**30
H, I, E, HEADS, M = 7168, 2048, 384, 64, 16384  # Kimi K2, chunk 16,384
P_W13, P_W2 = E * 2 * I * H // 2, E * H * I // 2
S_W13, S_W2 = E * 2 * I * (H // 32) * 2, E * H * (I // 32) * 2
INDEX = E * 2 * (H + I) * 4
OFFSETS_GIB = (0.06, 0.12, 0.19, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0)


def replay(path: str, cap_gib: float | None) -> dict:
    import torch

    dev = torch.device("cuda")
    if cap_gib is not None:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_gib * GiB / total))

    def empty(n: int, dtype=torch.uint8):
        return torch.empty(n, dtype=dtype, device=dev)

    bf = 2
    # the layerwise layer kept: the pinned originals (+ g_idx/sort) and the restored raw copy
    kept = [empty(P_W13), empty(P_W2), empty(S_W13), empty(S_W2), empty(INDEX)]
    raw = {"w13": empty(P_W13), "w2": empty(P_W2), "s13": empty(S_W13), "s2": empty(S_W2)}
    n = 131072
    residual = empty(M * H * bf)
    for _ in range(2):
        for _layer in range(60):
            # attention step
            normed = empty(M * H * bf)
            latent = empty(M * 2112 * bf)
            q = empty(M * HEADS * 192 * bf)
            if path == "chunked":
                kv_ext, k_ext = empty(M * HEADS * 256 * bf), empty(M * HEADS * 192 * bf)
                acc, lse = empty(M * HEADS * 128 * bf), empty(M * HEADS * 4)
                gather = empty(n * 576 * bf)
                kv, k = empty(n * HEADS * 256 * bf), empty(n * HEADS * 192 * bf)
                out, olse = empty(M * HEADS * 128 * bf), empty(M * HEADS * 4)
                tmp, tlse = empty(M * HEADS * 128 * bf), empty(M * HEADS * 4)
                del gather, kv, k, out, olse, acc, lse
                acc = tmp
                del kv_ext, k_ext, tlse
            else:
                gather = empty(n * 576 * bf)
                kv, k = empty(n * HEADS * 256 * bf), empty(n * HEADS * 192 * bf)
                acc = empty(M * HEADS * 128 * bf)
                del gather, kv, k
            del q
            o = empty(M * H * bf)
            del acc, latent, normed
            residual = o
            # MoE step
            normed = empty(M * H * bf)
            logits = empty(M * E * 4)
            gate_up, act = empty(M * 4096 * bf), empty(M * 2048 * bf)
            shared = empty(M * H * bf)
            del gate_up, act
            c13, c2 = empty(M * 8 * H * bf), empty(M * 8 * I * bf)
            moe_out = empty(M * H * bf)
            del c13, c2
            # restore: scales freed, a fresh packed w13 while the old lives, then w2, then fresh scales
            del raw["s13"], raw["s2"]
            w13 = empty(P_W13)
            raw["w13"] = w13
            del w13
            w2 = empty(P_W2)
            raw["w2"] = w2
            del w2
            raw["s13"], raw["s2"] = empty(S_W13), empty(S_W2)
            del normed, logits, shared
            residual = moe_out
    torch.cuda.synchronize()
    out = {
        "allocated_peak": torch.cuda.max_memory_allocated(),
        "reserved_peak": torch.cuda.max_memory_reserved(),
        "torch": torch.__version__,
        "settings": torch.cuda.memory._snapshot().get("allocator_settings", {}),
    }
    del kept, raw, residual
    return out


def child(setting: str, path: str, cap: float | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTORCH_")}
    if setting:
        env["PYTORCH_CUDA_ALLOC_CONF"] = setting
    args = [sys.executable, __file__, "--child", path] + ([f"--cap={cap}"] if cap is not None else [])
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return {"oom": "OutOfMemoryError" in p.stderr or "out of memory" in p.stderr, "error": p.stderr[-300:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def which_var_is_honoured() -> dict:
    """Which name this machine's torch takes expandable_segments from (the pinned 2.9.1 takes only the CUDA one)."""
    code = (
        "import torch; torch.zeros(1, device='cuda'); "
        "print(torch.cuda.memory._snapshot()['allocator_settings'].get('expandable_segments'))"
    )
    out = {}
    for var in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTORCH_")}
        env[var] = "expandable_segments:True"
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        out[var] = p.stdout.strip()[-200:] or p.stderr[-200:]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--cap", type=float)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(replay(a.child, a.cap)))
        return
    result: dict = {"honoured": which_var_is_honoured(), "runs": []}
    for path in ("chunked", "one_shot"):
        for name, setting in (("default", ""), ("expandable", "expandable_segments:True")):
            free = child(setting, path, None)
            row = {"path": path, "allocator": name, **free}
            if "allocated_peak" in free:
                live = free["allocated_peak"] / GiB
                row["unlimited_overhead_gib"] = round((free["reserved_peak"] - free["allocated_peak"]) / GiB, 3)
                survived = None
                for off in OFFSETS_GIB:
                    r = child(setting, path, live + off)
                    if "allocated_peak" in r:
                        survived = off
                        break
                    row.setdefault("failed_at_gib", []).append(off)
                row["survives_at_gib"] = survived
            result["runs"].append(row)
            print(json.dumps(row), flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
