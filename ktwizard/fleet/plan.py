"""A fleet plan: KT replicas behind sglang-router, each with its own memory-exact plan for the machine it runs on.

KTransformers serves from one machine; more machines (or the sockets of a large two-socket host) mean more
replicas, balanced by the router. Per machine, `auto` chooses one replica for the whole machine or one per NUMA
node from the plans' own numbers (does each node's plan fit; what decode the forecasts give), and says why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from ktwizard import __version__
from ktwizard.errors import BadInput
from ktwizard.fleet.constants import POLICIES, ROUTER_METRICS_PORT
from ktwizard.host.profile import HostProfile
from ktwizard.models.spec import ModelSpec
from ktwizard.notice import Notice
from ktwizard.planner.types import Goals, ModelRef, Plan

FLEET_SCHEMA = 1

TP_DOUBLING = 1.2
# A per-NUMA split must beat one replica for the whole machine by this much in summed decode: the forecast of a
# machine-wide replica already assumes its pools read every node's memory at full speed, so a tie keeps one copy
# of the CPU experts instead of one per node.
SPLIT_GAIN = 1.10
# Compose's project-name rule ([a-z0-9][a-z0-9_-]*) in both cases: a fleet's name is its compose project too
FLEET_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,40}")


@dataclass(frozen=True)
class Machine:
    """One machine of the fleet: the --host it was planned from, and which of that class it is."""

    ref: str  # the --host given: a bundled name, a file or a spec (one host class)
    index: int  # the n-th machine of this class


@dataclass(frozen=True)
class Replica:
    name: str  # r0, r1, ...
    machine: Machine
    node: int | None  # the NUMA node it is bound to; None: the whole machine
    port: int
    plan: Plan


@dataclass(frozen=True)
class Choice:
    """How many replicas a host class runs per machine, and why."""

    ref: str
    per_machine: int
    why: str


@dataclass(frozen=True)
class MultiNode:
    """SGLang's own multi-node launch with every expert on GPUs: nodes of one class, one server across them."""

    ref: str
    nodes: int
    gpus_per_node: int
    plan: Plan  # planned as one server over nodes x gpus_per_node GPUs, all routed experts on GPU
    decode_tok_s: float  # forecast per stream, inter-node all-reduce not modelled
    kt_decode_tok_s: float  # one KT replica of the same class, per stream
    verdict: str


@dataclass(frozen=True)
class FleetPlan:
    name: str
    model: ModelRef
    policy: str
    router_port: int
    metrics_port: int
    bind: str
    replicas: tuple[Replica, ...]
    choices: tuple[Choice, ...]
    multinode: tuple[MultiNode, ...] = ()
    notices: tuple[Notice, ...] = ()
    schema: int = FLEET_SCHEMA
    made_by: str = __version__

    @property
    def fits(self) -> bool:
        return all(r.plan.fits for r in self.replicas)

    @property
    def overflows(self) -> tuple[str, ...]:
        return tuple(f"{r.name} ({r.plan.host}): {o}" for r in self.replicas for o in r.plan.overflows)

    @property
    def machines(self) -> tuple[Machine, ...]:
        return tuple(dict.fromkeys(r.machine for r in self.replicas))

    @staticmethod
    def load(data: object, where: str) -> FleetPlan:
        from ktwizard.serial import from_data

        schema = data.get("schema") if isinstance(data, dict) else None
        if schema != FLEET_SCHEMA or not isinstance(data, dict) or "replicas" not in data:
            made = data.get("made_by", "an earlier version") if isinstance(data, dict) else "?"
            raise BadInput(
                f"{where}: not a fleet plan of schema {FLEET_SCHEMA} (found schema {schema}, ktwizard {made}); "
                f"this is ktwizard {__version__}: run ktwizard fleet plan --format json again"
            )
        for r in data.get("replicas") or ():  # each replica's plan carries its own schema check
            if isinstance(r, dict):
                Plan.load(r.get("plan"), f"{where}: replica {r.get('name')}")
        return from_data(FleetPlan, data, where)


def check_ports(router: int, metrics: int, replicas: int) -> None:
    """The router on `router`, replicas on the ports after it, the router's metrics apart from all of them."""
    last = router + replicas
    if last > 65535:
        raise BadInput(
            f"--port {router}: the router and {replicas} replica(s) take ports {router}-{last}, past 65535; "
            f"use --port {65535 - replicas} or lower"
        )
    if router <= metrics <= last:
        raise BadInput(
            f"--router-metrics-port {metrics}: the router and its replicas use {router}-{last}; choose a port "
            "outside that range"
        )


def check_fleet_name(name: str) -> str:
    if not FLEET_NAME.fullmatch(name):
        raise BadInput(
            f"--name {name!r}: use 1-41 lower-case letters, digits, '_' or '-', starting with a letter or digit "
            "(Compose's project-name rule)"
        )
    return name


def numa_slices(host: HostProfile) -> tuple[list[tuple[int, HostProfile]], str]:
    """The machine cut into one host per NUMA node (its CPUs, its RAM share, the GPUs attached to it).

    Empty with the reason when it cannot be cut: one node, a node without CPUs or without a GPU.
    """
    nodes = [n for n in host.numa_nodes if set(n.cpus) & set(host.cpu.usable_cpus)]
    gpus = list(host.visible_gpus)
    if len(nodes) < 2:
        return [], "one NUMA node"
    if all(g.numa_node is not None for g in gpus):
        owner = {g.index: g.numa_node for g in gpus}
        how = "GPUs by their NUMA affinity"
    elif len(gpus) % len(nodes) == 0:  # affinity unknown (a hand-written spec): split in index order
        per = len(gpus) // len(nodes)
        owner = {g.index: nodes[i // per].id for i, g in enumerate(gpus)}
        how = f"{per} GPU(s) per node in index order (NUMA affinity unknown)"
    else:
        return [], f"{len(gpus)} GPUs do not split evenly over {len(nodes)} NUMA nodes"
    out = []
    for n in nodes:
        mine = {i for i, node in owner.items() if node == n.id}
        if not mine:
            return [], f"NUMA node {n.id} has no GPU attached"
        cpus = set(n.cpus)
        sub = replace(
            host,
            cpu=replace(
                host.cpu,
                usable_cpus=tuple(c for c in host.cpu.usable_cpus if c in cpus),
                # memory bandwidth is per socket: a node of a multi-socket machine reads at one socket's speed
                sockets=max(1, host.cpu.sockets // len(nodes)),
            ),
            gpus=replace(
                host.gpus,
                devices=tuple(replace(g, visible=g.visible and g.index in mine) for g in host.gpus.devices),
            ),
            hostname=f"{host.hostname or host.source} NUMA {n.id}",
        )
        out.append((n.id, sub))
    return out, how


PlanFn = Callable[[HostProfile, Goals], Plan]  # the single-machine planner, as `ktwizard plan` calls it


def _decode(p: Plan) -> float:
    """One stream's decode at the plan's context: what a user of one replica sees."""
    return p.forecast.decode_at(p.forecast.context_tokens, 1).tok_s_per_stream if p.forecast else 0.0


def _throughput(host: HostProfile, spec: ModelSpec, p: Plan, streams: int) -> float:
    """Summed decode tok/s of `streams` concurrent requests on this replica at the plan's context (the forecast's
    step model, planner/forecast/model.py: CPU bandwidth and compute saturate as streams grow)."""
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.model import decode_point

    ctx = p.forecast.context_tokens if p.forecast else 0
    factor = p.forecast.factor if p.forecast else 1.0
    return decode_point(setup_from_plan(host, spec, p), ctx, streams, factor).tok_s_total


def choose_replicas(
    host: HostProfile, spec: ModelSpec, goals: Goals, plan_for: PlanFn, per_machine: str | int
) -> tuple[list[tuple[int | None, Plan]], str]:
    """One replica for the machine or one per NUMA node: by the plans' numbers when `per_machine` is auto.

    Both are compared at the same number of streams: N per-NUMA replicas at the goals' concurrency each against
    one machine-wide replica serving N times that.
    """
    whole = plan_for(host, goals)
    slices, how = numa_slices(host)
    label = host.hostname or host.source
    if per_machine == 1:
        return [(None, whole)], "one replica per machine, as asked"
    if not slices:
        if per_machine != "auto":
            raise BadInput(f"--replicas-per-host {per_machine}: {label} has {how}")
        return [(None, whole)], f"one replica per machine: {how}"
    if per_machine not in ("auto", len(slices)):
        raise BadInput(
            f"--replicas-per-host {per_machine}: {label} splits into {len(slices)} NUMA replicas (or 1 for the "
            "whole machine)"
        )
    split: list[tuple[int | None, Plan]] = [(node, plan_for(sub, goals)) for node, sub in slices]
    crowded = _shared_ram(split)
    if per_machine != "auto":
        if crowded:
            from ktwizard.errors import EXIT_NO_FIT, KtwizardError

            raise KtwizardError(f"{label}: {crowded}", EXIT_NO_FIT)
        return split, f"one replica per NUMA node, as asked ({how})"
    misfit = next((p for _, p in split if not p.fits), None)
    if misfit is not None:
        reason = misfit.overflows[0] if misfit.overflows else "it does not fit"
        return [(None, whole)], f"one replica per machine: a per-NUMA replica does not fit ({misfit.host}: {reason})"
    if crowded:
        return [(None, whole)], f"one replica per machine: {crowded}"
    if not whole.fits:
        return split, f"one replica per NUMA node: the whole-machine plan does not fit, each node's plan does ({how})"
    c, n = goals.concurrency, len(split)
    apart = sum(_throughput(sub, spec, p, c) for (_, sub), (_, p) in zip(slices, split, strict=True))
    together = _throughput(host, spec, whole, n * c)
    compared = (
        f"{n} replicas of {c} stream(s) forecast {apart:.1f} tok/s of decode together, one machine-wide replica "
        f"with {n * c} streams {together:.1f}"
    )
    if apart >= SPLIT_GAIN * together:
        return split, f"one replica per NUMA node: {compared} ({how}); each node holds its own copy of the CPU experts"
    return [(None, whole)], (
        f"one replica per machine: {compared}, and per-NUMA replicas would hold the CPU experts {n} times "
        f"(a split needs {SPLIT_GAIN:.2f}x)"
    )


def _shared_ram(split: list[tuple[int | None, Plan]]) -> str | None:
    """Each replica's budget checks its own node; together they share the machine's RAM (and its cgroup limit)."""
    from ktwizard.units import human

    totals = [next((b for b in p.host_budgets if b.node < 0), None) for _, p in split]
    if any(b is None for b in totals):
        return None
    used = sum(b.used for b in totals if b is not None)
    capacity = min(b.capacity for b in totals if b is not None)
    if used <= capacity:
        return None
    return f"the per-NUMA replicas together need {human(used)} of host RAM and the machine has {human(capacity)}"


def fleet_plan(
    hosts: list[tuple[str, HostProfile]],
    spec: ModelSpec,
    goals: Goals,
    plan_for: PlanFn,
    per_machine: str | int = "auto",
    policy: str = "cache_aware",
    name: str | None = None,
    metrics_port: int = ROUTER_METRICS_PORT,
) -> FleetPlan:
    """`plan_for(host, goals)` is the single-machine planner (the same one `ktwizard plan` uses)."""
    if not hosts:
        raise BadInput("give at least one --host")
    if len(hosts) > 64:
        raise BadInput(f"{len(hosts)} hosts: a fleet plan takes at most 64")
    if policy not in POLICIES:
        raise BadInput(f"--router-policy {policy}: use one of {', '.join(POLICIES)}")
    base = goals.port
    classes: dict[str, tuple[list[tuple[int | None, Plan]], str]] = {}
    seen: dict[str, int] = {}
    replicas: list[Replica] = []
    for ref, host in hosts:
        if ref not in classes:  # one plan per host class: the same hardware gives the same plan
            classes[ref] = choose_replicas(host, spec, replace(goals, gpus=None), plan_for, per_machine)
        machine = Machine(ref, seen.get(ref, 0))
        seen[ref] = machine.index + 1
        for node, p in classes[ref][0]:
            port = base + 1 + len(replicas)
            replicas.append(Replica(f"r{len(replicas)}", machine, node, port, _at_port(p, port, goals.bind)))
    check_ports(base, metrics_port, len(replicas))
    model = replicas[0].plan.model
    fleet_name = check_fleet_name(
        name or "ktwizard-fleet-" + re.sub(r"[^a-z0-9_-]+", "-", model.id.lower())[:24].strip("-")
    )
    multinode = tuple(
        m for ref in classes if (m := gpu_only(dict(hosts)[ref], ref, seen[ref], spec, goals, plan_for)) is not None
    )
    return FleetPlan(
        name=fleet_name,
        model=model,
        policy=policy,
        router_port=base,
        metrics_port=metrics_port,
        bind=goals.bind,
        replicas=tuple(replicas),
        choices=tuple(Choice(ref, len(c[0]), c[1]) for ref, c in classes.items()),
        multinode=multinode,
    )


def _at_port(p: Plan, port: int, bind: str) -> Plan:
    """The replica's plan listening on its own port (the router's is the fleet's)."""
    flags = tuple(replace(f, value=port) if f.name == "--port" else f for f in p.flags)
    return replace(p, flags=flags, goals=replace(p.goals, port=port, bind=bind))


def gpu_only(
    host: HostProfile, ref: str, machines: int, spec: ModelSpec, goals: Goals, make: PlanFn
) -> MultiNode | None:
    """The fewest nodes of this class whose GPUs hold the whole model and its KV (SGLang's multi-node TP)."""
    from ktwizard.planner.forecast.from_plan import setup_from_plan
    from ktwizard.planner.forecast.model import decode_point

    gpus = list(host.visible_gpus)
    if not gpus:
        return None
    kt = make(host, replace(goals, gpus=None))
    for nodes in range(2, 17):
        devices = tuple(replace(gpus[i % len(gpus)], index=i, visible=True) for i in range(nodes * len(gpus)))
        virtual = replace(host, gpus=replace(host.gpus, devices=devices))
        try:
            p = make(
                virtual,
                replace(goals, gpus=None, gpu_experts=spec.routed_experts, layerwise_prefill=False),
            )
        except BadInput:  # tensor parallelism over this many GPUs does not divide the heads
            continue
        if not all(b.fits for b in p.gpu_budgets):
            continue
        if p.tp != len(devices):
            # the plan left GPUs idle (a TP the checkpoint does not load, e.g. block-FP8 shards): launch_server asserts
            # tp_size is divisible by --nnodes (sglang-kt 0.7.2 server_args.py:6133-6135); fewer GPUs are no multi-node
            # plan
            continue
        one_node = decode_point(setup_from_plan(virtual, spec, replace(p, gpus=p.gpus[: len(gpus)])), 0, 1)
        # Never more optimistic than measured tensor-parallel scaling: the best published doubling of TP gained
        # x1.20 for decode (MiniMax-M2.1 tutorial, 1 -> 2 GPUs); a node's GPUs are forecast as if they held it all.
        per_stream = one_node.tok_s_per_stream * TP_DOUBLING ** math.log2(nodes)
        kt_tok = _decode(kt)
        enough = machines >= nodes
        verdict = (
            f"the whole model fits on the GPUs of {nodes} {ref} nodes ({nodes * len(gpus)} GPUs, tensor parallel): "
            f"{per_stream:.1f} tok/s per stream forecast (one node's GPUs x{TP_DOUBLING} per doubling of nodes, the "
            "best published TP scaling; inter-node all-reduce latency and RDMA not modelled) against "
            f"{kt_tok:.1f} for one KT replica. It beats KT replicas when one stream's speed matters and the nodes "
            f"have RDMA (200 Gb/s or more); {nodes} KT replicas serve {nodes}x the streams on the same machines"
            + ("" if enough else f". You gave {machines} {ref} machine(s): it needs {nodes}")
        )
        return MultiNode(ref, nodes, len(gpus), p, per_stream, kt_tok, verdict)
    return None


def with_replicas(fleet: FleetPlan, n: int, gpus: bool = True, port: int | None = None) -> FleetPlan:
    """n replicas on the fleet's one machine, copies of its replica plans in turn; `port`: the router's port.

    Copies share their plan's GPUs, so with GPUs requested n may not exceed the planned replicas.
    """
    if gpus and n > len(fleet.replicas):
        raise BadInput(
            f"--replicas {n}: this machine's plan has {len(fleet.replicas)} replica(s) and copies would share "
            "their GPUs; --replicas above that only with --gpus none (a stand-in), or plan more machines"
        )
    base = port or fleet.router_port
    check_ports(base, fleet.metrics_port, n)
    reps = tuple(
        replace(r, name=f"r{i}", port=base + 1 + i, plan=_at_port(r.plan, base + 1 + i, r.plan.goals.bind))
        for i, r in ((i, fleet.replicas[i % len(fleet.replicas)]) for i in range(n))
    )
    return replace(fleet, replicas=reps, router_port=base)
