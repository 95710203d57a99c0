"""The compose file's optional `monitoring` profile: Prometheus scraping the replicas, the router and ktwizard's
exporters, and Grafana provisioned with that Prometheus and ktwizard's dashboard (`docker compose --profile
monitoring up`)."""

from __future__ import annotations

from ktwizard.fleet.plan import FleetPlan

PROMETHEUS_IMAGE = "prom/prometheus:v2.53.0"
GRAFANA_IMAGE = "grafana/grafana:11.1.0"
EXPORTER_BASE_PORT = 9400  # replica i's exporter: ktwizard exporter --container NAME --port 9400+i


def prometheus_config(fleet: FleetPlan) -> dict:
    """Each replica and its exporter under the replica's name as `deployment`. The exporters run on the host (they
    read NVML, /proc and the engine): ktwizard exporter <replica> --bind <docker0 address> --port 9400+i."""
    from ktwizard.monitor.prometheus import Scraped, scrape_config

    return scrape_config(
        [
            Scraped(r.name, f"{r.name}:{r.port}", f"host.docker.internal:{EXPORTER_BASE_PORT + i}")
            for i, r in enumerate(fleet.replicas)
        ],
        router=f"router:{fleet.metrics_port}",
    )


def add_monitoring(doc: dict, fleet: FleetPlan) -> None:
    from ktwizard.monitor.grafana import dashboard_text
    from ktwizard.serial import dump_yaml

    labels = {"io.ktwizard.managed": "true", "io.ktwizard.fleet": fleet.name, "io.ktwizard.role": "monitoring"}
    doc["services"]["prometheus"] = {
        "image": PROMETHEUS_IMAGE,
        "profiles": ["monitoring"],
        "configs": [{"source": "prometheus", "target": "/etc/prometheus/prometheus.yml"}],
        "ports": ["127.0.0.1:9090:9090"],
        "extra_hosts": ["host.docker.internal:host-gateway"],
        "labels": labels,
    }
    doc["services"]["grafana"] = {
        "image": GRAFANA_IMAGE,
        "profiles": ["monitoring"],
        "depends_on": ["prometheus"],
        "configs": [
            {"source": "grafana-datasource", "target": "/etc/grafana/provisioning/datasources/ktwizard.yaml"},
            {"source": "grafana-dashboards", "target": "/etc/grafana/provisioning/dashboards/ktwizard.yaml"},
            {"source": "ktwizard-dashboard", "target": "/var/lib/grafana/dashboards/ktwizard.json"},
        ],
        "ports": ["127.0.0.1:3000:3000"],
        "labels": labels,
    }
    doc["configs"] = {
        "prometheus": {"content": dump_yaml(prometheus_config(fleet))},
        "grafana-datasource": {
            "content": dump_yaml(
                {
                    "apiVersion": 1,
                    "datasources": [
                        {"name": "Prometheus", "type": "prometheus", "url": "http://prometheus:9090", "isDefault": True}
                    ],
                }
            )
        },
        "grafana-dashboards": {
            "content": dump_yaml(
                {
                    "apiVersion": 1,
                    "providers": [
                        {"name": "ktwizard", "type": "file", "options": {"path": "/var/lib/grafana/dashboards"}}
                    ],
                }
            )
        },
        "ktwizard-dashboard": {"content": dashboard_text()},
    }
