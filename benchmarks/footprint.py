"""Where the live dashboard's resident memory goes, beside nvitop's, mapping by mapping (/proc/PID/smaps).

Both run on pseudo-terminals of the same size for 15 s, monitoring this machine's GPUs (the dashboard with a server
URL that does not answer); then each process's resident set is split into the interpreter and its extension
modules, NVML's library, other shared libraries, the heap and anonymous memory, and the rest, with the private and
shared parts apart. Usage: python benchmarks/footprint.py OUT.json [-- EXTRA DASHBOARD ARGS]
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed import PY, drain, on_pty  # noqa: E402


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


def main() -> None:
    extra = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    dash = on_pty([PY, "-m", "ktwizard", "monitor", "--url", "http://127.0.0.1:9", *extra])
    nv = shutil.which("nvitop")
    top = on_pty([nv] if nv else [PY, "-m", "nvitop"])
    drain([dash[1], top[1]], 15)
    result = {}
    for name, (pid, _) in (("ktwizard monitor", dash), ("nvitop", top)):
        parts = smaps(pid)
        result[name] = {
            "rss_mb": round(sum(p["Rss"] for p in parts.values()), 1),
            "threads": len(list(Path(f"/proc/{pid}/task").iterdir())),
            "parts": parts,
            "largest_anonymous": largest_anonymous(pid),
        }
    for pid, fd in (dash, top):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v["rss_mb"] for k, v in result.items()}))


if __name__ == "__main__":
    main()
