"""Prometheus scrape configs that give one deployment one `deployment` label on every series: its server's, its
exporter's (which carries the label itself, kept by honor_labels) and nothing else's, so the dashboard selects a
deployment whole."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scraped:
    deployment: str
    server: str  # host:port of the SGLang server's /metrics
    exporter: str | None = None  # host:port of `ktwizard exporter NAME` for it


def scrape_config(targets: list[Scraped], router: str | None = None, interval: str = "10s") -> dict:
    jobs: list[dict] = [
        {
            "job_name": "sglang",
            "static_configs": [{"targets": [t.server], "labels": {"deployment": t.deployment}} for t in targets],
        }
    ]
    exporters = [t for t in targets if t.exporter]
    if exporters:
        jobs.append(
            {
                "job_name": "ktwizard",
                "honor_labels": True,  # the exporter's own `deployment` label wins over the target's
                "static_configs": [
                    {"targets": [t.exporter], "labels": {"deployment": t.deployment}} for t in exporters
                ],
            }
        )
    if router:
        jobs.append({"job_name": "sglang-router", "static_configs": [{"targets": [router]}]})
    return {"global": {"scrape_interval": interval, "evaluation_interval": interval}, "scrape_configs": jobs}
