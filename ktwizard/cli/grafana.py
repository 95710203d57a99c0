"""grafana: the dashboard JSON (SGLang's metrics beside the exporter's), to import or provision."""

from __future__ import annotations

import argparse

from ktwizard.errors import BadInput


def cmd_grafana(args: argparse.Namespace) -> int:
    from ktwizard.cli.guard import emit
    from ktwizard.monitor.grafana import dashboard_text

    emit(prometheus_text(args.prometheus) if args.prometheus is not None else dashboard_text(), args.out)
    return 0


def prometheus_text(names: list[str]) -> str:
    """A Prometheus config for deployments ktwizard launched: each server and its exporter (run as
    `ktwizard exporter NAME --port 9400+i`) under one `deployment` label, as the dashboard selects them."""
    from urllib.parse import urlsplit

    from ktwizard.deploy import records
    from ktwizard.monitor.prometheus import Scraped, scrape_config
    from ktwizard.serial import dump_yaml

    if not names:
        names = records.names()  # the records only: the plan and peak kept beside them are no deployments
    if not names:
        raise BadInput("no deployment to scrape: name them (ktwizard ps lists them) or launch one first")
    targets = []
    for i, name in enumerate(names):
        rec = records.load(name)
        if rec is None:
            raise BadInput(f"{name}: no deployment of that name (ktwizard ps lists them)")
        where = urlsplit(rec.url)
        targets.append(Scraped(name, f"{where.hostname}:{where.port}", f"127.0.0.1:{9400 + i}"))
    lines = [f"# ktwizard exporter {t.deployment} --port {t.exporter.rsplit(':', 1)[1]}" for t in targets if t.exporter]
    return "# Run beside Prometheus:\n" + "\n".join(lines) + "\n" + dump_yaml(scrape_config(targets))


def register(sub: argparse._SubParsersAction) -> None:
    gr = sub.add_parser("grafana", help="print the Grafana dashboard JSON (SGLang metrics and the exporter's)")
    gr.add_argument("--out", metavar="FILE", help="write it to FILE (atomically) instead of printing")
    gr.add_argument(
        "--prometheus",
        nargs="*",
        metavar="NAME",
        help="print a Prometheus config scraping these deployments (default: all) and their exporters instead",
    )
    gr.set_defaults(func=cmd_grafana)
