"""Free space where the weights live (`--weights DIR`, else the Hugging Face cache)."""

from __future__ import annotations

import os
from pathlib import Path

from ktwizard.host.profile import Disk


def default_weights_dir(env: dict[str, str] | None = None) -> str:
    env = env if env is not None else dict(os.environ)
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    home = env.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return os.path.join(home, "hub")


def probe_disk(path: str) -> Disk:
    import psutil

    probe = Path(path)
    # The folder may not exist yet: measure the nearest existing parent, where the download would land.
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        usage = psutil.disk_usage(str(probe))
    except OSError as exc:
        return Disk(path=path, reason=f"cannot measure free space at {path} ({exc.strerror or exc})")
    return Disk(
        path=path,
        free=usage.free,
        total=usage.total,
        reason=None if probe == Path(path) else f"{path} does not exist yet; measured {probe}",
    )
