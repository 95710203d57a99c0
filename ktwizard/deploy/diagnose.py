"""Why a launch failed, in one line a person can act on, with the fix."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ktwizard.deploy.phases import StartupTracker
from ktwizard.runtime.version import SGLANG_KT, TORCH_VERSION


@dataclass(frozen=True)
class Diagnosis:
    kind: str
    cause: str
    fix: str

    def line(self) -> str:
        return f"{self.cause} — {self.fix}"


def _first(tracker: StartupTracker, pattern: str) -> re.Match | None:
    rx = re.compile(pattern)
    for line in reversed(tracker.tail):
        m = rx.search(line)
        if m:
            return m
    return None


def diagnose(
    exit_code: int | None, oom_killed: bool, tracker: StartupTracker, timed_out: float | None = None
) -> Diagnosis:
    phase = tracker.phase
    if timed_out is not None:
        return Diagnosis(
            "timeout",
            f"start-up did not finish within {timed_out:g} s; the last phase seen was '{phase}'",
            "a 600 GB checkpoint can take many minutes: raise --timeout, or look at `ktwizard logs NAME` for a stuck "
            "step",
        )
    oom = _first(tracker, r"CUDA out of memory\.(?: Tried to allocate ([\d.]+ [GM]iB))?")
    if oom or _first(
        tracker,
        r"torch\.OutOfMemoryError|Not enough memory\. Please try to increase --mem-fraction-static|(Prefill|Decode) "
        r"out of memory",
    ):
        size = f" (tried to allocate {oom.group(1)})" if oom and oom.group(1) else ""
        return Diagnosis(
            "cuda_oom",
            f"CUDA out of memory during {phase}{size}",
            "something on the GPU is bigger than planned or other processes took memory: re-plan with `ktwizard plan` "
            "on this host now, lower --gpu-experts or --context, and check nvidia-smi for other processes",
        )
    if exit_code == 137 and oom_killed:
        return Diagnosis(
            "host_oom",
            f"the host's OOM killer stopped the server during {phase} (exit 137, OOMKilled)",
            "host RAM or the container's memory limit is too small for the CPU experts: free RAM, raise --memory, "
            "or plan a smaller method (the plan's host budget shows what is needed)",
        )
    if exit_code == 132 or _first(tracker, r"Illegal instruction"):
        return Diagnosis(
            "illegal_instruction",
            "illegal instruction (exit 132): the image's kt-kernel was built for a CPU with instructions this one "
            "lacks",
            "build the image on this class of machine (ktwizard image build) or set KT_KERNEL_CPU_VARIANT to a "
            "variant this CPU runs",
        )
    if _first(tracker, r"PyTorch 2\.9\.1 & CuDNN Compatibility Issue Detected"):
        from ktwizard.runtime import multimodal

        found = _first(tracker, r"Current Environment: PyTorch (\S+) \| CuDNN ([\d.]+)")
        have = f" (cuDNN {found.group(2)} with torch {found.group(1)})" if found else ""
        return Diagnosis(
            "cudnn",
            f"{SGLANG_KT} refused to start this multimodal model on torch {TORCH_VERSION} with a cuDNN older than "
            f"9.15{have} (torch's nn.Conv3d bug; server_args.py:6265-6316)",
            f"install nvidia-cudnn-cu12=={multimodal.FIX_CUDNN} where the server runs: `ktwizard image build` images "
            "carry it; for --native, pip install it into that Python",
        )
    arg = _first(tracker, r"launch_server\.py: error: (.*)")
    if arg:
        return Diagnosis(
            "bad_flag",
            f"the server rejected its arguments: {arg.group(1)}",
            f"the image's SGLang is not the {SGLANG_KT} the plan targets, or the plan was edited: re-plan, or use "
            "the matching image",
        )
    missing = _first(
        tracker,
        r"(does not appear to have a file named config\.json|is not a local folder|No such file or directory: '[^']*')",
    )
    if missing:
        return Diagnosis(
            "missing_weights",
            f"the weights are missing or incomplete where the server looks: {missing.group(1)}",
            "pass --weights with the checkpoint folder (config.json and *.safetensors), fully downloaded",
        )
    if _first(tracker, r"[Aa]ddress already in use"):
        return Diagnosis(
            "port_in_use",
            "the server could not bind its port: address already in use",
            "choose another --port or stop what uses it",
        )
    if exit_code == 137:
        return Diagnosis(
            "killed",
            f"the server was killed (exit 137, SIGKILL) during {phase}, not by the OOM killer",
            "something ran docker kill or the stop timed out; start it again",
        )
    last = tracker.errors[-1] if tracker.errors else (tracker.tail[-1] if tracker.tail else "no output")
    return Diagnosis(
        "exited",
        f"the server exited with code {exit_code} during {phase}; last line: {last[:200]}",
        "see the whole log with `ktwizard logs NAME` (the container is kept with --keep-on-failure)",
    )
