"""The stand-in's MoE routing: per layer a Zipf(1.1)-like preference over a fixed shuffled expert order (as
torchsave.zipf), counted while SGLang's expert-distribution recorder runs and dumped in its format; with frequency
placement over such a recording the GPU holds the hot experts and decode runs faster, as on the real server."""

from __future__ import annotations

import collections
import json
import os
import random
import threading
import time
from pathlib import Path

from sglang.torchsave import save_counts

CPU_SHARE = 0.7  # the share of a decode step the CPU-resident experts take when the GPU serves none of them


class Routing:
    def __init__(self, args) -> None:
        cfg = json.loads((Path(args.model_path) / "config.json").read_text())
        cfg = cfg.get("text_config", cfg)
        self.layers = int(cfg.get("num_hidden_layers", 1))
        self.experts = int(cfg.get("n_routed_experts") or cfg.get("num_experts") or cfg.get("num_local_experts") or 8)
        self.k = int(cfg.get("num_experts_per_tok", 2))
        first = int(cfg.get("first_k_dense_replace") or 0)
        self.moe = [layer for layer in range(self.layers) if layer >= first]
        self.p = []
        for layer in range(self.layers):
            order = list(range(self.experts))
            random.Random(layer).shuffle(order)
            row = [0.0] * self.experts
            for rank, e in enumerate(order):
                row[e] = 1 / (rank + 1) ** 1.1
            total = sum(row)
            self.p.append([v / total for v in row])
        self.mode = getattr(args, "expert_distribution_recorder_mode", None)
        # The "stat" accumulator keeps one row per forward pass in a circular buffer of this many passes
        # (server_args.py:3112-3116 defaults it to 1000; expert_distribution.py:920-931, :1019-1070): a dump holds
        # only the last window. Negative: an unbounded buffer.
        window = int(getattr(args, "expert_distribution_recorder_buffer_size", None) or 1000)
        self.recording, self.lock = False, threading.Lock()
        self.passes: collections.deque[int] = collections.deque(maxlen=window if window > 0 else None)
        self.speedup = self._speedup(args)

    def count(self, tokens: int) -> None:
        """One forward pass that routed `tokens` tokens."""
        if self.recording:
            with self.lock:
                self.passes.append(tokens)

    @property
    def tokens(self) -> int:
        return sum(self.passes)

    def start(self) -> None:
        self.recording = True
        self.passes.clear()

    def stop(self) -> None:
        self.recording = False

    def dump(self) -> Path:
        """Write the counts where SGLang's recorder writes them (srt/eplb/expert_distribution.py:1009-1014)."""
        folder = Path(os.environ.get("SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR", "/tmp"))
        folder.mkdir(parents=True, exist_ok=True)
        counts = [
            [round(self.tokens * self.k * v) if layer in self.moe else 0 for v in self.p[layer]]
            for layer in range(self.layers)
        ]
        path = folder / f"expert_distribution_recorder_{time.time()}.pt"
        # the recorder's counts live on rank 0's GPU, so torch.save records cuda:0 (expert_distribution.py:960-975)
        save_counts([counts], path, {"average_utilization_rate_over_window": None}, location="cuda:0")
        return path

    def _hit(self, masks: list[set[int]]) -> float:
        return sum(sum(self.p[layer][e] for e in masks[layer]) for layer in self.moe) / max(1, len(self.moe))

    def _speedup(self, args) -> float:
        per = int(getattr(args, "kt_num_gpu_experts", 0) or 0)
        total = per * len(self.moe)
        uniform = [set(range(per)) if layer in self.moe else set() for layer in range(self.layers)]
        masks = uniform
        loc = getattr(args, "init_expert_location", None) or ""
        if getattr(args, "kt_expert_placement_strategy", None) == "frequency" and loc.endswith(".pt"):
            if not Path(loc).is_file():
                raise SystemExit(f"FileNotFoundError: {loc}")
            ranked = sorted(((self.p[layer][e], layer, e) for layer in self.moe for e in range(self.experts)),
                            reverse=True)  # fmt: skip
            masks = [set() for _ in range(self.layers)]
            for _, layer, e in ranked[:total]:
                masks[layer].add(e)
        base = 1 - CPU_SHARE * self._hit([set() for _ in range(self.layers)])
        return base / (1 - CPU_SHARE * self._hit(masks))
