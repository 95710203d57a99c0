"""sglang-router's own view of a fleet: which workers it holds healthy (/workers) and what it routed (/metrics)."""

from __future__ import annotations

from dataclasses import dataclass

from ktwizard.httpcap import parse_json
from ktwizard.monitor.metrics import wanted_lines

MAX_BODY = 4 * 2**20
# sglang-router 0.3 (the smg_ families); each sample is labelled with its worker's URL.
OUTCOMES = "smg_worker_cb_outcomes_total"
HEALTH = "smg_worker_health"
REQUESTS = "smg_router_requests_total"
ROUTER_FAMILIES = tuple(n + end for n in (OUTCOMES, HEALTH, REQUESTS) for end in ("{", " "))


@dataclass(frozen=True)
class WorkerView:
    url: str
    healthy: bool  # as the router's health checks last found it
    load: int | None = None
    routed_ok: float = 0.0  # requests the router sent it that succeeded
    routed_failed: float = 0.0


@dataclass(frozen=True)
class RouterSample:
    up: bool
    ready: bool = False
    workers: tuple[WorkerView, ...] = ()
    requests: float | None = None  # requests the router has handled
    error: str | None = None

    def worker(self, url: str) -> WorkerView | None:
        return next((w for w in self.workers if w.url.rstrip("/") == url.rstrip("/")), None)


def parse_router_metrics(text: str) -> tuple[dict[str, dict[str, float]], float | None]:
    """worker URL -> {ok, failed, health}; and the total routed requests."""
    from prometheus_client.parser import text_string_to_metric_families

    per: dict[str, dict[str, float]] = {}
    total: float | None = None
    for fam in text_string_to_metric_families(wanted_lines(text, ROUTER_FAMILIES)):
        for s in fam.samples:
            if s.name == OUTCOMES:
                key = "ok" if s.labels.get("outcome") == "success" else "failed"
                d = per.setdefault(s.labels.get("worker", ""), {})
                d[key] = d.get(key, 0.0) + s.value
            elif s.name == HEALTH:
                per.setdefault(s.labels.get("worker", ""), {})["health"] = s.value
            elif s.name == REQUESTS:
                total = (total or 0.0) + s.value
    return per, total


class RouterSampler:
    def __init__(self, url: str, metrics_url: str, timeout: float = 2.0) -> None:
        from ktwizard.monitor.fetch import Getter

        self.url, self.metrics_url = url.rstrip("/"), metrics_url.rstrip("/")
        self.http, self.metrics = Getter(self.url, timeout), Getter(self.metrics_url, timeout)

    def sample(self) -> RouterSample:
        from ktwizard.monitor.fetch import FetchError, TooLarge

        try:
            status, body = self.http.get("/workers", MAX_BODY)
            ready = self.http.get("/readiness", MAX_BODY)[0] == 200
        except (*FetchError, TooLarge) as exc:
            return RouterSample(up=False, error=f"router {self.url} unreachable ({exc.__class__.__name__})")
        try:
            listed = parse_json(body, "/workers")["workers"] if status == 200 else []
            views = {
                str(w["url"]): WorkerView(str(w["url"]), bool(w.get("is_healthy")), _int(w.get("load")))
                for w in listed
                if isinstance(w, dict) and "url" in w
            }
        except (ValueError, KeyError, TypeError):
            # it answered: up, with no routing table to show (not "down", which sends people to restart it)
            return RouterSample(up=True, ready=ready, error=f"router {self.url}/workers is not the router's JSON")
        total = None
        try:
            code, text = self.metrics.get("/metrics", MAX_BODY)
            if code == 200:
                per, total = parse_router_metrics(text.decode("utf-8", "replace"))
                for url, d in per.items():
                    if url in views:
                        v = views[url]
                        views[url] = WorkerView(v.url, v.healthy, v.load, d.get("ok", 0.0), d.get("failed", 0.0))
        except (*FetchError, TooLarge, ValueError):
            pass  # the routing table is still worth showing without the counters
        return RouterSample(up=True, ready=ready, workers=tuple(views.values()), requests=total)


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
