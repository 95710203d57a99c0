"""The NVFP4 DeepSeek-R1 preset's bytes against what ktwizard did not write: the published size of
nvidia/DeepSeek-R1-0528-NVFP4-v2 (413,340,567,567 B in 350 files: every safetensors shard with its JSON header, the
tokenizer and configs).

    python benchmarks/nvfp4_layout_check.py benchmarks/results/nvfp4-r1-layout.json
"""

from __future__ import annotations

import json
import sys

from ktwizard.models.presets import get_preset

PUBLISHED_BYTES = 413_340_567_567  # the repository's files (a public blobcache benchmark's listing)


def main(out: str) -> None:
    s = get_preset("deepseek-r1-nvfp4").spec()
    tensors = s.non_expert_bytes + s.routed_bytes + s.mtp_bytes
    result = {
        "preset_tensor_bytes": tensors,
        "published_repository_bytes": PUBLISHED_BYTES,
        "difference_bytes": PUBLISHED_BYTES - tensors,
        "relative": (PUBLISHED_BYTES - tensors) / PUBLISHED_BYTES,
        "note": "the difference is what the tensors are not: shard headers (~190k tensors) and tokenizer/config files",
        "routed_bytes": s.routed_bytes,
        "non_expert_bytes": s.non_expert_bytes,
        "mtp_bytes": s.mtp_bytes,
        "kv_cache_fp8": s.kv_cache_fp8,
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nvfp4-r1-layout.json")
