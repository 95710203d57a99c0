"""On a GPU machine: does the peak check's NVML sampler catch what a CUDA process allocates in steps, the way
sglang-kt does on a long prompt (a layer that stays, temporaries that come and go)?

A torch child holds a base, then on command: (1) a 10 GiB "layer" that stays plus a 3 GiB temporary for 0.3 s,
(2) a 5 GiB temporary for 0.15 s, then temporaries of 2 GiB for 0.1, 0.05, 0.03 and 0.02 s (the sampling floor).
ktwizard's PeakSampler (real NVML through pynvml, v2 used + reserved) wraps each step; nvidia-smi is read after.
Usage: python benchmarks/device_peak.py OUT.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GiB = 2**30
CHILD = """
import sys, time, torch
torch.cuda.init()
base = torch.empty(6 * 2**30, dtype=torch.uint8, device='cuda')
kept = []
print('ready', flush=True)
for line in sys.stdin:
    cmd, *a = line.split()
    if cmd == 'layer':
        kept.append(torch.empty(int(a[0]) * 2**30, dtype=torch.uint8, device='cuda'))
    if cmd in ('layer', 'spike'):
        gib, hold = int(a[-2]), float(a[-1])
        tmp = torch.empty(gib * 2**30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize()
        time.sleep(hold)
        del tmp; torch.cuda.empty_cache(); torch.cuda.synchronize()
    print('done', flush=True)
"""
STEPS = [  # (label, command, expected peak over the level before, expected level after - before)
    ("layer kept + 3 GiB for 0.3 s", "layer 10 3 0.3", 13 * GiB, 10 * GiB),
    ("5 GiB for 0.15 s", "spike 5 0.15", 5 * GiB, 0),
    ("2 GiB for 0.1 s", "spike 2 0.1", 2 * GiB, 0),
    ("2 GiB for 0.05 s", "spike 2 0.05", 2 * GiB, 0),
    ("2 GiB for 0.03 s", "spike 2 0.03", 2 * GiB, 0),
    ("2 GiB for 0.02 s", "spike 2 0.02", 2 * GiB, 0),
]


def smi_used() -> int:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
        capture_output=True,
        text=True,
    ).stdout
    return int(out.strip().splitlines()[0]) * 2**20


def main() -> None:
    from ktwizard.deploy.peak import SAMPLE_EVERY_S, LiveMemory, PeakSampler

    memory = LiveMemory((0,))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(1)
    rows = []
    for label, cmd, peak_delta, kept_delta in STEPS:
        before = memory.used()[0]
        t0 = time.perf_counter()
        with PeakSampler(memory) as sampler:
            child.stdin.write(cmd + "\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "done"
        after = memory.used()[0]
        rows.append(
            {
                "step": label,
                "seconds": round(time.perf_counter() - t0, 3),
                "before_mib": before >> 20,
                "peak_mib": sampler.peak[0] >> 20,
                "after_mib": after >> 20,
                "nvidia_smi_after_mib": smi_used() >> 20,
                "peak_over_before_mib": (sampler.peak[0] - before) >> 20,
                "expected_peak_over_before_mib": peak_delta >> 20,
                "caught": sampler.peak[0] - before >= peak_delta - 64 * 2**20,
                "kept_mib": (after - before) >> 20,
                "expected_kept_mib": kept_delta >> 20,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    child.stdin.close()
    child.wait(timeout=30)
    t = time.perf_counter()
    for _ in range(200):
        memory.used()
    cost_us = (time.perf_counter() - t) / 200 * 1e6
    result = {
        "sample_every_s": SAMPLE_EVERY_S,
        "one_nvml_read_us": round(cost_us, 1),
        "steps": rows,
        "gpu": subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip(),
    }
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
