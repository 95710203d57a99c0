"""Which libc routine reads memory fastest from Python threads, and what sysbench reports beside them.

Usage: SB=/path/to/sysbench python benchmarks/bandwidth_kernels.py   (prints one line per variant)

For 1 thread and one per CPU: sysbench's memory read test (128 MiB and 1 GiB blocks, its default global scope: one
buffer for all threads, so a 128 MiB block can sit in a large last-level cache), then memchr, strnlen and __memcmpeq
over per-thread 128 MiB buffers, with and without transparent huge pages, in threads (ctypes drops the GIL) and in
processes. Recorded: benchmarks/results/bandwidth-kernels-h200.txt. probe --bandwidth uses memchr.
"""

import ctypes
import mmap
import multiprocessing as mp
import os
import re
import subprocess
import threading
import time

libc = ctypes.CDLL("libc.so.6")


def fn(name):
    f = getattr(libc, name)
    if name in ("memchr",):
        f.restype = ctypes.c_void_p
        f.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t)
    elif name == "strnlen":
        f.restype = ctypes.c_size_t
        f.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    else:
        f.restype = ctypes.c_int
        f.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return f


SIZE = 128 << 20


def work(cpu, kind, huge, secs, q):
    os.sched_setaffinity(0, {cpu})
    nbuf = 2 if kind in ("memcmp", "__memcmpeq") else 1
    bufs = [mmap.mmap(-1, SIZE) for _ in range(nbuf)]
    if huge:
        for b in bufs:
            b.madvise(mmap.MADV_HUGEPAGE)
    ps = [ctypes.addressof(ctypes.c_char.from_buffer(b)) for b in bufs]
    for p in ps:
        ctypes.memset(p, 0x5A, SIZE)
    f = fn(kind)
    call = (
        (lambda: f(ps[0], 0, SIZE))
        if kind == "memchr"
        else (lambda: f(ps[0], SIZE))
        if kind == "strnlen"
        else (lambda: f(ps[0], ps[1], SIZE))
    )
    call()
    t = time.perf_counter()
    n = 0
    while time.perf_counter() - t < secs:
        call()
        n += 1
    q.put(n * SIZE * nbuf / (time.perf_counter() - t))


def run(kind, T, huge, procs):
    q = mp.Queue() if procs else __import__("queue").Queue()
    mk = mp.Process if procs else threading.Thread
    ws = [mk(target=work, args=(c, kind, huge, 2.0, q)) for c in range(T)]
    [w.start() for w in ws]
    [w.join() for w in ws]
    return sum(q.get() for _ in range(T)) / 1e9


def sysb(T, block="128M"):
    out = subprocess.run(
        [
            os.environ["SB"],
            "memory",
            "--memory-oper=read",
            f"--memory-block-size={block}",
            "--memory-total-size=100000G",
            f"--threads={T}",
            "--time=2",
            "run",
        ],
        capture_output=True,
        text=True,
    ).stdout
    return float(re.search(r"\(([\d.]+) MiB/sec", out).group(1)) * 2**20 / 1e9


T = os.cpu_count()
for t in (1, T):
    print(t, "sysbench", round(sysb(t), 1), "sysbench-1G", round(sysb(t, "1G"), 1), flush=True)
    for kind in ("memchr", "strnlen", "__memcmpeq"):
        for huge in (True, False):
            print(
                t,
                kind,
                "huge" if huge else "4k",
                "threads",
                round(run(kind, t, huge, False), 1),
                "procs",
                round(run(kind, t, huge, True), 1),
                flush=True,
            )
