"""The server commands a deployment renders, exactly as rendered, through sglang-kt 0.7.2's own start-up code
(tests/runtime/accept.py) on a faked device of the host:
- compose services and Kubernetes workers: container paths, and the key launcher that adds --api-key inside the
  process (ktwizard/apikey.py), run as the container's python3 would run it up to its runpy call, whose argv is
  what the runtime parses;
- the GPU-only multi-node launch (`--k8s-multinode`, a LeaderWorkerSet): leader and worker commands with the
  kubelet's $(LWS_*) substitutions made.
One runtime process per host serves both (its start-up, importing sglang, is most of the cost)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

from conftest import REPO, key_file
from test_runtime_accepts import _run, _runtime_python

from ktwizard.errors import KtwizardError
from ktwizard.fleet.compose import compose_fleet
from ktwizard.fleet.k8s import k8s_documents
from ktwizard.fleet.plan import fleet_plan
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.models.presets import all_presets
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals

PRESETS = ("qwen3-30b-a3b", "kimi-k2.7-code", "deepseek-v3.2", "qwen3.5-397b-a17b", "glm-4.5-air-fp8")
KEY = "sk-ktw-deploy-check-0123456789abcdef"
LWS_PRESETS = ("kimi-k2.7-code", "qwen3-235b-a22b", "glm-4.5-air-fp8", "deepseek-v3.2", "qwen3.5-397b-a17b")
LEADER = "10.0.0.1"
CONTAINER_MODELS = "/models/"
SERVER = "sglang.launch_server"


def _server_argv(command: list[str], key_file: Path) -> list[str]:
    """The argv launch_server parses for this container command: `python3 -m sglang.launch_server ARGS`, or the
    key launcher `python3 -c CODE KEYFILE ARGS` executed up to its runpy.run_module call."""
    assert command[0] == "python3", command[:2]
    if command[1] == "-m":
        assert command[2] == SERVER
        return command[3:]
    assert command[1] == "-c"
    seen: list[list[str]] = []
    fake = types.ModuleType("runpy")
    fake.run_module = lambda name, **kw: seen.append([name, *sys.argv[1:]])  # type: ignore[attr-defined]
    saved_argv, saved_runpy = sys.argv, sys.modules.get("runpy")
    sys.argv, sys.modules["runpy"] = ["-c", str(key_file), *command[4:]], fake
    try:
        exec(compile(command[2], "<launcher>", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv
        if saved_runpy is not None:
            sys.modules["runpy"] = saved_runpy
    ((name, *argv),) = seen
    assert name == SERVER
    return argv


def _hosts():
    """Each bundled host with the device the runtime check fakes for it (its first GPU, as many as it has)."""
    for hname in (p.stem for p in sorted((REPO / "assets" / "hosts").glob("*.yaml"))):
        host = load_host(hname)
        g = host.gpus.devices[0]
        cc = [int(x) for x in g.compute_capability.split(".")]
        yield hname, host, {"cc": cc, "memory_mib": g.memory_total >> 20, "count": len(host.gpus.devices),
                                 "name": g.name}  # fmt: skip


def _checkpoint(folder: Path, pid: str) -> Path:
    """A folder holding the preset's config.json, which ServerArgs.__post_init__ reads."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(all_presets()[pid].config))
    return folder


def _cases(tmp: Path) -> dict[str, tuple[dict, list[dict]]]:
    key = key_file(tmp / "key", KEY)
    by_host: dict[str, tuple[dict, list[dict]]] = {}
    for hname, host, device in _hosts():
        cases: list[dict] = []
        for pid in PRESETS:
            m = resolve_model(pid, None)
            folder = _checkpoint(tmp / pid, pid)
            for keyed in (False, True):
                goals = Goals(context=16384, api_key_file=str(key) if keyed else None)
                try:
                    f = fleet_plan([(hname, host)], m.spec, goals, lambda h, gl, m=m: plan(h, m.spec, gl, m.hints))
                except KtwizardError:
                    continue
                commands = [
                    ("compose", n, s["command"], s.get("environment", {}))
                    for n, s in compose_fleet(f)["services"].items()
                    if n != "router"
                ]
                for d in k8s_documents(f):
                    if d["kind"] == "Deployment" and not d["metadata"]["name"].endswith("-router"):
                        (c,) = d["spec"]["template"]["spec"]["containers"]
                        env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
                        commands.append(("k8s", d["metadata"]["name"], [*c["command"], *c.get("args", [])], env))
                for fmt, name, command, env in commands:
                    argv = _server_argv(command, key)
                    assert (f"--api-key={KEY}" in argv) == keyed, f"{fmt}/{name}: the key reaches the server iff keyed"
                    argv = [str(folder) if a.startswith(CONTAINER_MODELS) else a for a in argv]
                    tag = f"{hname}/{pid}/{fmt}/{name}/{'keyed' if keyed else 'plain'}"
                    cases.append({"id": tag, "argv": argv, "env": {k: str(v) for k, v in env.items()}})
        by_host[hname] = (device, cases)
    return by_host


def _lws_cases(tmp: Path) -> dict[str, tuple[dict, list[dict]]]:
    key = key_file(tmp / "lws-key", KEY)
    by_host: dict[str, tuple[dict, list[dict]]] = {}
    for hname, host, device in _hosts():
        cases: list[dict] = []
        for pid, keyed in ((pid, keyed) for pid in LWS_PRESETS for keyed in (False, True)):
            m = resolve_model(pid, None)
            folder = _checkpoint(tmp / "lws" / pid, pid)
            goals = Goals(context=16384, weights=str(folder), api_key_file=str(key) if keyed else None)
            try:
                f = fleet_plan([(hname, host)] * 16, m.spec, goals, lambda h, gl, m=m: plan(h, m.spec, gl, m.hints))
                docs = k8s_documents(f, multinode=True)
            except KtwizardError:
                continue  # no GPU-only launch for this model on this class: nothing rendered
            for d in (d for d in docs if d["kind"] == "LeaderWorkerSet"):
                lwt = d["spec"]["leaderWorkerTemplate"]
                for role, index in (("leaderTemplate", 0), ("workerTemplate", 1)):
                    (c,) = lwt[role]["spec"]["containers"]
                    subs = {"$(LWS_GROUP_SIZE)": str(lwt["size"]), "$(LWS_WORKER_INDEX)": str(index),
                            "$(LWS_LEADER_ADDRESS)": LEADER}  # fmt: skip
                    argv = _server_argv([*c["command"], *c["args"]], key)
                    assert (f"--api-key={KEY}" in argv) == keyed, f"{hname}/{pid}/{role}: the key iff keyed"
                    args = []
                    for a in argv:
                        for k, v in subs.items():
                            a = a.replace(k, v)
                        # the weights volume's mount point holds the checkpoint's config.json
                        args.append(str(folder) if a.startswith(CONTAINER_MODELS) else a)
                    env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
                    tag = f"{hname}/{pid}/{role}/{'keyed' if keyed else 'plain'}"
                    cases.append({"id": tag, "argv": args, "env": env})
        by_host[hname] = (device, cases)
    return by_host


def _verdicts(tmp: Path) -> tuple[list[dict], list[dict]]:
    """(compose/Kubernetes results, LeaderWorkerSet results), one runtime process per host."""
    python = _runtime_python()
    deployed, lws = _cases(tmp), _lws_cases(tmp)
    out: tuple[list[dict], list[dict]] = ([], [])
    for host, (device, cases) in deployed.items():
        multi = lws.get(host, (device, []))[1]
        if cases or multi:
            results = {r["id"]: r for r in _run(python, device, [*cases, *multi])}
            assert len(results) == len(cases) + len(multi), "every case must answer"
            out[0].extend(results[c["id"]] for c in cases)
            out[1].extend(results[c["id"]] for c in multi)
    return out


def test_every_deployed_server_command_passes_the_runtimes_own_start_up_checks(tmp_path):
    deployed, multinode = _verdicts(tmp_path)
    for results, least, what in ((deployed, 20, "compose/Kubernetes"), (multinode, 2, "multi-node")):
        rejected = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
        assert len(results) >= least, f"the matrix must render {what} deployments on the bundled hosts"
        assert not rejected, f"{what}: {len(rejected)} of {len(results)}:\n" + "\n".join(rejected[:20])
