"""Environment variables the pinned runtime really reads, and the ones it does not.

sglang-kt 0.7.2 pins torch==2.9.1 (its METADATA: `Requires-Dist: torch==2.9.1`). torch 2.9.x's CUDA caching allocator
takes `expandable_segments` only from PYTORCH_CUDA_ALLOC_CONF: the newer PYTORCH_ALLOC_CONF is parsed but never
forwarded to the CUDA allocator (pytorch/pytorch#183387, fixed by 2.11). The older name works in every release, so
it is the one rendered. SAFETENSORS_FAST_GPU is read nowhere in sglang-kt 0.7.2 or kt-kernel 0.7.2 (grep of both
wheels), so it is not rendered.
"""

from __future__ import annotations

from ktwizard.runtime.version import KT_KERNEL, SGLANG_KT, SGLANG_KT_VERSION, TORCH_VERSION

SGLANG_KT_TORCH_PIN = TORCH_VERSION  # kept under its old name for its importers
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
EXPANDABLE = "expandable_segments:True"
RECORDER_DIR = "SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR"  # where SGLang's expert-distribution recorder writes dumps
# Variables a recipe may carry that this runtime ignores, with the reason a plan gives for not rendering them.
IGNORED = {
    "PYTORCH_ALLOC_CONF": f"torch {SGLANG_KT_TORCH_PIN} (pinned by {SGLANG_KT}) ignores it for CUDA "
    f"(pytorch/pytorch#183387); the plan sets {ALLOC_CONF} instead",
    "SAFETENSORS_FAST_GPU": f"read nowhere in {SGLANG_KT} or {KT_KERNEL}; not rendered",
    "SGLANG_ENABLE_JIT_DEEPGEMM": f"{SGLANG_KT_VERSION} runs DeepGEMM only on SM 9.0, 10.0 and 10.3 "
    "(layers/deep_gemm_wrapper/configurer.py:17-24): on SM 12.0 it is already off; not rendered",
}


def _release(version: str) -> tuple[int, int]:
    major, minor = (version.split("+")[0].split(".") + ["0"])[:2]
    return int(major), int(minor)


def honoured_alloc_vars(torch_version: str) -> tuple[str, ...]:
    """The variables from which this torch release's CUDA allocator takes expandable_segments."""
    if _release(torch_version) < (2, 9):
        return (ALLOC_CONF,)  # PYTORCH_ALLOC_CONF did not exist yet
    if _release(torch_version) < (2, 11):
        return (ALLOC_CONF,)  # 2.9 and 2.10: the new name is parsed but not forwarded (pytorch/pytorch#183387)
    return ("PYTORCH_ALLOC_CONF", ALLOC_CONF)
