"""Every rendered probe of a server's /health reaches a server that answers it from state. In sglang-kt 0.7.2 /health
runs a one-token generation and answers 503 when nothing comes back within 20 s (entrypoints/http_server.py:484-560,
HEALTH_CHECK_TIMEOUT), e.g. behind a long prefill, unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is false in the
server's environment (:500-503, environ.py:468): a liveness probe would then restart a busy pod."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_fleet import XEON, fleet  # noqa: E402

from ktwizard.fleet.compose import compose_fleet  # noqa: E402
from ktwizard.fleet.k8s import k8s_documents  # noqa: E402

ENV = "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"


def _containers(doc: dict) -> list[dict]:
    """Every container of a workload, the LeaderWorkerSet's leader and worker templates included."""
    spec = doc.get("spec", {})
    templates = [spec.get("template", {})]
    lwt = spec.get("leaderWorkerTemplate", {})
    templates += [lwt.get("leaderTemplate", {}), lwt.get("workerTemplate", {})]
    return [c for t in templates for c in t.get("spec", {}).get("containers", [])]


def _probes_health(c: dict) -> bool:
    return any(c.get(p, {}).get("httpGet", {}).get("path") == "/health" for p in ("startupProbe", "readinessProbe",
                                                                                   "livenessProbe"))  # fmt: skip


def test_every_kubernetes_health_probe_hits_a_non_generating_health():
    f = fleet("kimi-k2.7-code", [XEON] * 4, context=65536, weights="/models/Kimi-K2.7-Code")
    probed = 0
    for multinode in (False, True):
        for doc in k8s_documents(f, weights_claim="w", multinode=multinode):
            for c in _containers(doc):
                if _probes_health(c):
                    probed += 1
                    env = {e["name"]: e.get("value") for e in c.get("env", [])}
                    assert env.get(ENV) == "0", f"{doc['kind']} {doc['metadata']['name']}: /health would generate"
    assert probed >= 2  # the KT workers and the LeaderWorkerSet's leader


def test_every_compose_healthcheck_hits_a_non_generating_health():
    f = fleet("qwen3-30b-a3b", ["rtx-pro-6000-epyc-9355"], context=32768)
    services = compose_fleet(f)["services"]
    checked = [s for s in services.values() if "/health" in " ".join(s.get("healthcheck", {}).get("test", []))]
    assert checked
    for s in checked:
        assert s["environment"].get(ENV) == "0"
