"""`python -m sglang.launch_server ...` for tests.

It parses the real sglang-kt 0.7.2 flag catalog (so unknown flags and bad values fail like argparse does in
the real server), prints SGLang's start-up and batch log lines, serves /health, /v1/models, /model_info,
/server_info, /metrics (real metric names) and a streaming /v1/chat/completions at configured token rates.
Behaviour comes from STANDIN_* environment variables so the command line stays exactly the plan's:

  STANDIN_STEP_S        seconds per start-up phase (0.2)
  STANDIN_GPU_GB        GPU memory it pretends to have, GiB (95.0)
  STANDIN_WEIGHTS_GB    "mem usage" logged at the end of weight loading, GiB (20.0)
  STANDIN_KV_CELL       KV bytes per token (70272)
  STANDIN_GRAPH_GB      CUDA-graph capture "mem usage", GiB (0.5)
  STANDIN_DECODE_TPS    decode tokens/s of one stream (20.0); STANDIN_DECODE_ALPHA: aggregate = tps * n**alpha (1.0)
  STANDIN_PREFILL_TPS   prompt tokens/s (600.0); STANDIN_MIN_PREFILL_S: no prefill is shorter (0.1)
  STANDIN_FAIL          cuda_oom@weights|kv|graphs|layerwise, oom_kill, sigill, hang@<phase>, die_after_ready
  STANDIN_NVML_DIR      if set, the GPU memory it holds is written there as nvml.json (the shape ktwizard's recorded
                        NVML adapter reads), for GPUs 0..tp-1, as the real server's would move:
  STANDIN_RESERVED_GB   the driver's reserve (0.6)
  STANDIN_READY_GB      held once ready: context, weights, KV pool, graphs, workspaces (default from the above)
  STANDIN_LAYER_GB      the layerwise-prefill layer, allocated lazily on the first prompt at or over
                        --kt-gpu-prefill-token-threshold and never freed (kt_ep_wrapper.py:5737-5814, :556) (0)
  STANDIN_RESTORE_GB    held on top while a layerwise prefill restores its layer (0)
  STANDIN_ACT_GB_PER_KTOK  the MoE step's hidden copies and router logits per 1024 tokens of a prefill chunk (0);
  STANDIN_CACHE_GB_PER_KTOK  its expert caches per 1024 tokens (0), freed before a layerwise chunk's restore
                        (STANDIN_RESTORE_GB), so that step holds the larger of the two
  STANDIN_MLA           "heads,q_lora_rank,kv_lora_rank,qk_rope,qk_nope,v_head,hidden": the attention step of an MLA
                        model as sglang-kt 0.7.2 runs it (attention_backend_handler.py:63-96, forward_mha.py:220-390):
                        with flashinfer/fa3/flashmla an extend batch whose summed prefix is 0 or >= 8192 runs MHA over
                        the prefix, in one shot up to 131,072 tokens in the batch, else 131,072 at a time; otherwise the
                        absorbed path. The prefix is summed over the batch: with --enable-mixed-chunk every decoding
                        request rides in each prefill chunk with its whole context. Chunked, each request's prefix is
                        read 131,072 / batch size tokens at a time (forward_batch_deepseek_mha_mixin.py:120-164), so a
                        batch of uneven prefixes decompresses less than 131,072. Unset: no attention step.
  (config.json)         Qwen3.5 / Qwen3-Next, MiniMax-M3, GLM-5 / DeepSeek-V3.2 checkpoints: the attention step of
                        their GDN / gated, sparse-index / dense and DSA layers, and the CUDA graphs' decode pool,
                        from the model's own config (live_sets.py, the runtime's file:line per tensor), not the env
  STANDIN_EOS_AFTER     a request at temperature 0 without ignore_eos (or min_tokens) ends after this many tokens, as a
                        model reaching its end-of-sequence token does (unset: never early)
  STANDIN_POOL_TOKENS   the KV pool the profile leaves, below --max-total-tokens (a GPU with less free than planned)
  STANDIN_MAX_NEW       every request ends after this many tokens, ignore_eos or not (a request reaching the context)
  Prompts are prefilled in chunks of --chunked-prefill-size behind a radix cache (a prompt's longest common prefix
  with an earlier one is cached), one "Prefill batch" line per chunk, as the real scheduler logs them.
  /flush_cache empties that cache when nothing runs (400 otherwise); --disable-radix-cache turns it off; with
  --enable-cache-report the OpenAI usage carries prompt_tokens_details.cached_tokens; /generate's meta_info always does.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sglang import answers, live_sets

ENV = os.environ.get
STEP = float(ENV("STANDIN_STEP_S", "0.2"))
GPU_GB = float(ENV("STANDIN_GPU_GB", "95.0"))
FAIL = ENV("STANDIN_FAIL", "")
ANSWERED_READY = threading.Event()  # die_after_ready: set when /health answered 200 after ready
# In the image the catalog sits beside the package; run from a checkout it is ktwizard's bundled copy.
_HERE = Path(__file__).resolve().parent
CATALOG = next(
    p
    for p in (_HERE.parent / "server-args.json", _HERE.parents[1] / "fixtures/oracles/sglang-kt-0.7.2-server-args.json")
    if p.exists()
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {msg}", flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="launch_server.py")
    types = {"int": int, "float": float, "str": str}
    for f in json.loads(CATALOG.read_text())["flags"]:
        kw: dict = {}
        if f.get("action") in ("store_true", "store_false"):
            kw["action"] = f["action"]
        else:
            kw["type"] = types.get(f.get("type", "str"), str)
            if f.get("choices"):
                kw["choices"] = f["choices"]
            if f.get("nargs"):
                kw["nargs"] = f["nargs"]
        if f.get("required"):
            kw["required"] = True
        if f.get("dest"):
            kw["dest"] = f["dest"]
        p.add_argument(*f["flags"], **kw)
    return p


def cuda_oom(where: str, gib: float) -> None:
    print("Traceback (most recent call last):", flush=True)
    print(
        f'  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 412, in {where}',
        flush=True,
    )
    print(
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib:.2f} GiB. GPU 0 has a total capacity of "
        f"{GPU_GB:.2f} GiB "
        f"of which 312.00 MiB is free. Including non-PyTorch memory, this process has {GPU_GB - 0.3:.2f} GiB memory "
        "in use.",
        flush=True,
    )
    log("Received sigquit from a child process. It usually means the child failed.")
    os._exit(1)  # from any thread, as the real scheduler's death ends the server


class GpuMemory:
    """What the real server would hold on each GPU, as NVML would report it, written where ktwizard can read it."""

    def __init__(self, args) -> None:
        self.dir = ENV("STANDIN_NVML_DIR")
        self.tp = args.tensor_parallel_size or 1
        gib = 2**30
        self.total = int(GPU_GB * gib)
        self.reserved = int(float(ENV("STANDIN_RESERVED_GB", "0.6")) * gib)
        weights = float(ENV("STANDIN_WEIGHTS_GB", "20.0"))
        kv = (args.max_total_tokens or 100000) * int(ENV("STANDIN_KV_CELL", "70272")) / gib
        default_ready = 0.62 + weights + kv + float(ENV("STANDIN_GRAPH_GB", "0.5"))
        self.ready = int(float(ENV("STANDIN_READY_GB", str(default_ready))) * gib)
        self.layer = int(float(ENV("STANDIN_LAYER_GB", "0")) * gib)
        self.restore = int(float(ENV("STANDIN_RESTORE_GB", "0")) * gib)
        self.act_per_ktok = float(ENV("STANDIN_ACT_GB_PER_KTOK", "0")) * gib
        self.cache_per_ktok = float(ENV("STANDIN_CACHE_GB_PER_KTOK", "0")) * gib
        self.threshold = args.kt_gpu_prefill_token_threshold
        self.mla = tuple(int(x) for x in ENV("STANDIN_MLA", "").split(",")) if ENV("STANDIN_MLA") else None
        self.backend = args.attention_backend or "flashinfer"
        self.layers = sorted(range(1, 61))  # Kimi K2's MoE layers, as the real log numbers them
        # the families whose attention is neither plain GQA nor MLA, from the checkpoint's config.json; their decode
        # step at --cuda-graph-max-bs is what the captured graphs' pool holds, on top of STANDIN_READY_GB
        self.family = live_sets.from_checkpoint(Path(args.model_path), self.tp, self.backend, self.total)
        if self.family is not None:
            bs = args.cuda_graph_max_bs or 1
            self.ready += self.family.decode(bs, args.context_length or 0) + bs * 2 * 2**20  # + 2 MiB per size
        self.held = 0
        self.lock = threading.Lock()

    def write(self, extra: int = 0) -> None:
        if not self.dir:
            return
        used = self.held + extra
        devices = [
            {
                "index": i,
                "name": "stand-in GPU",
                "mem_v1": {
                    "total": self.total,
                    "used": used + self.reserved,
                    "free": self.total - used - self.reserved,
                },
                "mem_v2": {
                    "total": self.total,
                    "used": used,
                    "free": self.total - used - self.reserved,
                    "reserved": self.reserved,
                },
                "procs": [{"pid": os.getpid(), "used": used}],
                "util_gpu": 100 if extra else 0,  # busy while a prompt's memory is held
            }
            for i in range(self.tp)
        ]
        path = Path(self.dir) / "nvml.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"driver": "580.0", "devices": devices}))
        os.replace(tmp, path)

    def started(self) -> None:
        self.held = self.ready
        self.write()

    def attention(self, m: int, prefixes: list[int]) -> int:
        """The attention step's live set of an m-token chunk over each batch request's prefix."""
        if self.family is not None:  # the DSA indexer splits its logits by what the card has free now
            return self.family.extend(m, prefixes, self.total - self.reserved - self.held)
        if not self.mla:
            return 0
        prefix = sum(prefixes)
        h, ql, r, rope, nope, v, hidden = self.mla
        live = 2 * m * hidden * 2 + m * (ql + r + rope) * 2 + m * h * (nope + rope) * 2
        token = (r + rope) * 2 + h * (nope + v) * 2 + h * (nope + rope) * 2  # gather + K/V + K of a prefix token
        if self.backend in ("flashinfer", "fa3", "flashmla") and (prefix == 0 or prefix >= 8192):
            if prefix + m <= 131072:
                return live + (prefix + m) * token + m * h * v * 2
            # prefix_chunk_len = capacity // batch size; the first prefix chunk holds min(prefix, len) of each request
            per = 131072 // max(1, len(prefixes))
            gathered = sum(min(p, per) for p in prefixes)
            return live + gathered * token + m * h * (2 * nope + v + rope) * 2 + 3 * m * h * v * 2 + 3 * m * h * 4
        return live + m * h * (2 * r + v) * 2 + (m * h * (r + rope) * 2 if self.backend == "triton" else 0)

    def chunk(self, m: int, prefixes: list[int], seconds: float, prompt: int) -> None:
        """Hold one prefill chunk's peak: the larger of its attention step and its MoE step."""
        layerwise = self.threshold is not None and m >= self.threshold
        if layerwise and FAIL == "cuda_oom@layerwise":
            cuda_oom("forward_extend", self.layer / 2**30)
        with self.lock:
            if layerwise and self.held == self.ready:
                self.held += self.layer  # the module global: never freed
            # the experts' caches are freed before the INT4 layer is restored (kt_ep_wrapper.py:2685-2693)
            moe = int(self.act_per_ktok * m / 1024) + max(int(self.cache_per_ktok * m / 1024), self.restore * layerwise)
            self.write(max(self.attention(m, prefixes), moe))
        if layerwise:
            step = seconds / len(self.layers)
            for layer in self.layers:
                log(f"KT layerwise prefill: layer {layer} compute = {step * 1000:.2f} ms")
        time.sleep(seconds)
        with self.lock:
            self.write()


class Engine:
    """Token accounting shared by the HTTP handlers: metrics counters, histograms, batch log lines."""

    TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0)
    ITL_BUCKETS = (
        0.002,
        0.004,
        0.006,
        0.008,
        0.01,
        0.015,
        0.02,
        0.025,
        0.03,
        0.035,
        0.04,
        0.06,
        0.08,
        0.1,
        0.2,
        0.4,
        0.6,
        0.8,
        1.0,
        2.0,
        4.0,
        6.0,
        8.0,
    )

    def __init__(self, args) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.args = args
        self.gpu = GpuMemory(args)
        from sglang.routing import Routing

        self.routing = Routing(args)
        self.lock = threading.Lock()
        self.running = 0
        self.tokens_in_use = 0
        self.decode_steps = 0
        self.decode_window = (time.time(), 0)
        self.max_total = args.max_total_tokens or 100000
        self.decoding: dict[int, int] = {}  # request id -> its context, while it decodes
        self.pass_ends = 0.0  # when the forward pass in progress (a prefill chunk) ends: nothing is output before
        self.seen: list[list[str]] = []
        self.registry = r = CollectorRegistry()
        labels = ["engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"]
        self.lv = {
            "engine_type": "unified",
            "model_name": args.served_model_name or "default",
            "moe_ep_rank": "0",
            "pp_rank": "0",
            "tp_rank": "0",
        }
        g = lambda n, d: Gauge(f"sglang:{n}", d, labels, registry=r)  # noqa: E731
        self.g_running = g("num_running_reqs", "The number of running requests.")
        self.g_queue = g("num_queue_reqs", "The number of requests in the waiting queue.")
        self.g_used = g("num_used_tokens", "The number of used tokens.")
        self.g_usage = g("token_usage", "The token usage.")
        self.g_gen = g("gen_throughput", "The generation throughput (token/s).")
        self.g_hit = g("cache_hit_rate", "The prefix cache hit rate.")
        self.g_max = g("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.")
        self.g_max.labels(**self.lv).set(self.max_total)
        for gauge in (self.g_running, self.g_queue, self.g_used, self.g_usage, self.g_gen, self.g_hit):
            gauge.labels(**self.lv).set(0)
        self.realtime = Counter(
            "sglang:realtime_tokens_total",
            "Total number of tokens processed (updated on each log interval). mode: prefill_compute, prefill_cache, "
            "decode.",
            labels + ["mode"],
            registry=r,
        )
        m = ["model_name"]
        self.prompt = Counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", m, registry=r)
        self.gen = Counter("sglang:generation_tokens_total", "Number of generation tokens processed.", m, registry=r)
        self.reqs = Counter("sglang:num_requests_total", "Number of requests processed.", m, registry=r)
        self.aborted = Counter("sglang:num_aborted_requests_total", "Number of requests aborted.", m, registry=r)
        self.ttft = Histogram(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            m,
            buckets=self.TTFT_BUCKETS,
            registry=r,
        )
        self.itl = Histogram(
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            m,
            buckets=self.ITL_BUCKETS,
            registry=r,
        )
        self.e2e = Histogram(
            "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", m, registry=r
        )

    def metrics(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def cached(self, words: list[str]) -> int:
        """The radix cache: the longest prefix this prompt shares with an earlier one (never all of it: the last token
        is always computed, schedule_policy.py match_prefix). None with --disable-radix-cache (server_args.py:927)."""
        if self.args.disable_radix_cache:
            return 0
        best = 0
        for seen in self.seen:
            n = 0
            for a, b in zip(seen, words, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        with self.lock:
            self.seen = (self.seen + [words])[-8:]
        return min(best, len(words) - 1)

    def flush_cache(self) -> bool:
        """POST|GET /flush_cache (http_server.py:735): the scheduler resets the radix tree only while no request is
        running or waiting (scheduler.py:2700-2729), else the endpoint answers 400."""
        with self.lock:
            if self.running:
                log(
                    f"Cache not flushed because there are pending requests. #queue-req: 0, #running-req: {self.running}"
                )
                return False
            self.seen = []
        log("Cache flushed successfully!")
        return True

    def prefill(self, n: int, words: list[str] | None = None) -> int:
        """Prefill an n-token prompt chunk by chunk, as the scheduler does; returns the tokens served from the radix
        cache (what the real server reports as meta_info cached_tokens, tokenizer_manager.py:1549)."""
        self.routing.count(n)
        cached = self.cached(words) if words else 0
        size = self.args.chunked_prefill_size or 8192
        rate = float(ENV("STANDIN_PREFILL_TPS", "600"))
        start, done = time.time(), cached
        with self.lock:
            self.tokens_in_use += n
        while done < n:
            m = min(size, n - done)
            with self.lock:  # --enable-mixed-chunk: the decoding requests ride in this batch with their context
                riders = dict(self.decoding) if self.args.enable_mixed_chunk else {}
                usage = self.tokens_in_use / self.max_total
            seconds = max(m / rate, float(ENV("STANDIN_MIN_CHUNK_S", "0.1")))
            # the pass is under way before its line is logged: a reader of the log never sees it idle
            self.pass_ends = time.time() + seconds
            log(
                f"Prefill batch, #new-seq: 1, #new-token: {m}, #cached-token: {done}, token usage: {usage:.2f}, "
                f"#running-req: {len(riders)}, #queue-req: 0, input throughput (token/s): {rate:.2f}, cuda graph: False"
            )
            self.gpu.chunk(m, [done, *riders.values()], seconds, n)
            done += m
        self.realtime.labels(**self.lv, mode="prefill_compute").inc(n - cached)
        self.realtime.labels(**self.lv, mode="prefill_cache").inc(cached)
        self.g_usage.labels(**self.lv).set(self.tokens_in_use / self.max_total)
        rest = float(ENV("STANDIN_MIN_PREFILL_S", "0.1")) - (time.time() - start)
        if rest > 0:  # no real prefill is instant
            time.sleep(rest)
        return cached

    def step_delay(self) -> float:
        rate = float(ENV("STANDIN_DECODE_TPS", "20"))
        alpha = float(ENV("STANDIN_DECODE_ALPHA", "1.0"))
        n = max(1, self.running)
        return 1.0 / (rate * self.routing.speedup * n**alpha / n)

    def decoded(self) -> None:
        self.routing.count(1)
        with self.lock:
            self.tokens_in_use += 1
            self.decode_steps += 1
            steps = self.decode_steps
        self.realtime.labels(**self.lv, mode="decode").inc()
        if steps % 40 == 0:
            t0, s0 = self.decode_window
            now = time.time()
            gen = (steps - s0) / max(1e-6, now - t0)
            self.decode_window = (now, steps)
            self.g_gen.labels(**self.lv).set(gen)
            log(
                f"Decode batch, #running-req: {self.running}, #token: {self.tokens_in_use}, token usage: "
                f"{self.tokens_in_use / self.max_total:.2f}, "
                f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0"
            )

    def request(self, delta: int) -> None:
        with self.lock:
            self.running += delta
            self.g_running.labels(**self.lv).set(self.running)
            if self.running == 0:
                self.tokens_in_use = 0


def make_handler(args, engine: Engine, ready: threading.Event):
    served = args.served_model_name or args.model_path
    model = args.model_path

    def health(path: str) -> int:
        """http_server.py:488-560: 503 while starting; /health answers from state when
        SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is false (environ.py:468, EnvBool); otherwise (and always on
        /health_generate) it sends a one-token request and answers 200 only when the scheduler outputs anything
        within SGLANG_HEALTH_CHECK_TIMEOUT (20 s, :183), polling each second. No output comes before the forward pass
        in progress ends: a long KT prefill chunk makes it 503. (An idle stand-in answers at once.)"""
        if not ready.is_set():
            return 503
        generate = ENV("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "true").lower() not in ("false", "0", "no", "n")
        if path == "/health" and not generate:
            return 200
        tic = time.time()
        deadline = tic + int(ENV("SGLANG_HEALTH_CHECK_TIMEOUT", "20"))
        while engine.pass_ends > time.time():  # the probe rides the next batch
            if time.time() >= deadline:
                return 503
            time.sleep(min(1.0, max(0.0, deadline - time.time())))
        return 200 if time.time() < deadline else 503

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # uvicorn's access-log shape
            path = self.path.split("?")[0]
            if not any(path.startswith(p) for p in (args.uvicorn_access_log_exclude_prefixes or [])):
                log(
                    f'INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.command} {self.path} '
                    f'HTTP/1.1" {a[1] if len(a) > 1 else ""}'
                )

        def reply(self, code: int, body, ctype: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def refused(self, path: str) -> bool:
            """sglang's auth middleware (utils/auth.py:100): with --api-key every route but /health* and /metrics*
            needs `Authorization: Bearer KEY`."""
            if not args.api_key or path.startswith(("/health", "/metrics")):
                return False
            if self.headers.get("Authorization") == f"Bearer {args.api_key}":
                return False
            self.reply(401, {"error": "Unauthorized"})
            return True

        def do_GET(self):
            path = self.path.split("?")[0]
            if self.refused(path):
                return None
            if path in ("/health", "/health_generate"):
                code = health(path)
                self.reply(code, b"", "text/plain")
                if FAIL == "die_after_ready" and code == 200:
                    ANSWERED_READY.set()  # the launcher has seen it serve: now it may die
                return None
            if path == "/flush_cache":  # GET and POST alike (http_server.py:735)
                return self.flush()
            if path == "/v1/models":
                return self.reply(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": served,
                                "object": "model",
                                "created": int(time.time()),
                                "owned_by": "sglang",
                                "root": model,
                                "parent": None,
                                "max_model_len": args.context_length,
                            }
                        ],
                    },
                )
            if path in ("/model_info", "/get_model_info"):
                return self.reply(
                    200,
                    {
                        "model_path": model,
                        "tokenizer_path": model,
                        "is_generation": True,
                        "model_type": "deepseek_v3",
                        "architectures": ["DeepseekV3ForCausalLM"],
                    },
                )
            if path in ("/server_info", "/get_server_info"):
                info = {k: v for k, v in vars(args).items()}
                info.update({"max_total_num_tokens": engine.max_total, "version": "0.7.2-standin"})
                return self.reply(200, info)
            if path == "/metrics" and args.enable_metrics:
                return self.reply(200, engine.metrics(), "text/plain; version=0.0.4; charset=utf-8")
            return self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                return self.reply(400, {"error": "invalid JSON"})
            path = self.path.split("?")[0]
            if self.refused(path):
                return None
            if path in RECORDER:  # SGLang's expert-distribution recorder (http_server.py), "stat" mode
                if not engine.routing.mode:
                    # The no-op recorder raises in the scheduler's event loop (eplb/expert_distribution.py:113-128);
                    # run_scheduler_process logs it and SIGQUITs the server (managers/scheduler.py:3269-3272)
                    log(
                        "Scheduler hit an exception: Traceback (most recent call last):\n"
                        "Exception: Please set ServerArgs.expert_distribution_recorder_mode to use "
                        "ExpertDistributionRecorder."
                    )
                    log("Received sigquit from a child process. It usually means the child failed.")
                    os._exit(1)
                made = getattr(engine.routing, RECORDER[path])()
                return self.reply(200, {"success": True, **({"path": str(made)} if made else {})})
            if path == "/flush_cache":
                return self.flush()
            if path == "/generate":
                words = str(body.get("text", "")).split()
                cached = engine.prefill(len(words) or 1, words)  # /generate: no memory model
                # meta_info always carries cached_tokens (tokenizer_manager.py:1545-1551), flag or not
                meta = {"prompt_tokens": len(words) or 1, "completion_tokens": 8, "cached_tokens": cached}
                return self.reply(200, {"text": "ok", "meta_info": meta})
            if path not in ("/v1/chat/completions", "/v1/completions"):
                return self.reply(404, {"detail": "Not Found"})
            if not ready.is_set():
                return self.reply(503, {"error": "server is starting"})
            text = (
                " ".join(str(m.get("content", "")) for m in body.get("messages", []))
                if "messages" in body
                else str(body.get("prompt", ""))
            )
            words = text.split()
            prompt_tokens = max(1, len(words))
            max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
            eos = ENV("STANDIN_EOS_AFTER")
            if eos and not body.get("ignore_eos") and int(body.get("min_tokens") or 0) < max_tokens:
                max_tokens = max(int(body.get("min_tokens") or 0), min(max_tokens, int(eos)))
            if ENV("STANDIN_MAX_NEW"):  # every request ends there, whatever it asked (as one reaching the context)
                max_tokens = min(max_tokens, int(ENV("STANDIN_MAX_NEW") or 0))
            if path.endswith("chat/completions") and (reply := answers.answer(body)) is not None:
                return self.converse(reply, body, prompt_tokens, words)
            self.generate(prompt_tokens, max_tokens, bool(body.get("stream")), path.endswith("chat/completions"), words)

        def converse(self, reply, body: dict, prompt_tokens: int, words) -> None:
            """A prompt the stand-in's model understands: its raw output in the model family's own format, through
            the parsers (convert.py), whole or streamed in small pieces that split the markers."""
            from sglang import formats
            from sglang.convert import Converter

            conv = Converter(args.tool_call_parser, args.reasoning_parser, body)
            kwargs = body.get("chat_template_kwargs") or {}
            off = kwargs.get("thinking") is False or kwargs.get("enable_thinking") is False
            if conv.think not in formats.ALWAYS_THINKS and (conv.think == "none" or off):
                reply = answers.Reply(reply.text, "", reply.call)  # asked not to think (gpt-oss always does)
            corrupt = ENV("STANDIN_CORRUPT_ABOVE")
            if corrupt and prompt_tokens > int(corrupt):  # a server that answers gibberish above a prompt length
                reply = answers.Reply("\u00c2\u017d\u00a7 the the the ,,,", "", None)
            raw = formats.raw(reply, conv.tool_format, conv.think)
            start = time.time()
            engine.request(+1)
            rid = id(self)
            cid = f"chatcmpl-{rid:x}{int(start * 1000):x}"
            head = {"id": cid, "object": "chat.completion.chunk", "created": int(start), "model": served}
            pieces = formats.tokens(raw)
            try:
                engine.prefill(prompt_tokens, words)
                engine.prompt.labels(served).inc(prompt_tokens)
                engine.ttft.labels(served).observe(time.time() - start)
                own = conv.own(reply)
                usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(pieces),
                         "total_tokens": prompt_tokens + len(pieces), "prompt_tokens_details": None}  # fmt: skip
                if not body.get("stream"):
                    whole = own or conv.whole(raw)
                    msg = {"role": "assistant", "content": whole.content or None,
                           "reasoning_content": whole.reasoning or None, "tool_calls": whole.calls or None}  # fmt: skip
                    finish = "tool_calls" if whole.calls else "stop"
                    choice = {"index": 0, "message": msg, "finish_reason": finish}
                    return self.reply(200, {**head, "object": "chat.completion", "choices": [choice], "usage": usage})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                called = False
                deltas = [own] if own is not None else [conv.piece(p) for p in pieces] + [conv.finish()]
                for d in deltas:
                    delta = {}
                    if d.reasoning:
                        delta["reasoning_content"] = d.reasoning
                    if d.content:
                        delta["content"] = d.content
                    if d.calls:
                        called = True
                        delta["tool_calls"] = d.calls
                    if delta:
                        self.chunk({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                end = {"index": 0, "delta": {}, "finish_reason": "tool_calls" if called else "stop"}
                self.chunk({**head, "choices": [end], "usage": usage})
                self.chunk_raw(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                engine.aborted.labels(served).inc()
            finally:
                engine.request(-1)

        def generate(self, prompt_tokens: int, max_tokens: int, stream: bool, chat: bool, words=None) -> None:
            start = time.time()
            engine.request(+1)
            rid = id(self)
            # as SGLang answers: one id per request on every streamed chunk, chat or completion shape and object
            cid = f"{'chatcmpl' if chat else 'cmpl'}-{rid:x}{int(start * 1000):x}"
            head = {"id": cid, "object": "chat.completion.chunk" if chat else "text_completion", "created": int(start),
                    "model": served}  # fmt: skip
            try:
                cached = engine.prefill(prompt_tokens, words)
                engine.prompt.labels(served).inc(prompt_tokens)
                first = time.time()
                engine.ttft.labels(served).observe(first - start)
                if stream:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                last = due = time.time()
                for i in range(max_tokens):
                    if i:
                        # each token is due one step after the last one's due time, not one step after it was
                        # sent: a loaded machine's late wake-ups and slow writes are made up, so the stream keeps
                        # the rate it was told (STANDIN_DECODE_TPS) rather than drifting below it
                        due += engine.step_delay()
                        time.sleep(max(0.0, due - time.time()))
                        now = time.time()
                        engine.itl.labels(served).observe(now - last)
                        last = now
                    engine.decoded()
                    with engine.lock:
                        engine.decoding[rid] = prompt_tokens + i + 1
                    if stream:
                        piece = (
                            {"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}
                            if chat
                            else {"index": 0, "text": f"t{i} ", "logprobs": None, "finish_reason": None}
                        )
                        self.chunk({**head, "choices": [piece]})
                engine.gen.labels(served).inc(max_tokens)
                engine.reqs.labels(served).inc()
                engine.e2e.labels(served).observe(time.time() - start)
                usage = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": max_tokens,
                    "total_tokens": prompt_tokens + max_tokens,
                }
                # usage_processor.py:13-16,31-37: prompt_tokens_details only with --enable-cache-report, and only
                # when something was cached; otherwise the field is null
                cached_details = {"cached_tokens": cached} if args.enable_cache_report and cached > 0 else None
                usage["prompt_tokens_details"] = cached_details
                if stream:
                    end = {"index": 0, "delta": {}, "finish_reason": "length"} if chat else {
                        "index": 0, "text": "", "logprobs": None, "finish_reason": "length"}  # fmt: skip
                    self.chunk({**head, "choices": [end], "usage": usage})
                    self.chunk_raw(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    text = " ".join(f"t{i}" for i in range(max_tokens))
                    choice = (
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
                        if chat
                        else {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
                    )
                    body = {**head, "object": "chat.completion" if chat else "text_completion"}
                    self.reply(200, {**body, "choices": [choice], "usage": usage})
            except (BrokenPipeError, ConnectionResetError):
                engine.aborted.labels(served).inc()
            finally:
                with engine.lock:
                    engine.decoding.pop(rid, None)
                engine.request(-1)

        def flush(self) -> None:
            ok = engine.flush_cache()
            text = (
                "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting "
                "requests, the operation will not be performed.)\n"
            )
            return self.reply(200 if ok else 400, text.encode(), "text/plain; charset=utf-8")

        def chunk(self, obj) -> None:
            self.chunk_raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

        def chunk_raw(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def phase(name: str) -> None:
    if f"hang@{name}" == FAIL:
        while True:
            time.sleep(3600)
    time.sleep(STEP)


RECORDER = {
    "/start_expert_distribution_record": "start",
    "/stop_expert_distribution_record": "stop",
    "/dump_expert_distribution_record": "dump",
}


def serve(args) -> None:
    model = Path(args.model_path)
    if not (model / "config.json").exists():
        print("Traceback (most recent call last):", flush=True)
        print(f"OSError: {args.model_path} does not appear to have a file named config.json.", flush=True)
        sys.exit(1)
    weights = float(ENV("STANDIN_WEIGHTS_GB", "20.0"))
    cell = int(ENV("STANDIN_KV_CELL", "70272"))
    graph = float(ENV("STANDIN_GRAPH_GB", "0.5"))
    t0 = time.time()
    log(f"Init torch distributed ends. elapsed={STEP:.2f} s, mem usage=0.63 GB")
    avail = GPU_GB - 0.63
    phase("init")
    log(f"Load weight begin. avail mem={avail:.2f} GB")
    if args.kt_weight_path:
        log(f"[KT] Created shared staging buffer: {(args.chunked_prefill_size or 8192) * 7168 * 2 / 2**20:.2f} MiB")
        log(
            f"[KT] Loading CPU experts from {args.kt_weight_path} with method {args.kt_method}, {args.kt_cpuinfer} "
            "threads, "
            f"{args.kt_threadpool_count} pool(s)"
        )
    if FAIL == "cuda_oom@weights":
        cuda_oom("load_model", 2.0)
    if FAIL == "oom_kill":
        hog = []
        while True:  # touch pages until the container's memory limit kills us
            hog.append(bytearray(64 * 2**20))
    if FAIL == "sigill":
        os.kill(os.getpid(), signal.SIGILL)
    shards = max(1, len(list(model.glob("*.safetensors"))))
    for i in range(1, shards + 1):  # the loader's tqdm bar, as SGLang prints it
        time.sleep(STEP / shards)
        log(f"Loading safetensors checkpoint shards: {100 * i // shards:3d}% Completed | {i}/{shards} [00:00<00:00]")
    phase("weights")
    avail -= weights
    log(
        f"Load weight end. elapsed={time.time() - t0:.2f} s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail "
        f"mem={avail:.2f} GB, mem usage={weights:.2f} GB."
    )
    tokens = args.max_total_tokens or 100000
    if ENV("STANDIN_POOL_TOKENS"):  # less memory was left than planned: the profiled pool is below the cap (:627-641)
        tokens = min(tokens, int(ENV("STANDIN_POOL_TOKENS") or 0))
    kv = tokens * cell / 2**30
    if FAIL == "cuda_oom@kv":
        cuda_oom("init_memory_pool", kv)
    log(f"KV Cache is allocated. #tokens: {tokens}, KV size: {kv:.2f} GB")
    avail -= kv
    phase("kv")
    log(f"Memory pool end. avail mem={avail:.2f} GB")
    log(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail:.2f} GB")
    if FAIL == "cuda_oom@graphs":
        cuda_oom("capture", graph)
    phase("graphs")
    avail -= graph
    log(f"Capture cuda graph end. Time elapsed: {STEP:.2f} s. mem usage={graph:.2f} GB. avail mem={avail:.2f} GB.")
    log(
        f"max_total_num_tokens={tokens}, chunked_prefill_size={args.chunked_prefill_size}, max_prefill_tokens=16384, "
        f"max_running_requests={args.max_running_requests}, context_len={args.context_length}, "
        f"available_gpu_mem={avail:.2f} GB"
    )
    ready = threading.Event()
    engine = Engine(args)
    httpd = ThreadingHTTPServer((args.host, args.port), make_handler(args, engine, ready))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    log(f"INFO:     Started server process [{os.getpid()}]")
    log("INFO:     Waiting for application startup.")
    log("INFO:     Application startup complete.")
    log(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    phase("http")
    engine.gpu.started()
    engine.prefill(7)
    ready.set()
    log("The server is fired up and ready to roll!")
    if FAIL == "die_after_ready":
        # once a health check after ready was answered (the launcher's own), however slow the machine is
        ANSWERED_READY.wait()
        time.sleep(float(ENV("STANDIN_DIE_AFTER_S", "0")))
        os.kill(os.getpid(), signal.SIGKILL)
    while True:
        time.sleep(3600)


def main() -> None:
    args = parser().parse_args()
    if os.getpid() != 1:
        serve(args)
        return
    # PID 1 in a container ignores signals it has no handler for: serve from a child and report how it ended,
    # as the shell's exit code would (128 + signal).
    pid = os.fork()
    if pid == 0:
        serve(args)
        os._exit(0)
    signal.signal(signal.SIGTERM, lambda *_: (os.kill(pid, signal.SIGTERM), os._exit(0)))
    _, status = os.waitpid(pid, 0)
    sys.exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
