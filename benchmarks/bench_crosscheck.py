"""Cross-check `ktwizard bench` against two things we did not write: the official `openai` client, timed the way
sglang's own benchmark tool times requests (bench_serving.py), on the same stand-in server with known rates.

bench_serving's rules, followed here on the openai client's stream (sglang/bench_serving.py of sglang-kt 0.7.2):
- TTFT is the time from sending to the first chunk with non-empty delta.content (:445-447);
- ITL is the gap between successive content chunks (:452-455); output_len is usage.completion_tokens (:460-461);
- TPOT per request is (latency - ttft) / (output_len - 1) (:903);
- prompts are random token sequences or ShareGPT text, never one prefix extended (datasets/random.py:57-167), and
  the cache is flushed before the run with --flush-cache (:1194-1195).

Every prompt here is a fresh one from ktwizard's generator (its own run id), so neither side is served from the cache.

Usage: python benchmarks/bench_crosscheck.py OUT.json [--prefill-tps 3000] [--decode-tps 40]
Writes OUT.json and prints a markdown table (benchmarks/results/bench-crosscheck.md keeps one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONTEXTS = (4096, 16384, 32768)
DECODE = ((0, 1), (0, 2), (8192, 2))
TOKENS = 128


def start_standin(folder: Path, port: int, prefill: float, decode: float) -> subprocess.Popen:
    from ktwizard.models.presets import get_preset

    (folder / "config.json").write_text(json.dumps(get_preset("kimi-k2.7-code").config))
    env = {
        **os.environ,
        "STANDIN_STEP_S": "0.01",
        "STANDIN_PREFILL_TPS": str(prefill),
        "STANDIN_DECODE_TPS": str(decode),
        "PYTHONPATH": str(ROOT / "tests" / "standin"),
    }
    args = [
        sys.executable,
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        "m",
        "--context-length",
        "65536",
        "--enable-cache-report",
    ]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import httpx

    for _ in range(200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the stand-in did not start")


def openai_request(client, prompt: str, max_tokens: int) -> dict:
    """One streamed chat request through the official client, measured with bench_serving's rules."""
    st = time.perf_counter()
    ttft, last, itl, usage = 0.0, st, [], None
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        content = chunk.choices[0].delta.content if chunk.choices else None
        if content:
            now = time.perf_counter()
            if ttft == 0.0:
                ttft = now - st
            else:
                itl.append(now - last)
            last = now
    latency = time.perf_counter() - st
    out = usage.completion_tokens if usage else len(itl) + 1
    cached = (
        getattr(usage.prompt_tokens_details, "cached_tokens", None) if usage and usage.prompt_tokens_details else None
    )
    return {
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "ttft": ttft,
        "itl": itl,
        "output_len": out,
        "tpot": (latency - ttft) / (out - 1) if out > 1 else None,
        "latency": latency,
        "cached": cached,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--prefill-tps", type=float, default=3000.0)
    ap.add_argument("--decode-tps", type=float, default=40.0)
    a = ap.parse_args()
    import openai

    from ktwizard.bench.prompts import Prompts
    from ktwizard.bench.runner import Sweep, run

    port = 31000 + os.getpid() % 2000
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_standin(Path(tmp), port, a.prefill_tps, a.decode_tps)
        try:
            sweep = Sweep(
                contexts=CONTEXTS,
                decode_contexts=(0, 8192),
                concurrency=(1, 2),
                decode_tokens=TOKENS,
                repeats=2,
                context_length=65536,
            )
            report = asyncio.run(run(url, "m", sweep, progress=lambda m: None))
            client = openai.OpenAI(base_url=url + "/v1", api_key="none", timeout=600)
            prompts = Prompts()
            rows = []
            for p in report.prefill:
                ref = [openai_request(client, prompts.next(p.context), 1) for _ in range(2)]
                theirs = statistics.median(r["prompt_tokens"] / r["ttft"] for r in ref)
                rows.append(
                    {
                        "kind": "prefill",
                        "context": p.context,
                        "set": a.prefill_tps,
                        "ktwizard": p.tok_s,
                        "openai": theirs,
                        "prompt_tokens": [p.prompt_tokens, ref[0]["prompt_tokens"]],
                        "cached": [list(p.cached_tokens), [r["cached"] for r in ref]],
                    }
                )
            from concurrent.futures import ThreadPoolExecutor

            for d in report.decode:
                words = max(d.context, 16)
                with ThreadPoolExecutor(d.concurrency) as pool:
                    t0 = time.perf_counter()
                    texts = [prompts.next(words) for _ in range(d.concurrency)]
                    ref = list(pool.map(lambda text: openai_request(client, text, TOKENS), texts))
                    dur = time.perf_counter() - t0
                itl = [x for r in ref for x in r["itl"]]
                rows.append(
                    {
                        "kind": "decode",
                        "context": d.context,
                        "concurrency": d.concurrency,
                        "set": a.decode_tps * d.concurrency,
                        "ktwizard": d.rate,
                        # bench_serving's per-stream speed is 1 / ITL; c streams side by side
                        "openai_itl": d.concurrency / statistics.mean(itl),
                        "openai_tpot": d.concurrency / statistics.mean(r["tpot"] for r in ref),
                        # bench_serving's output throughput: all output tokens over the run's duration (TTFT in)
                        "openai_output_throughput": sum(r["output_len"] for r in ref) / dur,
                    }
                )
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    for r in rows:
        r["ktwizard_vs_set"] = r["ktwizard"] / r["set"] - 1
        ref = r.get("openai") or r.get("openai_itl")
        r["ktwizard_vs_openai"] = r["ktwizard"] / ref - 1
    Path(a.out).write_text(
        json.dumps(
            {"prefill_tps": a.prefill_tps, "decode_tps": a.decode_tps, "rows": rows, "notes": list(report.notes)},
            indent=2,
        )
    )
    print(
        "| kind | context | streams | stand-in set | ktwizard bench | openai client (bench_serving rules) | "
        "bench vs set | bench vs openai |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ref = r.get("openai") or r.get("openai_itl")
        print(
            f"| {r['kind']} | {r['context']:,} | {r.get('concurrency', 1)} | {r['set']:,.0f} | {r['ktwizard']:,.1f} | "
            f"{ref:,.1f} | {r['ktwizard_vs_set']:+.1%} | {r['ktwizard_vs_openai']:+.1%} |"
        )


if __name__ == "__main__":
    main()
