"""The pinned runtime release, named once: every message, flag reason and check that names the release reads these.

sglang-kt and kt-kernel are released together by KTransformers; sglang-kt's METADATA pins torch
(`Requires-Dist: torch==2.9.1`). The next release changes these lines, and the facts in runtime/ and families/ that
cite its file:line. tests/unit/test_runtime_version.py fails when a code string outside this module spells a release
version itself. Imports nothing: every layer may name it (pyproject's import contract allows exactly this module).
"""

from __future__ import annotations

SGLANG_KT_VERSION = "0.7.2"
KT_KERNEL_VERSION = "0.7.2"
TORCH_VERSION = "2.9.1"  # what sglang-kt SGLANG_KT_VERSION pins
SGLANG_KT = f"sglang-kt {SGLANG_KT_VERSION}"
KT_KERNEL = f"kt-kernel {KT_KERNEL_VERSION}"
