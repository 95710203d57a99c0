"""The GPU-only multi-node launch (`--k8s-multinode`, a LeaderWorkerSet) renders sglang launch_server flags too: its
leader and worker commands, with the kubelet's $(LWS_*) substitutions made, run through sglang-kt 0.7.2's own
start-up code (tests/runtime/accept.py) on a faked device of the node class, as every other rendering does."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO
from test_runtime_accepts import _run, _runtime_python

from ktwizard.errors import KtwizardError
from ktwizard.fleet.k8s import k8s_documents
from ktwizard.fleet.plan import fleet_plan
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.models.presets import all_presets
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

PRESETS = ("kimi-k2.7-code", "qwen3-235b-a22b", "glm-4.5-air-fp8", "deepseek-v3.2", "qwen3.5-397b-a17b")
LEADER = "10.0.0.1"
CONTAINER_MODELS = "/models/"


def _lws_cases(tmp: Path) -> dict[str, tuple[dict, list[dict]]]:
    by_host: dict[str, tuple[dict, list[dict]]] = {}
    for hpath in sorted((REPO / "assets" / "hosts").glob("*.yaml")):
        host = load_host(hpath.stem)
        g = host.gpus.devices[0]
        cc = [int(x) for x in g.compute_capability.split(".")]
        device = {"cc": cc, "memory_mib": g.memory_total >> 20, "count": len(host.gpus.devices), "name": g.name}
        cases: list[dict] = []
        for pid in PRESETS:
            m = resolve_model(pid, None)
            folder = tmp / pid
            folder.mkdir(exist_ok=True)
            (folder / "config.json").write_text(json.dumps(all_presets()[pid].config))
            goals = Goals(context=16384, weights=str(folder))
            try:
                f = fleet_plan(
                    [(hpath.stem, host)] * 16, m.spec, goals, lambda h, gl, m=m: plan(h, m.spec, gl, m.hints)
                )
                docs = k8s_documents(f, multinode=True)
            except KtwizardError:
                continue  # no GPU-only launch for this model on this class: nothing rendered
            for d in (d for d in docs if d["kind"] == "LeaderWorkerSet"):
                lwt = d["spec"]["leaderWorkerTemplate"]
                for role, index in (("leaderTemplate", 0), ("workerTemplate", 1)):
                    (c,) = lwt[role]["spec"]["containers"]
                    subs = {"$(LWS_GROUP_SIZE)": str(lwt["size"]), "$(LWS_WORKER_INDEX)": str(index),
                            "$(LWS_LEADER_ADDRESS)": LEADER}  # fmt: skip
                    args = []
                    for a in c["args"]:
                        for k, v in subs.items():
                            a = a.replace(k, v)
                        # the weights volume's mount point holds the checkpoint's config.json
                        args.append(str(folder) if a.startswith(CONTAINER_MODELS) else a)
                    env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
                    cases.append({"id": f"{hpath.stem}/{pid}/{role}", "argv": args, "env": env})
        by_host[hpath.stem] = (device, cases)
    return by_host


def test_every_multinode_rendering_passes_the_runtimes_own_start_up_checks(tmp_path):
    python = _runtime_python()
    total, rejected = 0, []
    for device, cases in _lws_cases(tmp_path).values():
        if not cases:
            continue
        for r in _run(python, device, cases):
            total += 1
            if not r["ok"]:
                rejected.append(f"{r['id']}: {r['error']}")
    assert total >= 2, "at least one GPU-only launch must be rendered"
    assert not rejected, "\n".join(rejected[:20])
