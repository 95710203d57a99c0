"""`probe --bandwidth` on this machine's real memory, checked against sysbench (a tool we did not write), and what the
forecast does with a measured node: never more than it read."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import required_tool, run_cli

from ktwizard.host.bandwidth import last_level_cache, measure_node
from ktwizard.host.profile import NodeBandwidth, NumaNode
from ktwizard.host.spec import load_host
from ktwizard.models.presets import get_preset
from ktwizard.planner.core import MEASURE_MEMORY, RATED_MEMORY
from ktwizard.planner.forecast.explain import rests_on
from ktwizard.planner.forecast.model import decode_step
from ktwizard.planner.forecast.setup import cpu_bandwidth, setup_for
from ktwizard.planner.forecast.terms import TERMS
from ktwizard.serial import dump_json

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bandwidth_check import sysbench as sysbench_read  # noqa: E402  the same sysbench run the benchmark records

EPYC = ROOT / "benchmarks" / "forecast" / "hosts" / "1x5090-2xepyc9355.yaml"


def sysbench() -> str:
    return required_tool("sysbench", "KTWIZARD_REQUIRE_SYSBENCH", "apt-get install sysbench")


def test_every_numa_node_is_measured_from_its_own_cpus_and_agrees_with_sysbench():
    binary = sysbench()
    nodes = sorted(Path("/sys/devices/system/node").glob("node[0-9]*"))
    allowed = os.sched_getaffinity(0)
    runs, reference = [], []
    # three rounds, the probe and sysbench side by side in each, so that both meet the same neighbours; the best of
    # each is compared, because a shared machine's neighbours only ever slow a run down
    for _ in range(3):
        out = run_cli("probe", "--bandwidth", "--json", "--no-engine", timeout=120)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout)["memory"]["measured"])
        if len(runs[-1]) == 1:  # one node: sysbench on as many threads reads the same memory
            reference.append(sysbench_read(binary, runs[-1][0]["threads"]))  # benchmarks/bandwidth_check.py's run
    best = max(runs, key=lambda r: sum(b["read_bps"] for b in r))
    assert [b["node"] for b in best] == [int(n.name[4:]) for n in nodes] or (not nodes and len(best) == 1)
    for b in best:
        assert b["error"] is None
        assert 0.9 < b["seconds"] < 5
    if len(best) == 1:
        assert best[0]["threads"] == min(64, len(allowed))
        read, ref = best[0]["read_bps"], max(reference)
        ratio = read / ref
        # memchr's vector loop reads faster than sysbench's (x1.22 on the H200 host, steady), and a small shared VM
        # swings by a third between runs (benchmarks/results/bandwidth-check-*; CI once saw 54.3 vs 34.2 GB/s). What
        # this must catch stays outside: reading the cache instead of DRAM (x2.7 and x4.8 with 256 KiB and 4 MiB
        # buffers on the 2-core dev VM) or counting bytes twice (x2 on top of the x1.22)
        assert 0.5 < ratio < 2, f"probe {read / 1e9:.1f} GB/s vs sysbench {ref / 1e9:.1f} GB/s"


def test_bandwidth_is_refused_for_a_recorded_host():
    recorded = next(p for p in (ROOT / "tests" / "fixtures" / "hosts").iterdir() if p.is_dir())
    out = run_cli("probe", "--bandwidth", "--root", str(recorded))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "--bandwidth" in out.stderr


def epyc(measured: tuple[NodeBandwidth, ...]):
    host = load_host(str(EPYC))
    host = replace(host, memory=replace(host.memory, measured=measured))
    spec = get_preset("minimax-m2").spec()
    return host, setup_for(host, spec, "FP8", 15, host.gpus.devices, 64, 2, 32768, 4096)


def test_a_slow_measured_node_caps_the_forecast_and_a_fast_one_does_not():
    rated = 12 * 5600e6 * 8 * TERMS.cpu_bw_eff  # one socket of the host spec's 12 x DDR5-5600 at the fitted share
    _, free = epyc(())
    # two subpools read as one socket would (forecast v4, setup.cpu_bandwidth): the second socket adds threads only
    assert cpu_bandwidth(free) == pytest.approx(min(rated, 64 * 20e9))
    # two nodes of 100 GB/s each on two sockets: 100 GB/s per socket, far below the rating
    _, slow = epyc((NodeBandwidth(0, 100e9, 32, 1.0), NodeBandwidth(1, 100e9, 32, 1.0)))
    assert cpu_bandwidth(slow) == pytest.approx(100e9)
    assert decode_step(slow, 0, 1).cpu_s > decode_step(free, 0, 1).cpu_s
    assert any(
        "100 GB/s per socket read measured (probe --bandwidth) (binds" in line
        for line in rests_on(slow, decode_step(slow, 0, 1))
    )
    _, fast = epyc((NodeBandwidth(0, 500e9, 32, 1.0), NodeBandwidth(1, 500e9, 32, 1.0)))
    assert cpu_bandwidth(fast) == cpu_bandwidth(free)
    # a node that failed to measure says nothing: the rating stands
    _, failed = epyc((NodeBandwidth(0, 100e9, 32, 1.0), NodeBandwidth(1, 0.0, 32, 0.0, "CPU 40: not allowed")))
    assert cpu_bandwidth(failed) == cpu_bandwidth(free)


def test_a_saved_profile_with_measured_nodes_plans_with_them(tmp_path):
    host, _ = epyc((NodeBandwidth(0, 90e9, 32, 1.0), NodeBandwidth(1, 90e9, 32, 1.0)))
    saved = tmp_path / "host.json"
    saved.write_text(dump_json(host))
    args = ("plan", "--preset", "minimax-m2", "--context", "8192", "--explain")
    out = run_cli(*args, "--host", str(saved))
    assert out.returncode == 0, out.stderr
    assert "90 GB/s per socket read measured (probe --bandwidth)" in " ".join(
        out.stdout.split()
    )  # the table wraps lines
    spec_plan = run_cli(*args, "--host", str(EPYC))
    assert "read measured" not in spec_plan.stdout
    # a rated figure says so, and how to measure it; a measured one does not
    assert f"{RATED_MEMORY} — {MEASURE_MEMORY}" in " ".join(spec_plan.stdout.split())
    assert RATED_MEMORY not in " ".join(out.stdout.split())


def test_the_wizard_says_the_memory_is_rated_as_the_cli_does(tmp_path):
    """The Plan step's notes pane draws the same plan's notices (app/planning.make_plan, tui/widgets.notes_text)."""
    from ktwizard.app.planning import make_plan
    from ktwizard.inputs import resolve_model
    from ktwizard.planner.types import Goals
    from ktwizard.tui.widgets import notes_text

    model = resolve_model("minimax-m2", None)
    rated = notes_text(make_plan(load_host(str(EPYC)), model, Goals(context=8192))).plain
    assert RATED_MEMORY in rated and "ktwizard probe --bandwidth" in rated
    measured = spec_with(tmp_path, {"read_gbps": 150, "source": "STREAM"})
    assert RATED_MEMORY not in notes_text(make_plan(load_host(str(measured)), model, Goals(context=8192))).plain


def spec_with(tmp_path, measured: object) -> Path:
    data = yaml.safe_load(EPYC.read_text())
    data["memory"]["measured"] = measured
    path = tmp_path / "host.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_host_spec_carries_a_published_read_bandwidth_and_the_plan_names_its_source(tmp_path):
    """A machine planned from elsewhere: its STREAM or MLC read, all nodes together, caps the forecast the way
    probe --bandwidth does, and --explain says whose measurement it is."""
    source = "STREAM on the box, 2026-01-02"
    host = load_host(str(spec_with(tmp_path, {"read_gbps": 150, "threads": 64, "source": source})))
    assert [b.node for b in host.memory.measured] == [n.id for n in host.numa_nodes]
    assert sum(b.read_bps for b in host.memory.measured) == pytest.approx(150e9)
    spec = get_preset("minimax-m2").spec()
    s = setup_for(host, spec, "FP8", 15, host.gpus.devices, 64, 2, 32768, 4096)
    assert cpu_bandwidth(s) == pytest.approx(150e9 / host.cpu.sockets)  # per socket: 75 GB/s on two sockets
    out = run_cli(
        "plan", "--preset", "minimax-m2", "--context", "8192", "--explain", "--host", str(tmp_path / "host.yaml")
    )
    assert out.returncode == 0, out.stderr
    assert f"75 GB/s per socket read measured ({source}) (binds" in " ".join(out.stdout.split())


def test_a_measured_source_reaches_the_terminal_without_its_escapes(tmp_path):
    host = load_host(str(spec_with(tmp_path, {"read_gbps": 150, "source": "STREAM\x1b[2J\x07 run"})))
    assert all("\x1b" not in b.source and "\x07" not in b.source and "STREAM" in b.source for b in host.memory.measured)


@pytest.mark.parametrize(
    "measured, says",
    [
        (150, "memory.measured must be a mapping"),
        ({"read_gbps": 150}, "memory.measured.source"),
        ({"read_gbps": 150, "source": " "}, "memory.measured.source"),
        ({"read_gbps": 150, "source": "x" * 301}, "memory.measured.source"),
        ({"read_gbps": float("nan"), "source": "s"}, "'read_gbps' must be a number"),
        ({"read_gbps": 1e9, "source": "s"}, "'read_gbps' must be a number"),
        ({"read_gbps": "fast", "source": "s"}, "'read_gbps' must be a number"),
        ({"read_gbps": 150, "threads": -1, "source": "s"}, "'threads' must be a number"),
    ],
)
def test_a_bad_measured_read_is_one_clear_line(tmp_path, measured, says):
    out = run_cli("plan", "--preset", "minimax-m2", "--host", str(spec_with(tmp_path, measured)))
    assert out.returncode == 2 and says in out.stderr, out.stderr
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr


def test_the_last_level_caches_are_counted_once_per_group_of_cpus_that_share_them(tmp_path):
    def cache(cpu: int, index: int, kind: str, size: str, shared: str) -> None:
        d = tmp_path / "sys/devices/system/cpu" / f"cpu{cpu}" / "cache" / f"index{index}"
        d.mkdir(parents=True)
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
        (d / "shared_cpu_list").write_text(shared + "\n")

    for cpu in range(4):  # two L3 slices of 32 MiB, each shared by two CPUs
        cache(cpu, 0, "Data", "48K", str(cpu))
        cache(cpu, 1, "Instruction", "32K", str(cpu))
        cache(cpu, 2, "Unified", "2048K", str(cpu))
        cache(cpu, 3, "Unified", "32768K", "0-1" if cpu < 2 else "2-3")
    assert last_level_cache([0, 1, 2, 3], str(tmp_path)) == 2 * 32 * 2**20
    assert last_level_cache([0, 1], str(tmp_path)) == 32 * 2**20
    assert last_level_cache([7], str(tmp_path)) == 512 * 2**20  # sysfs says nothing: the largest parts' L3


def test_a_node_without_room_to_read_past_its_cache_says_so_instead_of_measuring_the_cache():
    cpus = sorted(os.sched_getaffinity(0))[:2]
    tight = NumaNode(id=0, cpus=tuple(cpus), memory_total=2**30, memory_free=64 * 2**20)
    result = measure_node(tight, 0.2)
    assert result.read_bps == 0 and "too little free memory" in (result.error or "")
    roomy = NumaNode(id=0, cpus=tuple(cpus), memory_total=None, memory_free=None)
    assert measure_node(roomy, 0.2).read_bps > 0


def test_a_cpu_the_thread_cannot_run_on_is_one_error_line_and_nothing_hangs():
    import time

    cpus = (sorted(os.sched_getaffinity(0))[0], 4095)  # the second one does not exist here
    node = NumaNode(id=3, cpus=cpus, memory_total=None, memory_free=None)
    t0 = time.monotonic()
    result = measure_node(node, 0.5)  # allowed=None: both are tried
    assert time.monotonic() - t0 < 30
    assert result.node == 3 and result.read_bps == 0 and result.error.startswith("CPU 4095:")
