"""Every router rendering (compose, Kubernetes, the docker/native fleet router), run through sglang-router 0.3.2's
own start-up code exactly as rendered (tests/runtime/router_accept.py): its parser, RouterArgs.from_cli_args and
_validate_router_args, with the key launcher where the fleet is keyed. Then what the router was handed is compared
with what the fleet needs: the workers, the key it calls keyed workers with (router_args.py:826-830), and a health
endpoint that does not generate on the workers (entrypoints/http_server.py:484-503 in sglang-kt 0.7.2: only the
path /health, with SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0, answers from state alone).

`.ci/run` downloads the pinned router wheel and names it in KTWIZARD_ROUTER_WHEEL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import TESTS, key_file, required_file

from ktwizard.errors import KtwizardError
from ktwizard.fleet.compose import compose_fleet
from ktwizard.fleet.k8s import SECRET_KEY_FILE, k8s_documents
from ktwizard.fleet.plan import FleetPlan, fleet_plan
from ktwizard.fleet.router import ROUTER_MODULE, router_args
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.runtime import rules

HOSTS = [p.stem for p in sorted((TESTS.parent / "assets" / "hosts").glob("*.yaml"))]
PRESETS = ("qwen3-30b-a3b", "kimi-k2.7-code", "deepseek-v3.2")
KEY = "sk-ktw-router-check-0123456789abcdef"


def _wheel() -> str:
    return required_file(
        "KTWIZARD_ROUTER_WHEEL",
        "KTWIZARD_ROUTER_WHEEL must name the sglang-router 0.3.2 wheel (.ci/run downloads it)",
        "no sglang-router wheel (set KTWIZARD_ROUTER_WHEEL; .ci/run downloads it)",
    )


def _fleet(host: str, preset: str, key: Path | None) -> FleetPlan | None:
    m = resolve_model(preset, None)
    goals = Goals(context=16384, api_key_file=str(key) if key else None)
    try:
        return fleet_plan([(host, load_host(host))], m.spec, goals, lambda h, g: plan(h, m.spec, g, m.hints, m.recipe))
    except KtwizardError:  # a fleet ktwizard refuses to plan (one line, exit 2) renders no router
        return None


def _health_ok(env: dict[str, str]) -> bool:
    return env.get(rules.HEALTH_GENERATION_ENV) == "0"


def _cases(tmp: Path) -> list[dict]:
    key = key_file(tmp / "key", KEY)
    cases = []
    for host in HOSTS:
        for preset in PRESETS:
            for keyed in (False, True):
                f = _fleet(host, preset, key if keyed else None)
                if f is None:
                    continue
                tag = f"{host}/{preset}/{'keyed' if keyed else 'plain'}"
                if len(f.machines) == 1:
                    doc = compose_fleet(f, monitoring=keyed)
                    router = doc["services"].pop("router")
                    files = {v["target"]: KEY for v in router.get("volumes", [])}
                    workers = [f"http://{r.name}:{r.port}" for r in f.replicas]
                    envs = [s.get("environment", {}) for n, s in doc["services"].items() if n.startswith("r")]
                    cases.append(dict(id=f"compose/{tag}", command=router["command"], files=files, keyed=keyed,
                                      workers=workers, worker_envs=envs))  # fmt: skip
                    if not keyed:  # fleet launch (docker and native routers) refuses keyed fleets
                        urls = [f"http://127.0.0.1:{r.port}" for r in f.replicas]
                        cases.append(dict(id=f"launch/{tag}", command=["python3", "-m", ROUTER_MODULE,
                                          *router_args(f, urls, "127.0.0.1")], files={}, keyed=False, workers=urls,
                                          worker_envs=envs))  # fmt: skip
                docs = k8s_documents(f)
                routers = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-router")]
                (dep,) = routers
                (c,) = dep["spec"]["template"]["spec"]["containers"]
                ns = dep["metadata"]["namespace"]
                args = [a.replace("$(POD_NAMESPACE)", ns) for a in c["args"]]  # the kubelet expands it
                envs = [
                    {e["name"]: e.get("value") for e in d["spec"]["template"]["spec"]["containers"][0].get("env", [])}
                    for d in docs
                    if d["kind"] == "Deployment" and d not in routers
                ]
                cases.append(dict(id=f"k8s/{tag}", command=[*c["command"], *args], keyed=keyed, workers=None,
                                  files={SECRET_KEY_FILE: KEY} if keyed else {}, worker_envs=envs))  # fmt: skip
    return cases


def test_every_router_rendering_starts_with_the_real_router_and_reaches_its_workers(tmp_path):
    wheel = _wheel()
    cases = _cases(tmp_path)
    job = {"cases": [{k: c[k] for k in ("id", "command", "files")} for c in cases]}
    out = subprocess.run(
        [sys.executable, str(TESTS / "runtime" / "router_accept.py"), wheel],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results = {r["id"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert len(results) == len(cases), "every case must answer"
    problems = []
    for c in cases:
        r = results[c["id"]]
        if not r["ok"]:
            problems.append(f"{c['id']}: rejected: {r['error']}")
            continue
        a = r["args"]
        if c["workers"] is not None and a["worker_urls"] != c["workers"]:
            problems.append(f"{c['id']}: workers {a['worker_urls']} vs {c['workers']}")
        if c["workers"] is None and not a["service_discovery"]:
            problems.append(f"{c['id']}: a Kubernetes router must discover its workers")
        if a["api_key"] != (KEY if c["keyed"] else None):
            problems.append(f"{c['id']}: the router calls {'keyed' if c['keyed'] else 'open'} workers with "
                            f"api_key={'set' if a['api_key'] else None}")  # fmt: skip
        if a["health_check_endpoint"] != "/health" or not all(_health_ok(e) for e in c["worker_envs"]):
            problems.append(f"{c['id']}: the router's health check {a['health_check_endpoint']} generates on workers")
    report = os.environ.get("KTWIZARD_RUNTIME_REPORT")
    if report:
        Path(report).with_suffix(".router.json").write_text(
            json.dumps({"renderings": len(cases), "problems": problems}, indent=1)
        )
    assert len(cases) >= 3 * len(HOSTS), "the matrix must cover every bundled host"
    assert not problems, f"{len(problems)} of {len(cases)} router renderings:\n" + "\n".join(problems[:20])
