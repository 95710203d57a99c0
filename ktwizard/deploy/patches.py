"""The RAWINT4 layerwise-prefill fix for sglang-kt 0.7.2, as one verified step (standard library only).

Stock 0.7.2 re-creates a layer's packed INT4 weights after every layerwise-prefill layer with
`torch.nn.Parameter(torch.empty(shape, dtype=int32))` (srt/layers/moe/kt_ep_wrapper.py:2690-2693,
`_restore_raw_attrs`), and nn.Parameter's default requires_grad=True makes that raise "Only Tensors of floating
point and complex dtype can require gradients": the server dies on its first prompt over the threshold. The fix is
`requires_grad=False` on that Parameter (the seed recipe's patch).

ktwizard uses this module three ways: `launch --native` checks the installed sglang with `state()` and refuses an
unpatched one; `image render` copies this file into the build context, and the Dockerfile runs it as a script,
which fails the build loudly when the code no longer looks as expected (instead of a `sed ... || true` that
silently does nothing); the tests apply it to the wheel's own lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ktwizard.runtime.version import SGLANG_KT

RELATIVE = "srt/layers/moe/kt_ep_wrapper.py"  # inside the sglang package
_STOCK = re.compile(r"torch\.nn\.Parameter\(\s*torch\.empty\(_shape, dtype=_dtype, device=_device\)\)")
_FIXED = re.compile(
    r"torch\.nn\.Parameter\(\s*torch\.empty\(_shape, dtype=_dtype, device=_device\),\s*requires_grad=False\)"
)
_FIXED_TEXT = "torch.nn.Parameter(torch.empty(_shape, dtype=_dtype, device=_device), requires_grad=False)"


def state(source: str) -> str:
    """'patched', 'unpatched', or 'unknown' (the code no longer looks like 0.7.2's) for kt_ep_wrapper.py's text."""
    if _FIXED.search(source):
        return "patched"
    if "def _restore_raw_attrs" in source and _STOCK.search(source):
        return "unpatched"
    return "unknown"


def patch(source: str) -> str:
    """The fixed text; raises ValueError when the code is neither stock 0.7.2 nor already fixed."""
    now = state(source)
    if now == "patched":
        return source
    if now == "unknown":
        raise ValueError(
            "the RAWINT4 requires_grad patch no longer applies: _restore_raw_attrs in kt_ep_wrapper.py "
            f"does not look like {SGLANG_KT}'s; check the pinned KTransformers commit"
        )
    fixed, n = _STOCK.subn(_FIXED_TEXT, source)
    if n != 1 or state(fixed) != "patched":
        raise ValueError(f"the RAWINT4 requires_grad patch matched {n} places instead of one")
    return fixed


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} PATH/TO/sglang/{RELATIVE}", file=sys.stderr)
        return 2
    path = Path(argv[1])
    try:
        fixed = patch(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"ktwizard patch FAILED: {exc}", file=sys.stderr)
        return 1
    path.write_text(fixed)
    print(f"ktwizard patch applied: requires_grad=False in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
