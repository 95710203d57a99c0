"""grafana: the dashboard JSON (SGLang's metrics beside the exporter's), to import or provision."""

from __future__ import annotations

import argparse


def cmd_grafana(args: argparse.Namespace) -> int:
    from ktwizard.cli.guard import emit
    from ktwizard.monitor.grafana import dashboard_text

    emit(dashboard_text(), args.out)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    gr = sub.add_parser("grafana", help="print the Grafana dashboard JSON (SGLang metrics and the exporter's)")
    gr.add_argument("--out", metavar="FILE", help="write it to FILE (atomically) instead of printing")
    gr.set_defaults(func=cmd_grafana)
