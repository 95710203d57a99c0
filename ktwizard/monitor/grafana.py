"""A Grafana dashboard: SGLang's own metrics (either prefix: `sglang:` in 0.4/0.5, `sglang_` in later releases)
beside the exporter's, one row per GPU and per NUMA node, and the router's when a fleet runs."""

from __future__ import annotations

from typing import Any

DS = {"type": "prometheus", "uid": "${datasource}"}
DEPLOYMENT = 'deployment=~"$deployment"'  # the server's, its exporter's: one deployment whole (monitor/prometheus.py)


def sglang(name: str, extra: str = "") -> str:
    """A selector for an SGLang family under either prefix."""
    return "{" + f'__name__=~"sglang[:_]{name}", {DEPLOYMENT}' + (f", {extra}" if extra else "") + "}"


def quantiles(histogram: str) -> list[tuple[str, str]]:
    """p50 and p95 of an SGLang histogram over 5 minutes, per deployment."""
    bucket = sglang(f"{histogram}_bucket")
    return [
        (
            f"histogram_quantile({q}, sum by (le, deployment) (rate({bucket}[5m])))",
            f"p{int(q * 100)} {{{{deployment}}}}",
        )
        for q in (0.5, 0.95)
    ]


class Layout:
    """Panels placed left to right on a 24-column grid, rows of height 8."""

    def __init__(self) -> None:
        self.panels: list[dict] = []
        self.x = self.y = 0
        self.next_id = 1

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def row(self, title: str, repeat: str | None = None) -> None:
        if self.x:
            self.x, self.y = 0, self.y + 8
        row: dict[str, Any] = {
            "type": "row",
            "id": self._id(),
            "title": title,
            "collapsed": False,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
            "panels": [],
        }
        if repeat:
            row["repeat"] = repeat
        self.panels.append(row)
        self.y += 1

    def panel(self, title: str, targets: list[tuple[str, str]], unit: str = "short", kind: str = "timeseries",
              width: int = 8, **field: Any) -> None:  # fmt: skip
        if self.x + width > 24:
            self.x, self.y = 0, self.y + 8
        self.panels.append(
            {
                "type": kind,
                "id": self._id(),
                "title": title,
                "datasource": DS,
                "gridPos": {"h": 8, "w": width, "x": self.x, "y": self.y},
                "fieldConfig": {"defaults": {"unit": unit, **field}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"}} if kind == "timeseries" else {},
                "targets": [
                    {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": chr(65 + i)}
                    for i, (expr, legend) in enumerate(targets)
                ],
            }
        )
        self.x += width


def _variable(name: str, query: str, label: str) -> dict:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        "query": {"query": query, "refId": name},
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 3,
    }


def dashboard() -> dict:
    L = Layout()
    L.row("SGLang")
    L.panel("Decode throughput", [(f"sum by (deployment) (rate({sglang('generation_tokens_total')}[1m]))",
                                   "{{deployment}}")], "tok/s")  # fmt: skip
    L.panel("Prompt throughput", [(f"sum by (deployment) (rate({sglang('prompt_tokens_total')}[1m]))",
                                   "{{deployment}}")], "tok/s")  # fmt: skip
    L.panel(
        "Requests",
        [(f"sum by (deployment) ({sglang('num_running_reqs')})", "running {{deployment}}"),
         (f"sum by (deployment) ({sglang('num_queue_reqs')})", "queued {{deployment}}")],
    )  # fmt: skip
    L.panel("KV cache use", [(f"max by (deployment) ({sglang('token_usage')})", "{{deployment}}")], "percentunit",
            min=0, max=1)  # fmt: skip
    L.panel("Time to first token", quantiles("time_to_first_token_seconds"), "s")
    L.panel("Inter-token latency", quantiles("inter_token_latency_seconds"), "s")
    L.row("GPU $gpu", repeat="gpu")
    sel = f'{DEPLOYMENT}, gpu=~"$gpu"'
    L.panel(
        "Memory: used, planned peak, usable",
        [(f"ktwizard_gpu_memory_used_bytes{{{sel}}}", "used {{deployment}}"),
         (f"ktwizard_gpu_memory_planned_bytes{{{sel}}}", "planned peak {{deployment}}"),
         (f"ktwizard_gpu_memory_total_bytes{{{sel}}}", "usable {{deployment}}"),
         (f"ktwizard_gpu_memory_server_bytes{{{sel}}}", "server {{deployment}}")],
        "bytes",
        width=12,
    )  # fmt: skip
    L.panel("Driver reserve", [(f"ktwizard_gpu_memory_reserved_bytes{{{sel}}}", "{{deployment}}")], "bytes", width=6)
    L.panel("Utilisation", [(f"ktwizard_gpu_utilization_ratio{{{sel}}}", "{{deployment}}")], "percentunit", width=6)
    L.row("NUMA node $node", repeat="node")
    sel = f'{DEPLOYMENT}, node=~"$node"'
    L.panel(
        "Memory",
        [(f"ktwizard_numa_memory_total_bytes{{{sel}}} - ktwizard_numa_memory_free_bytes{{{sel}}}",
          "used {{deployment}}"),
         (f"ktwizard_numa_memory_total_bytes{{{sel}}}", "total {{deployment}}")],
        "bytes",
        width=12,
    )  # fmt: skip
    L.panel("CPU", [(f"ktwizard_numa_cpu_utilization_ratio{{{sel}}}", "{{deployment}}")], "percentunit", width=12)
    L.row("Host and container")
    sel = DEPLOYMENT
    L.panel(
        "Host memory",
        [(f"ktwizard_host_memory_total_bytes{{{sel}}} - ktwizard_host_memory_available_bytes{{{sel}}}", "used"),
         (f"ktwizard_host_page_cache_bytes{{{sel}}}", "page cache"),
         (f"ktwizard_host_swap_used_bytes{{{sel}}}", "swap used")],
        "bytes",
    )  # fmt: skip
    L.panel(
        "Container memory",
        [(f"ktwizard_container_memory_used_bytes{{{sel}}}", "{{container}}"),
         (f"ktwizard_container_memory_limit_bytes{{{sel}}}", "limit {{container}}")],
        "bytes",
    )  # fmt: skip
    L.panel(
        "Container state",
        [(f"ktwizard_container_running{{{sel}}}", "running {{container}}"),
         (f"ktwizard_container_oom_killed{{{sel}}}", "OOM-killed {{container}}"),
         (f"ktwizard_host_swapping{{{sel}}}", "host swapping")],
    )  # fmt: skip
    L.row("Plan and peak check")
    L.panel("Plan", [(f"ktwizard_plan_info{{{sel}}}", "")], kind="table", width=12)
    L.panel(
        "Peak check: margin left (negative: over the plan)",
        [(f"ktwizard_peak_check_margin_left_bytes{{{sel}}}", "GPU {{gpu}} {{step}}")],
        "bytes",
        kind="stat",
        width=12,
        thresholds={"mode": "absolute", "steps": [{"color": "red", "value": None}, {"color": "green", "value": 0}]},
    )
    L.row("sglang-router (fleets)")
    L.panel("Requests routed", [("sum(rate(smg_router_requests_total[1m]))", "all")], "reqps")
    L.panel("Worker health", [("smg_worker_health", "{{worker}}")])
    L.panel("Outcomes per worker", [("sum by (worker, outcome) (rate(smg_worker_cb_outcomes_total[1m]))",
                                     "{{worker}} {{outcome}}")], "reqps")  # fmt: skip
    return {
        "title": "ktwizard: SGLang + KTransformers",
        "uid": "ktwizard-sglang-kt",
        "tags": ["ktwizard", "sglang", "ktransformers"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "timezone": "browser",
        "templating": {
            "list": [
                {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"},
                _variable("deployment", "label_values(deployment)", "deployment"),
                _variable("gpu", "label_values(ktwizard_gpu_memory_used_bytes, gpu)", "GPU"),
                _variable("node", "label_values(ktwizard_numa_memory_total_bytes, node)", "NUMA node"),
            ]
        },
        "panels": L.panels,
    }


def dashboard_text() -> str:
    import json

    return json.dumps(dashboard(), indent=2) + "\n"
