"""On a GPU machine: kt-kernel's converter run as `ktwizard convert` runs it where torch sees no GPU (pin_memory
dropped, deploy/convert.UNPINNED) and as it runs where torch sees one, on the same random-weight checkpoint: the
converted tensors must be the same bytes. Where torch sees no GPU only the unpinned run is made.

    python benchmarks/unpinned_check.py OUT.json    (KTWIZARD_KT_PYTHON, KTWIZARD_KT_CONVERTER as convert_measure)
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]


def main() -> None:
    from test_convert import tensor_digests, tiny_config, write_random

    from ktwizard.deploy.convert import converter, pinning_refusal, run

    py, script = converter()
    pins = pinning_refusal(py) is None
    result: dict = {"torch_pins": pins}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "tiny"
        write_random(src, tiny_config())
        digests = {}
        for unpinned in (True, False) if pins else (True,):
            done = run(py, script, src, Path(tmp) / f"out-{unpinned}", "bf16", "int4", 4, 1, unpinned=unpinned)
            digests[unpinned] = tensor_digests(done.output)
        result["tensors"] = len(digests[True])
        result["digest_unpinned"] = hashlib.sha256(json.dumps(digests[True], sort_keys=True).encode()).hexdigest()
        if pins:
            result["identical"] = digests[True] == digests[False]
            result["differing"] = sorted(k for k in digests[True] if digests[True][k] != digests[False].get(k))[:10]
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
