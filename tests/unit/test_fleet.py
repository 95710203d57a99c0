"""Fleet plans and their renderings: per-NUMA replicas against a hand-written half machine, the auto choice's
reasons, every Kubernetes manifest validated (kubernetes-validate; the LeaderWorkerSet against its CRD schema), the
compose file parsed and cross-checked, the router's flags against the real sglang-router parser."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import replace

import pytest
import yaml
from conftest import ORACLES, REPO, key_file, run_cli

from ktwizard.errors import BadInput, KtwizardError
from ktwizard.fleet.compose import compose_fleet
from ktwizard.fleet.k8s import k8s_documents
from ktwizard.fleet.plan import FleetPlan, fleet_plan, numa_slices, with_replicas
from ktwizard.host.spec import host_from_spec, load_host
from ktwizard.inputs import resolve_model
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.serial import dump_json

XEON = "xeon-2s-amx-4x4090-48gb"
RTX = "rtx-pro-6000-epyc-9355"
AMX = ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"]


def make(model_id: str):
    m = resolve_model(model_id, None)

    def plan_for(host, goals):
        return plan(host, m.spec, goals, m.hints, m.recipe)

    return m, plan_for


def fleet(model_id: str, refs: list[str], per: str | int = "auto", **goals) -> FleetPlan:
    m, plan_for = make(model_id)
    hosts = [(r, load_host(r)) for r in refs]
    return fleet_plan(hosts, m.spec, Goals(**goals), plan_for, per_machine=per)


def test_numa_slices_give_each_node_its_cpus_and_gpus():
    host = load_host(XEON)
    slices, how = numa_slices(host)
    assert [n for n, _ in slices] == [0, 1]
    for node, sub in slices:
        node_cpus = set(next(n.cpus for n in host.numa_nodes if n.id == node))
        assert set(sub.cpu.usable_cpus) == node_cpus
        # the spec lists 4 GPUs and 2 nodes without affinity: two per node in index order
        assert [g.index for g in sub.visible_gpus] == ([0, 1] if node == 0 else [2, 3])
    assert "index order" in how
    assert numa_slices(load_host(RTX))[0] == []


def test_a_per_numa_replica_plans_like_a_hand_written_half_machine():
    """The oracle: one socket of the Xeon host written by hand (56 cores, 512 GiB, two of the GPUs)."""
    f = fleet("qwen3-235b-a22b", [XEON], per=2, context=32768)
    half = host_from_spec(
        {
            "gpus": [
                {"name": "NVIDIA GeForce RTX 4090 48GB", "memory_gib": 48, "compute_capability": "8.9", "count": 2}
            ],
            "cpu": {
                "model": "Intel Xeon Platinum 8480+",
                "vendor": "GenuineIntel",
                "sockets": 1,
                "cores_per_socket": 56,
                "threads_per_core": 2,
                "flags": AMX,
            },
            "memory_gib": 512,
        },
        "half",
    )
    _, plan_for = make("qwen3-235b-a22b")
    alone = plan_for(half, Goals(context=32768))
    assert len(f.replicas) == 2
    for r in f.replicas:
        for name in (
            "--kt-cpuinfer",
            "--kt-threadpool-count",
            "--kt-num-gpu-experts",
            "--max-total-tokens",
            "--tensor-parallel-size",
            "--mem-fraction-static",
        ):
            assert r.plan.flag(name) == alone.flag(name), name
    # 56 physical cores less the reserve min(8, max(2, 56 // 4)) = 8
    assert f.replicas[0].plan.flag("--kt-cpuinfer") == 48
    assert f.replicas[0].plan.gpus == (0, 1) and f.replicas[1].plan.gpus == (2, 3)
    assert f.replicas[1].plan.flag("--kt-numa-nodes") == ("1",)  # pools bound to the second node
    assert f.replicas[0].plan.flag("--kt-numa-nodes") is None


def test_auto_keeps_one_replica_when_a_node_cannot_hold_the_experts():
    f = fleet("kimi-k2.7-code", [XEON], context=65536)
    assert [c.per_machine for c in f.choices] == [1]
    assert "does not fit" in f.choices[0].why
    # cross-check: the node's own plan really is over (a hand-written one-socket half with 512 GiB)
    _, plan_for = make("kimi-k2.7-code")
    slices, _ = numa_slices(load_host(XEON))
    assert not plan_for(slices[0][1], Goals(context=65536)).fits


def test_auto_compares_at_equal_streams_and_says_so():
    f = fleet("glm-4.5-air", [XEON], context=32768, concurrency=2)
    why = f.choices[0].why
    assert "2 replicas of 2 stream(s)" in why and "with 4 streams" in why


def test_one_numa_node_means_one_replica_and_asking_for_more_is_refused():
    f = fleet("kimi-k2.7-code", [RTX, RTX], context=65536)
    assert len(f.replicas) == 2 and {r.machine.index for r in f.replicas} == {0, 1}
    assert "one NUMA node" in f.choices[0].why
    with pytest.raises(BadInput):
        fleet("kimi-k2.7-code", [RTX], per=2)


def test_ports_router_first_then_one_per_replica_in_the_flags():
    f = fleet("kimi-k2.7-code", [RTX, RTX, XEON], context=65536, port=31000)
    assert f.router_port == 31000
    assert [r.port for r in f.replicas] == [31001, 31002, 31003]
    assert [r.plan.flag("--port") for r in f.replicas] == [31001, 31002, 31003]


def test_copies_on_one_machine_never_share_gpus():
    f = fleet("kimi-k2.7-code", [RTX], context=65536)
    with pytest.raises(BadInput):
        with_replicas(f, 2)
    two = with_replicas(f, 2, gpus=False, port=32000)
    assert [r.port for r in two.replicas] == [32001, 32002]


def test_fleet_plan_round_trips_and_other_schemas_are_refused():
    f = fleet("kimi-k2.7-code", [RTX], context=65536)
    back = FleetPlan.load(json.loads(dump_json(f)), "f.json")
    assert back == f
    data = json.loads(dump_json(f))
    data["schema"] = 99
    with pytest.raises(BadInput, match="schema"):
        FleetPlan.load(data, "f.json")
    data = json.loads(dump_json(f))
    data["replicas"][0]["plan"]["schema"] = 1
    with pytest.raises(BadInput, match="schema 1"):
        FleetPlan.load(data, "f.json")


def test_explicit_split_over_the_machines_ram_does_not_fit():
    """Two nodes' replicas together over the machine's RAM: exit 3 (each alone fits its node)."""
    m, plan_for = make("qwen3-235b-a22b")
    host = load_host(XEON)
    tight = replace(host, memory=replace(host.memory, cgroup_limit=600 * 2**30))
    with pytest.raises(KtwizardError) as err:
        fleet_plan([("tight", tight)], m.spec, Goals(context=32768), plan_for, per_machine=2)
    assert err.value.exit_code == 3


# ---- Kubernetes ----


def _validate(doc: dict) -> None:
    import jsonschema
    import kubernetes_validate

    if doc["kind"] == "LeaderWorkerSet":
        with gzip.open(ORACLES / "lws-v1-openapi.json.gz", "rt") as fh:
            jsonschema.validate(doc, json.load(fh))
    else:
        kubernetes_validate.validate(doc, "1.30", strict=True)


@pytest.fixture(scope="module")
def k8s_docs():
    f = fleet("kimi-k2.7-code", [XEON, RTX, RTX], context=65536, weights="/models/Kimi-K2.7-Code")
    return f, k8s_documents(f, weights_claim="kimi-weights", nodes={RTX: ["gpu-a", "gpu-b"]})


def test_every_manifest_validates(k8s_docs):
    _, docs = k8s_docs
    kinds = sorted(d["kind"] for d in docs)
    assert kinds.count("Deployment") == 3 and "Service" in kinds and "Role" in kinds
    assert "LeaderWorkerSet" not in kinds  # the GPU-only launch is its own rendering (--k8s-multinode)
    assert kinds.count("Namespace") == 1 and kinds.count("NetworkPolicy") == 2
    (ns,) = [d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"]
    for d in docs:
        _validate(d)
        assert d["kind"] == "Namespace" or d["metadata"]["namespace"] == ns


@pytest.fixture(scope="module")
def multinode_docs():
    f = fleet("kimi-k2.7-code", [XEON] * 4, context=65536, weights="/models/Kimi-K2.7-Code")
    return f, k8s_documents(f, weights_claim="kimi-weights", multinode=True)


def test_the_gpu_only_launch_is_opt_in_sized_placed_and_validated(multinode_docs):
    f, docs = multinode_docs
    assert {d["kind"] for d in docs} == {"Namespace", "LeaderWorkerSet", "Service", "NetworkPolicy"}
    (lws,) = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    _validate(lws)
    (m,) = f.multinode
    assert lws["spec"]["replicas"] == 4 // m.nodes and lws["spec"]["leaderWorkerTemplate"]["size"] == m.nodes
    host = load_host(XEON)
    for role in ("leaderTemplate", "workerTemplate"):
        pod = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        assert "ktwizard.io/host-class" in json.dumps(pod["affinity"]["nodeAffinity"])
        assert pod["tolerations"] and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        (c,) = pod["containers"]
        asked = int(c["resources"]["requests"]["memory"].removesuffix("Gi")) * 2**30
        # plain SGLang holds no CPU experts: far below the KT replica's RAM, and within the host
        assert asked < 64 * 2**30 and asked <= host.memory.total
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
    with pytest.raises(BadInput, match="needs .* machines"):
        k8s_documents(fleet("kimi-k2.7-code", [XEON], context=65536), multinode=True)


def test_workers_are_pinned_sized_and_probed(k8s_docs):
    f, docs = k8s_docs
    workers = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["labels"]["ktwizard.io/role"] == "worker"]
    by_class = {d["metadata"]["name"]: d for d in workers}
    rtx = next(d for n, d in by_class.items() if "rtx" in n)
    assert rtx["spec"]["replicas"] == 2  # two named nodes
    pod = rtx["spec"]["template"]["spec"]
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0] == {
        "key": "kubernetes.io/hostname",
        "operator": "In",
        "values": ["gpu-a", "gpu-b"],
    }
    c = pod["containers"][0]
    rep = next(r for r in f.replicas if r.machine.ref == RTX)
    assert c["resources"]["limits"]["nvidia.com/gpu"] == rep.plan.tp
    assert c["readinessProbe"]["httpGet"]["path"] == "/health"
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] >= 3600
    assert "SYS_NICE" in c["securityContext"]["capabilities"]["add"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    assert any(v.get("persistentVolumeClaim", {}).get("claimName") == "kimi-weights" for v in pod["volumes"])
    args = c["args"]
    assert args[args.index("--host") + 1] == "0.0.0.0"
    xeon = next(d for n, d in by_class.items() if "xeon" in n)
    match = xeon["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert "ktwizard.io/host-class" in json.dumps(match)  # no node names given: the class label


def test_the_router_discovers_exactly_the_worker_pods(k8s_docs):
    f, docs = k8s_docs
    router = next(
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["labels"]["ktwizard.io/role"] == "router"
    )
    c = router["spec"]["template"]["spec"]["containers"][0]
    args = c["args"]
    assert "--service-discovery" in args
    selector = dict(s.split("=") for s in args[args.index("--selector") + 1 : args.index("--service-discovery-port")])
    for d in docs:
        if d["kind"] == "Deployment" and d["metadata"]["labels"]["ktwizard.io/role"] == "worker":
            labels = d["spec"]["template"]["metadata"]["labels"]
            assert selector.items() <= labels.items()
            port = d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
            assert int(args[args.index("--service-discovery-port") + 1]) == port
    service = next(d for d in docs if d["kind"] == "Service" and "router" in d["metadata"]["name"])
    metrics = next(p["containerPort"] for p in c["ports"] if p["name"] == "metrics")
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(metrics)
    role = next(d for d in docs if d["kind"] == "Role")
    assert role["rules"][0]["resources"] == ["pods"] and "watch" in role["rules"][0]["verbs"]


def test_router_flags_parse_with_the_real_router():
    pytest.importorskip("sglang_router")
    from sglang_router.launch_router import parse_router_args

    from ktwizard.fleet.router import discovery_args, router_args

    f = fleet("kimi-k2.7-code", [RTX], context=65536)
    a = parse_router_args(router_args(f, ["http://127.0.0.1:30001"], "127.0.0.1"))
    assert a.worker_urls == ["http://127.0.0.1:30001"] and a.port == f.router_port
    assert a.prometheus_port == f.metrics_port and a.health_check_interval_secs == 5
    b = parse_router_args(discovery_args(f, {"ktwizard.io/fleet": "x"}, 30000))
    assert b.service_discovery and b.service_discovery_port == 30000


def test_the_gpu_only_launch_keeps_no_kt_flag_and_spans_the_nodes(multinode_docs):
    _, docs = multinode_docs
    lws = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    for d in lws:
        tpl = d["spec"]["leaderWorkerTemplate"]
        args = tpl["leaderTemplate"]["spec"]["containers"][0]["args"]
        assert not any(a.startswith("--kt-") for a in args)
        tp = int(args[args.index("--tensor-parallel-size") + 1])
        gpus = tpl["workerTemplate"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        assert tp == tpl["size"] * gpus
        assert "$(LWS_LEADER_ADDRESS)" in args[args.index("--dist-init-addr") + 1]


# ---- compose ----


def test_compose_has_a_service_per_replica_and_the_router_in_front():
    f = with_replicas(fleet("kimi-k2.7-code", [RTX], context=65536, weights="/models/K"), 2, gpus=False)
    doc = yaml.safe_load(yaml.safe_dump(compose_fleet(f)))
    services = doc["services"]
    assert set(services) == {"r0", "r1", "router"}
    cmd = services["router"]["command"]
    urls = cmd[cmd.index("--worker-urls") + 1 : cmd.index("--policy")]
    for r in f.replicas:
        assert f"http://{r.name}:{r.port}" in urls
        s = services[r.name]
        assert s["ports"] == [f"127.0.0.1:{r.port}:{r.port}"]
        assert s["labels"]["io.ktwizard.fleet"] == f.name and s["labels"]["io.ktwizard.managed"] == "true"
        assert "/health" in " ".join(s["healthcheck"]["test"])
        assert services["router"]["depends_on"][r.name] == {"condition": "service_healthy"}
    assert services["router"]["ports"][0].startswith("127.0.0.1:")


def test_cli_renders_every_format():
    for fmt in ("table", "json", "yaml", "compose", "k8s"):
        out = run_cli("fleet", "plan", "--preset", "kimi-k2.7-code", "--host", RTX, "--context", "64k", "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip()
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    for d in docs:
        _validate(d)


def test_worker_memory_requests_fit_the_host_they_are_pinned_to(k8s_docs):
    """The request is the replica's host RAM as its plan itemises it once (the whole-host budget holds the NUMA nodes'
    items already), without the OS's own reserve: Kimi on the 768 GiB recipe host asks for less than 768 GiB."""
    import math

    fleet_plan_, docs = k8s_docs
    workers = [d for d in docs if d["kind"] == "Deployment" and "router" not in d["metadata"]["name"]]
    assert len(workers) == 2
    for d in workers:
        (c,) = d["spec"]["template"]["spec"]["containers"]
        asked = int(c["resources"]["requests"]["memory"].removesuffix("Gi")) * 2**30
        replica = next(r for r in fleet_plan_.replicas if d["metadata"]["name"].endswith(r.machine.ref))
        (whole,) = [b for b in replica.plan.host_budgets if b.node == -1]
        expect = sum(i.bytes for i in whole.items if i.name != "OS reserve")
        assert asked == max(1, math.ceil(expect / 2**30)) * 2**30
        total = load_host(replica.machine.ref).memory.total
        assert asked <= whole.capacity <= total, (d["metadata"]["name"], asked / 2**30, total / 2**30)


def test_compose_renderings_keep_every_dollar_literal():
    """Compose interpolates `$VAR` and `${VAR}` in every string of the file, configs' inline content included
    (compose-spec, interpolation): the Grafana dashboard's `$instance` and `${datasource}` must be written `$$`. Read
    back with Compose's rule ($$ is one literal $), the dashboard Grafana receives is the one ktwizard made."""
    import re

    from ktwizard.fleet.compose import compose_fleet_text
    from ktwizard.monitor.grafana import dashboard_text

    f = fleet("qwen3-30b-a3b", [XEON], 2, context=32768)
    text = compose_fleet_text(f, monitoring=True)
    doc = yaml.safe_load(text.split("\n", 1)[1])

    def strings(x):
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            for k, v in x.items():
                yield from strings(k)
                yield from strings(v)
        elif isinstance(x, list):
            for v in x:
                yield from strings(v)

    lone = re.compile(r"(?<!\$)\$(?!\$)")
    for s in strings(doc):
        assert not lone.search(s.replace("$$", "")), s[:120]  # nothing left for Compose to interpolate
    delivered = doc["configs"]["ktwizard-dashboard"]["content"].replace("$$", "$")
    assert delivered == dashboard_text() and "$" in delivered
    plan_compose = yaml.safe_load(
        run_cli("plan", "--preset", "qwen3-30b-a3b", "--host", XEON, "--format", "compose").stdout
    )
    for s in strings(plan_compose):
        assert not lone.search(s.replace("$$", ""))


def test_default_fleet_names_follow_composes_project_name_rule(tmp_path):
    """Compose project names are [a-z0-9][a-z0-9_-]*: the default for a model id with a dot or capitals obeys it."""
    import re

    f = fleet("kimi-k2.7-code", [RTX], 1, context=65536)
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", f.name), f.name
    assert run_cli("fleet", "plan", "--preset", "qwen3-30b-a3b", "--host", RTX, "--name", "My.Fleet").returncode == 2


def test_a_config_host_fills_the_repeatable_host_as_one_item(tmp_path):
    """config.yaml `host: NAME` is one machine for every fleet command, not one per letter."""
    cfg = tmp_path / "cfg" / "ktwizard"
    cfg.mkdir(parents=True)
    (cfg / "config.yaml").write_text(f"host: {RTX}\n")
    out = run_cli(
        "fleet", "plan", "--preset", "qwen3-30b-a3b", "--context", "32768", "--format", "json",
        env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    replicas = json.loads(out.stdout)["replicas"]
    assert {r["machine"]["ref"] for r in replicas} == {RTX}


def test_kubernetes_names_stay_unique_within_63_characters():
    """A long fleet name with two replicas per host: truncation alone would give both Deployments one name
    (kubectl apply keeps the last); a short hash keeps them apart, every name a DNS-1123 label."""
    import re

    m, plan_for = make("qwen3-30b-a3b")
    name = "a-very-long-fleet-name-that-goes-on-and-on-x"[:41]
    f = fleet_plan([(XEON, load_host(XEON))], m.spec, Goals(context=32768), plan_for, per_machine=2, name=name)
    docs = k8s_documents(f)
    names = [d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"]
    assert len(names) == len(set(names)) == 3  # two workers (one per NUMA node) and the router
    assert all(len(n) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n) for n in names), names


def test_an_api_key_reaches_the_pods_through_a_secret_never_the_manifest(tmp_path):
    """--api-key-file with --format k8s: the workers and the router mount the Secret and their launchers add
    --api-key=KEY inside the process; the key itself is in no manifest and no argv; the manifests still validate."""
    key = key_file(tmp_path / "key", "sk-ktw-k8s-Secret-42")
    out = run_cli(
        "fleet", "plan", "--preset", "qwen3-30b-a3b", "--host", RTX, "--context", "32768", "--api-key-file", str(key),
        "--format", "k8s",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "sk-ktw-k8s-Secret-42" not in out.stdout + out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    for d in docs:
        _validate(d)
    secret = re.search(r"kubectl create secret generic (\S+) -n (\S+) --from-file=api-key=", out.stderr)
    assert secret, out.stderr
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert len(deployments) == 2
    for d in deployments:
        spec = d["spec"]["template"]["spec"]
        (c,) = spec["containers"]
        (vol,) = [v for v in spec["volumes"] if "secret" in v]
        assert vol["secret"]["secretName"] == secret.group(1)
        (mount,) = [m for m in c["volumeMounts"] if m["name"] == vol["name"]]
        assert mount["readOnly"] and c["command"][:2] == ["python3", "-c"]
        assert c["command"][3] == mount["mountPath"] + "/api-key"
        assert "--api-key=' + key" in c["command"][2]  # the key joins sys.argv inside the process only


def test_fleet_table_columns_never_run_into_each_other(tmp_path):
    """A long host-spec name and eight GPUs: every row still splits into its nine columns (two spaces apart)."""
    long_name = tmp_path / "a-machine-with-a-rather-long-host-class-name-8gpu.yaml"
    base = yaml.safe_load((REPO / "assets" / "hosts" / f"{XEON}.yaml").read_text())
    base["gpus"] = [dict(base["gpus"][0], count=8)] if "count" in base["gpus"][0] else base["gpus"] * 2
    long_name.write_text(yaml.safe_dump(base))
    out = run_cli("fleet", "plan", "--preset", "qwen3-30b-a3b", "--host", str(long_name), "--context", "32768")
    assert out.returncode in (0, 3), out.stderr
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("replica "))
    rows = [line for line in lines[start:] if re.match(r"r\d+ ", line)]
    assert rows
    for row in [lines[start], *rows]:
        assert len(re.split(r"\s{2,}", row.strip())) == 9, row


def test_a_compose_router_calls_keyed_workers_with_the_key(tmp_path):
    """Workers started with a key answer 401 to a router without one: the compose router mounts the key file and
    its launcher adds --api-key (sglang_router/router_args.py:826-830) inside the process; the key is in no file."""
    key = key_file(tmp_path / "key", "sk-ktw-compose-Secret-7")
    out = run_cli(
        "fleet", "plan", "--preset", "qwen3-30b-a3b", "--host", RTX, "--context", "32768", "--api-key-file", str(key),
        "--format", "compose",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "sk-ktw-compose-Secret-7" not in out.stdout + out.stderr
    router = yaml.safe_load(out.stdout)["services"]["router"]
    (mount,) = router["volumes"]
    assert mount["source"] == str(key) and mount["read_only"]
    assert router["command"][:2] == ["python3", "-c"] and router["command"][3] == mount["target"]
    assert "--api-key=' + key" in router["command"][2]
