"""The dashboard of a container watched by name beside the same server watched by URL: what the Docker SDK costs.

The stand-in image is built locally (tests/standin/image.py: no registry), launched with `ktwizard launch
--detach` (no GPU) and loaded by two streams; `ktwizard monitor NAME`, `ktwizard monitor --url URL` and
`ktwizard monitor NAME --textual` run side by side on 120x40 pseudo-terminals with --no-gpu, and after WARM +
WINDOW seconds each resident set is split by mapping as in footprint.py. NVML's share is the same for every
dashboard and for nvitop (footprint.py on the GPU machine), so by-name minus by-URL is what naming a container adds
to the footprint that run measured.

Usage: python benchmarks/footprint_container.py OUT.json [--seconds 40]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "standin"))

from footprint import WARM, WINDOW, checkpoint, free_port, load, side_by_side  # noqa: E402
from speed import PY, ROOT, on_pty  # noqa: E402

NAME = "ktw-footprint-box"


def ktwizard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "ktwizard", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def main() -> None:
    import docker
    from image import standin_image

    args = sys.argv[1:]
    seconds = int(args[args.index("--seconds") + 1]) if "--seconds" in args else WARM + WINDOW
    image = standin_image(docker.from_env())
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = checkpoint(Path(tmp))
        ktwizard("stop", NAME)
        launched = ktwizard(
            "launch", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "65536",
            "--gpus", "none", "--weights", str(ckpt), "--image", image, "--name", NAME, "--port", str(port),
            "--detach", "--env", "STANDIN_STEP_S=0.05", "--env", "STANDIN_DECODE_TPS=40",
        )  # fmt: skip
        if launched.returncode != 0:
            raise SystemExit(launched.stderr)
        url, stop = f"http://127.0.0.1:{port}", threading.Event()
        for _ in range(2):
            threading.Thread(target=load, args=(url, stop), daemon=True).start()
        try:
            procs = {
                "ktwizard monitor NAME": on_pty([PY, "-m", "ktwizard", "monitor", NAME, "--no-gpu"]),
                "ktwizard monitor --url URL": on_pty([PY, "-m", "ktwizard", "monitor", "--url", url, "--no-gpu"]),
                "ktwizard monitor NAME --textual": on_pty(
                    [PY, "-m", "ktwizard", "monitor", NAME, "--no-gpu", "--textual"]
                ),
            }
            result = {"image": image, "seconds": seconds, **side_by_side(procs, seconds)}
        finally:
            stop.set()
            ktwizard("stop", NAME)
    result["by_name_minus_by_url_mb"] = round(
        result["ktwizard monitor NAME"]["rss_mb"] - result["ktwizard monitor --url URL"]["rss_mb"], 1
    )
    Path(args[0]).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v["rss_mb"] if isinstance(v, dict) else v for k, v in result.items() if k != "image"}))


if __name__ == "__main__":
    main()
