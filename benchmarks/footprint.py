"""The live dashboard's resident memory and CPU beside nvitop's, in the same run, mapping by mapping.

A stand-in server (tests/standin: SGLang's real metric names and log lines, two streams at 40 tok/s each, one
request after another) runs natively here, so the dashboards parse a live /metrics every second. `ktwizard
monitor` (curses), `ktwizard monitor --textual` and nvitop run side by side on pseudo-terminals of 120x40, all
polling this machine's GPUs; after WARM seconds CPU is read over the next WINDOW seconds, then each resident set is
split by mapping (/proc/PID/smaps): the interpreter, extension modules, NVML's library, the heap and anonymous
memory, with the private and shared parts apart.

Usage: python benchmarks/footprint.py OUT.json [--seconds 40] [-- EXTRA DASHBOARD ARGS]
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from speed import PY, ROOT, drain, on_pty  # noqa: E402

WARM, WINDOW = 15, 25


def kind(name: str) -> str:
    if "nvidia-ml" in name or "libcuda" in name:
        return "NVML / driver libraries"
    if "python" in name.lower() and (".so" in name or name.endswith(("python3", "python3.11", "python3.12"))):
        return "python binary and libpython"
    if name.endswith(".so") or ".so." in name or ".cpython-" in name:
        return "extension modules and shared libraries"
    if name in ("[heap]", ""):
        return "heap and anonymous"
    return name if name.startswith("[") else "other files"


def smaps(pid: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    current = "other files"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            current = kind(head[5] if len(head) > 5 else "")
        elif head and head[0] in ("Rss:", "Private_Clean:", "Private_Dirty:", "Shared_Clean:", "Shared_Dirty:"):
            out[current][head[0].rstrip(":")] += int(head[1]) / 1024
    return {k: {f: round(v, 1) for f, v in d.items()} for k, d in sorted(out.items(), key=lambda kv: -kv[1]["Rss"])}


def largest_anonymous(pid: int, n: int = 12) -> list[dict]:
    """The biggest resident anonymous mappings: thread stacks, malloc arenas, pymalloc arenas, the heap."""
    out, current = [], None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            name = head[5] if len(head) > 5 else ""
            current = (
                {"name": name or "anon", "size_mb": round((hi - lo) / 2**20, 2)} if name in ("", "[heap]") else None
            )
            if current is not None:
                out.append(current)
        elif current is not None and head and head[0] == "Rss:":
            current["rss_mb"] = round(int(head[1]) / 1024, 2)
    return sorted(out, key=lambda m: -m.get("rss_mb", 0))[:n]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checkpoint(folder: Path) -> Path:
    """A checkpoint the stand-in serves: Kimi K2.7 Code's config.json and a header-only shard."""
    from safetensors_fixture import write_shard

    from ktwizard.models.presets import get_preset

    ckpt = folder / "Kimi-K2.7-Code"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps(get_preset("kimi-k2.7-code").config))
    write_shard(ckpt / "model-00001-of-00001.safetensors", [("lm_head.weight", "BF16", (163840, 7168))])
    return ckpt


def standin(folder: Path) -> tuple[subprocess.Popen, str]:
    """The stand-in server on this machine, ready, and its URL."""
    ckpt = checkpoint(folder)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests" / "standin"), "STANDIN_STEP_S": "0.05"}
    env["STANDIN_DECODE_TPS"] = "40"
    argv = [PY, "-m", "sglang.launch_server", "--model-path", str(ckpt), "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [*argv, "--enable-metrics"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        with contextlib.suppress(OSError):
            if urllib.request.urlopen(f"{url}/health", timeout=1).status == 200:
                return server, url
        time.sleep(0.1)
    server.kill()
    raise SystemExit("the stand-in server did not start")


def load(url: str, stop: threading.Event) -> None:
    body = json.dumps(
        {"model": "default", "messages": [{"role": "user", "content": "hi " * 40}], "max_tokens": 200, "stream": True}
    ).encode()
    while not stop.is_set():
        req = urllib.request.Request(f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"})
        with contextlib.suppress(OSError, http.client.HTTPException), urllib.request.urlopen(req, timeout=60) as r:
            while r.read(4096):
                pass


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The stand-in under two streams while the block runs; its URL."""
    with tempfile.TemporaryDirectory() as tmp:
        server, url = standin(Path(tmp))
        stop = threading.Event()
        for _ in range(2):
            threading.Thread(target=load, args=(url, stop), daemon=True).start()
        try:
            yield url
        finally:
            stop.set()
            server.terminate()
            server.wait(timeout=30)


def end(pid: int, fd: int) -> None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    os.close(fd)


def side_by_side(procs: dict[str, tuple[int, int]], seconds: int) -> dict:
    """Dashboards already started on pseudo-terminals, drained for `seconds`: each one's resident set split by mapping
    and its CPU over the last WINDOW seconds (cpu_window_s), by name; then they are ended."""
    fds = [fd for _, fd in procs.values()]
    warm = max(1, seconds - WINDOW)
    drain(fds, warm)
    before = {name: cpu_seconds(pid) for name, (pid, _) in procs.items()}
    drain(fds, seconds - warm)
    result: dict = {"cpu_window_s": seconds - warm}
    for name, (pid, _) in procs.items():
        parts = smaps(pid)
        result[name] = {
            "rss_mb": round(sum(p["Rss"] for p in parts.values()), 1),
            "cpu_pct": round(100 * (cpu_seconds(pid) - before[name]) / (seconds - warm), 2),
            "threads": len(list(Path(f"/proc/{pid}/task").iterdir())),
            "parts": parts,
            "largest_anonymous": largest_anonymous(pid),
        }
    for pid, fd in procs.values():
        end(pid, fd)
    return result


def main() -> None:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    seconds = int(args[args.index("--seconds") + 1]) if "--seconds" in args else WARM + WINDOW
    with serving() as url:
        nv = shutil.which("nvitop")
        procs = {
            "ktwizard monitor": on_pty([PY, "-m", "ktwizard", "monitor", "--url", url, *extra]),
            "ktwizard monitor --textual": on_pty([PY, "-m", "ktwizard", "monitor", "--url", url, "--textual", *extra]),
            "nvitop": on_pty([nv] if nv else [PY, "-m", "nvitop"]),
        }
        result = {"server": url, "seconds": seconds, "extra_args": extra, **side_by_side(procs, seconds)}
    Path(args[0]).write_text(json.dumps(result, indent=1) + "\n")
    print(
        json.dumps(
            {k: {"rss_mb": v["rss_mb"], "cpu_pct": v["cpu_pct"]} for k, v in result.items() if isinstance(v, dict)}
        )
    )


if __name__ == "__main__":
    main()
