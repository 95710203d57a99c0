"""The peak check: after the server is ready, drive its lazy allocations on purpose and compare NVML's peak with
the plan, before the deployment is called good.

SGLang-KT allocates part of its memory only when the first long prompt arrives (the layerwise-prefill layer,
kt_ep_wrapper.py:5737-5814, kept for the server's life) and the most when a chunk attends over a long prefix: MLA
models then decompress up to 131,072 tokens of K/V at once, summed over the batch, and with --enable-mixed-chunk a
decoding request rides in every prefill batch with its whole context as prefix (planner/memory/steps.py). A plan that is
wrong there starts fine and dies an hour later on a user's first long prompt; the peak check makes that happen now:
  1. a prompt just above the layerwise threshold (the short-prompt phase: the layer is built and restored);
  2. the plan's binding long-prompt phase for real: with concurrency > 1, long requests first (each prefilled, then
     kept decoding), then a prompt of chunk + the prefix the phase needs (up to 131,072 + chunk tokens, within the
     context). Every prompt's text is distinct, so the radix cache cannot turn it into a short-prefix batch.
NVML is sampled every 20 ms; the measured peak per GPU is printed beside the plan's peak for that phase. A peak that
eats the plan's margin fails the launch with the cause and the fix (the GPU-expert count that fits); a peak with room
to spare says how many more GPU experts per layer the measured margin holds, and the relaunch that takes them.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from math import ceil
from typing import NoReturn, Protocol, TextIO

from ktwizard.deploy.launch import LaunchOptions, ServerProcess, clean_up
from ktwizard.deploy.peak_drive import REQUEST_TIMEOUT_S, Rider, _ask, steps_for
from ktwizard.deploy.records import Deployment
from ktwizard.errors import KtwizardError
from ktwizard.host.nvml import NVML_ROOT_ENV
from ktwizard.planner.types import Plan
from ktwizard.units import human

SAMPLE_EVERY_S = 0.02
# a phase's measured peak above the plan's figure by more than this is an under-prediction (sampling and the
# allocator's rounding move NVML's reading by a few tens of MiB)
UNDER_TOLERANCE = 128 * 2**20


class GpuMemory(Protocol):
    def used(self) -> dict[int, int]:
        """GPU index -> bytes in use as the plan counts them (processes + the driver's reserve)."""
        ...


class LiveMemory:
    """NVML through pynvml, handles kept: one round is a few microseconds per GPU."""

    def __init__(self, indices: tuple[int, ...]) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handles = {i: pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices}

    def used(self) -> dict[int, int]:
        out = {}
        for i, h in self.handles.items():
            try:
                m = self.nvml.nvmlDeviceGetMemoryInfo(h, self.nvml.nvmlMemory_v2)
                out[i] = m.used + m.reserved  # v2: `used` excludes the reserve, which the plan counts
            except self.nvml.NVMLError:
                out[i] = self.nvml.nvmlDeviceGetMemoryInfo(h).used  # v1: `used` includes it
        return out


class RecordedMemory:
    """The recorded-root NVML adapter (host.nvml.RecordedNvml) read on every sample."""

    def __init__(self, root: str) -> None:
        from ktwizard.host.nvml import RecordedNvml
        from ktwizard.host.root import Root

        self.source = RecordedNvml(Root(root))

    def used(self) -> dict[int, int]:
        snap = self.source.snapshot()
        out = {}
        for d in snap.get("devices") or []:
            v2 = d.get("mem_v2")
            out[int(d["index"])] = v2["used"] + v2["reserved"] if v2 else d["mem_v1"]["used"]
        return out


def gpu_memory(indices: tuple[int, ...]) -> tuple[GpuMemory | None, str]:
    """The NVML source for these GPUs, or None and why there is none."""
    root = os.environ.get(NVML_ROOT_ENV)
    if root:
        return RecordedMemory(root), f"NVML recorded at {root}"
    try:
        return LiveMemory(indices), "NVML"
    except Exception as exc:  # noqa: BLE001 - no driver, no library, no such GPU: the check says so
        from ktwizard.host.nvml import _init_reason

        return None, _init_reason(exc) if exc.__class__.__name__.startswith("NVMLError") else str(exc)


class PeakSampler:
    """Per-GPU maximum of NVML's reading while a request runs, sampled in a thread."""

    def __init__(self, memory: GpuMemory) -> None:
        self.memory = memory
        self.peak: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(SAMPLE_EVERY_S)

    def _take(self) -> None:
        for gpu, used in self.memory.used().items():
            self.peak[gpu] = max(self.peak.get(gpu, 0), used)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._take()  # the reading after the request: what the server kept


@dataclass(frozen=True)
class PeakStep:
    name: str
    tokens: int
    phase: str  # the plan's phase this step drives
    measured: dict[int, int]
    predicted: dict[int, int]
    margin: dict[int, int]
    layerwise_seen: bool

    def over(self) -> dict[int, int]:
        """GPU -> bytes by which the measured peak ate into the plan's margin (only those that did)."""
        return {
            g: m - self.predicted[g] - self.margin[g]
            for g, m in self.measured.items()
            if g in self.predicted and m > self.predicted[g] + self.margin[g]
        }

    def under(self) -> dict[int, int]:
        """GPU -> bytes by which the measured peak exceeded the plan's figure for this phase (even within the
        margin: the card may have room, the estimate is still low and the next plan would inherit it)."""
        return {
            g: m - self.predicted[g]
            for g, m in self.measured.items()
            if g in self.predicted and m - self.predicted[g] > UNDER_TOLERANCE
        }

    def under_lines(self, budgets: dict) -> list[str]:
        """One line per GPU the plan under-predicted, naming the estimate that most likely differs: the largest
        estimated item live in this phase."""
        out = []
        for g, x in sorted(self.under().items()):
            live = budgets[g].phase_items(self.phase) if g in budgets else ()
            # the phase's own items first (its steps), then any estimate alive in it
            own = [i for i in live if i.estimate and self.phase in i.live] or [i for i in live if i.estimate]
            worst = max(own, key=lambda i: i.bytes, default=None)
            who = f"; the largest estimate live then is '{worst.name}' ({human(worst.bytes)})" if worst else ""
            out.append(
                f"  under-predicted: GPU {g} peaked {human(x)} above the plan's {self.phase} figure "
                f"({human(self.predicted[g])}){who}"
            )
        return out


@dataclass(frozen=True)
class PeakReport:
    steps: tuple[PeakStep, ...]
    more_experts: int = 0  # GPU experts per layer the measured peaks leave room for (0 when none or unmeasured)
    skipped: str = ""  # why nothing was measured

    def text(self) -> str:
        if self.skipped:
            return f"peak check skipped: {self.skipped}\n"
        lines = [f"{'peak check (phase)':44} {'GPU':>3} {'measured':>11} {'planned':>11} {'diff':>10}"]
        for s in self.steps:
            for g in sorted(s.measured):
                if g not in s.predicted:
                    continue
                diff = s.measured[g] - s.predicted[g]
                sign = "+" if diff >= 0 else "-"
                flag = "  <-- over the plan's margin" if g in s.over() else ""
                lines.append(
                    f"{s.name + f' [{s.phase}]':44} {g:>3} {human(s.measured[g]):>11} {human(s.predicted[g]):>11} "
                    f"{sign + human(abs(diff)):>10}{flag}"
                )
        return "\n".join(lines) + "\n"


class PeakOverPlan(KtwizardError):
    pass


class PeakCheckIncomplete(KtwizardError):
    pass


def run_peak_check(
    plan: Plan,
    proc: ServerProcess,
    deployment: Deployment,
    opts: LaunchOptions,
    tokens: int | None = None,
    out: TextIO = sys.stderr,
    memory: GpuMemory | None = None,
) -> PeakReport:
    """Drive the lazy allocations and compare; raise PeakOverPlan (the server removed) when the plan is broken."""
    if memory is None:
        gpus: tuple[int, ...] = plan.gpus if opts.gpus == "plan" else tuple(int(g) for g in opts.gpus or ())
        memory, why = gpu_memory(gpus) if gpus else (None, "no GPU was given to the server (--gpus none)")
        if memory is None:
            skipped = PeakReport((), skipped=why if not gpus else f"NVML cannot be read here ({why})")
            print(skipped.text(), file=out, end="")
            return skipped
    budgets = {b.gpu: b for b in plan.gpu_budgets}
    steps = []
    key = plan.goals.api_key_file
    for i, d in enumerate(steps_for(plan, tokens)):
        print(f"  peak check: {d.label()} ...", file=out, flush=True)
        riders: list[Rider] = []
        try:
            for j, n in enumerate(d.riders):  # prefilled one by one, then all decoding while the prompt runs
                riders.append(Rider(deployment.url, plan.served_name, n, key, seed=1000 * (i + 1) + j).start())
                riders[-1].decoding.wait(REQUEST_TIMEOUT_S)
                if riders[-1].error:
                    raise KtwizardError(f"the peak check's {n}-token decoding request failed: {riders[-1].error}")
            with PeakSampler(memory) as sampler:
                _ask(deployment.url, plan.served_name, d.tokens, key, seed=i + 1)
            rode = all(not r.finished.is_set() for r in riders)
        except KtwizardError as exc:
            _died(plan, proc, opts, deployment, out, d.label(), d.tokens, d.phase, budgets, exc)
        finally:
            for r in riders:
                r.stop()
        if riders and not rode:  # the batch lost a prefix: the phase was not reached, so nothing measured counts
            _remove(proc, opts, deployment, out)
            raise PeakCheckIncomplete(
                f"the peak check did not reach the plan's {d.phase} phase: a decoding request ended before the long "
                "prompt did (the server stopped it early), so its prefix was missing and the measured peak proves "
                "nothing; the server was removed: relaunch, or launch with --no-peak-check to skip the check"
            )
        seen = any("KT layerwise prefill" in line for line in proc.new_lines())
        steps.append(
            PeakStep(
                d.label(),
                d.tokens,
                d.phase,
                dict(sampler.peak),
                {g: b.phase_bytes(d.phase) for g, b in budgets.items()},
                {g: b.margin for g, b in budgets.items()},
                seen,
            )
        )
    report = PeakReport(tuple(steps), _room_for_experts(plan, budgets, steps))
    print(report.text(), file=out, end="")
    over: dict[int, int] = {}
    for s in steps:
        for g, x in s.over().items():
            over[g] = max(over.get(g, 0), x)
    if over:
        _remove(proc, opts, deployment, out)
        worst = max(over, key=lambda g: over[g])
        raise PeakOverPlan(
            f"GPU {worst} peaked {human(over[worst])} past the plan's margin during the peak check: the server would "
            f"run out of memory on long prompts; use {_fix(plan, budgets, over)}"
        )
    binding = steps_for(plan)[-1]
    driven = steps[-1] if steps else None
    if tokens is not None and driven is not None and (driven.tokens < binding.tokens or binding.riders):
        # --peak-check-tokens asked for less than the plan's longest-prompt phase holds: what was measured says
        # nothing about that phase, so there is no verdict to give and no room to offer
        _remove(proc, opts, deployment, out)
        raise PeakCheckIncomplete(
            f"the peak check did not reach the plan's longest prompt phase: {driven.tokens} tokens were sent, the "
            f"phase needs {binding.label()}; the server was removed: relaunch without --peak-check-tokens, or with "
            "--no-peak-check to skip the check"
        )
    if plan.flag("--kt-gpu-prefill-token-threshold") is not None and not any(s.layerwise_seen for s in steps):
        print(
            "  note: the log showed no 'KT layerwise prefill' line; the layerwise layer may not have been built",
            file=out,
        )
    for s in steps:
        for line in s.under_lines(budgets):
            print(line, file=out)
    if report.more_experts > 0:
        print(
            f"  the measured peak leaves room for {report.more_experts} more GPU expert(s) per layer: relaunch with "
            f"--gpu-experts {plan.gpu_experts + report.more_experts} (ktwizard stop {deployment.name}, then the same "
            "launch with that option) to serve more of each step from the GPU",
            file=out,
        )
    return report


def _room_for_experts(plan: Plan, budgets: dict, steps: list[PeakStep]) -> int:
    """How many more GPU experts per layer the measured peaks leave room for, every GPU keeping its margin."""
    if not plan.gpu_experts or not steps:
        return 0
    room = None
    for g, b in budgets.items():
        peak = max((s.measured.get(g, 0) for s in steps), default=0)
        if not peak:
            return 0
        per = ceil(b.item("GPU experts") / plan.gpu_experts)
        n = (b.total - b.margin - peak) // per if per else 0
        room = n if room is None else min(room, n)
    limit = (plan.model.routed_experts or plan.gpu_experts + (room or 0)) - plan.gpu_experts
    return max(0, min(room or 0, limit))


def _died(
    plan: Plan,
    proc: ServerProcess,
    opts: LaunchOptions,
    deployment: Deployment,
    out: TextIO,
    name: str,
    n: int,
    phase: str,
    budgets: dict,
    failure: KtwizardError,
) -> NoReturn:
    """A peak-check request failed: say whether the server died (and of what), remove it, and fail the launch."""
    deadline = time.monotonic() + 5  # a dying server drops the connection a moment before it exits
    running, code, oom = proc.status()
    while running and time.monotonic() < deadline:
        time.sleep(0.1)
        running, code, oom = proc.status()
    cuda_oom = any("CUDA out of memory" in line for line in proc.new_lines())
    _remove(proc, opts, deployment, out)
    if running:
        raise PeakOverPlan(f"{failure.message}; the server was removed (the plan is unchecked)")
    cause = "ran out of GPU memory" if cuda_oom else ("was OOM-killed" if oom else f"exited with code {code}")
    raise PeakOverPlan(
        f"the server died during the peak check's {name} ({n} tokens): it {cause}; the plan's {phase} phase does not "
        f"fit; use {_fix(plan, budgets, {})}"
    )


def _fix(plan: Plan, budgets: dict, over: dict[int, int]) -> str:
    """The GPU-expert count that gives back what the peak took (or a quarter fewer when unknown)."""
    if plan.gpu_experts == 0:
        return "a shorter --context or a lower --concurrency (no GPU experts left to drop)"
    per = max(ceil(b.item("GPU experts") / plan.gpu_experts) for b in budgets.values())
    drop = max(ceil(x / per) for x in over.values()) if over else max(1, plan.gpu_experts // 4)
    return f"--gpu-experts {max(0, plan.gpu_experts - drop)} (now {plan.gpu_experts})"


def _remove(proc: ServerProcess, opts: LaunchOptions, deployment: Deployment, out: TextIO) -> None:
    if opts.keep_on_failure:
        print(f"kept {opts.name} for inspection (ktwizard stop {opts.name})", file=out)
    else:
        print(clean_up(proc, deployment), file=out)
