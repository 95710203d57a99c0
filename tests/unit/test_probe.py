"""The probe against recorded hosts, read back with the test's own parsing of the same files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import CAPTURE, HOSTS, TESTS, run_cli

from ktwizard.host.isa import kt_variant, normalise_flags
from ktwizard.host.probe import probe
from ktwizard.host.profile import HostProfile
from ktwizard.serial import dump_json, dump_yaml, from_data, to_data


def own_cpuinfo(root: Path) -> dict:
    """Independent reading of /proc/cpuinfo: processors, sockets, physical cores, first flags line."""
    text = (root / "proc/cpuinfo").read_text()
    procs = re.findall(r"^processor\s*:\s*(\d+)", text, re.M)
    pkgs = re.findall(r"^physical id\s*:\s*(\d+)", text, re.M)
    cores = re.findall(r"^core id\s*:\s*(\d+)", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M).group(1).split()
    return {
        "cpus": len(procs),
        "sockets": len(set(pkgs)) or 1,
        "cores": len(set(zip(pkgs, cores, strict=True))) or len(procs),
        "flags": set(flags),
    }


def own_list(text: str) -> list[int]:
    out = []
    for part in text.strip().split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def own_meminfo(root: Path, key: str) -> int:
    return int(re.search(rf"^{key}:\s+(\d+) kB", (root / "proc/meminfo").read_text(), re.M).group(1)) * 1024


def test_cpu_topology_and_flags(host_dir: Path):
    host = probe(root=str(host_dir), with_engine=False)
    own = own_cpuinfo(host_dir)
    assert len(host.cpu.online_cpus) == own["cpus"]
    assert host.cpu.sockets == own["sockets"]
    assert host.cpu.physical_cores == own["cores"]
    for flag in ("avx2", "avx512f", "avx512bw", "avx512vl", "amx_tile", "amx_int8", "amx_bf16"):
        assert (flag in host.cpu.flags) == (flag in own["flags"]), flag
    # the two spellings of VNNI / BF16 / VBMI in /proc/cpuinfo map to one name each
    assert ("avx512_vnni" in host.cpu.flags) == ("avx512_vnni" in own["flags"])
    assert ("avx512vbmi" in host.cpu.flags) == ("avx512vbmi" in own["flags"])
    assert host.memory.total == own_meminfo(host_dir, "MemTotal")
    assert host.memory.available == own_meminfo(host_dir, "MemAvailable")
    assert host.memory.swap_total == own_meminfo(host_dir, "SwapTotal")


def test_numa_nodes(host_dir: Path):
    host = probe(root=str(host_dir), with_engine=False)
    node_dirs = sorted((host_dir / "sys/devices/system/node").glob("node*"))
    assert [n.id for n in host.numa_nodes] == [int(p.name[4:]) for p in node_dirs]
    for node, path in zip(host.numa_nodes, node_dirs, strict=True):
        assert list(node.cpus) == own_list((path / "cpulist").read_text())
        total_kb = int(re.search(r"MemTotal:\s+(\d+)", (path / "meminfo").read_text()).group(1))
        assert node.memory_total == total_kb * 1024
        assert list(node.distances) == [int(x) for x in (path / "distance").read_text().split()]


def test_round_trip_json_and_yaml(host_dir: Path):
    host = probe(root=str(host_dir), with_engine=False)
    assert from_data(HostProfile, json.loads(dump_json(host))) == host
    assert from_data(HostProfile, yaml.safe_load(dump_yaml(host))) == host
    assert to_data(from_data(HostProfile, to_data(host))) == to_data(host)


def test_h200_capture_matches_nvidia_smi():
    host = probe(root=str(HOSTS / "h200-1gpu-xeon-amx"), with_engine=False)
    probes = json.loads((CAPTURE / "python-probes.json").read_text())["nvml"]["devices"][0]
    smi = (CAPTURE / "nvidia-smi.txt").read_text()
    (gpu,) = host.gpus.devices
    assert gpu.name == "NVIDIA H200"
    # nvidia-smi's CSV line: "143771 MiB" total, "0 MiB" used (it shows v2-style used, reserve apart)
    total_mib = int(re.search(r"NVIDIA H200, [^,]+, (\d+) MiB", smi).group(1))
    assert gpu.memory_total // 2**20 == total_mib
    assert gpu.memory_used == probes["mem_v2"]["used"] == 0
    assert gpu.memory_reserved == probes["mem_v1"]["used"]  # v1's used is exactly the driver reserve
    assert gpu.compute_capability == "9.0"
    assert gpu.pcie_gen == 5 and gpu.pcie_width == 16
    assert gpu.power_limit_w == 700.0
    assert host.gpus.driver_version == "580.159.04" and host.gpus.cuda_driver_version == "13.0"
    assert gpu.numa_node == 0 and "assumed" in gpu.numa_reason  # NVML said NotSupported; one node
    assert kt_variant(host.cpu.flags) == "amx"


def test_h200_vm_numa_memory_is_flagged_not_trusted():
    from ktwizard.host.checks import host_notices, numa_memory_trustworthy

    host = probe(root=str(HOSTS / "h200-1gpu-xeon-amx"), with_engine=False)
    assert host.numa_nodes[0].memory_total < host.memory.total / 10  # the VM's sysfs lies
    assert not numa_memory_trustworthy(host)
    assert any("does not add up" in n.text for n in host_notices(host))


def test_two_socket_xeon_smt():
    host = probe(root=str(HOSTS / "xeon-2s-amx-smt"), with_engine=False)
    assert (host.cpu.sockets, host.cpu.cores_per_socket, host.cpu.threads_per_core) == (2, 56, 2)
    assert host.cpu.usable_physical_cores == 112
    assert [n.gpus for n in host.numa_nodes] == [(0, 1), (2, 3)]
    assert host.memory.hugepages_1g_total == 16
    assert host.memory.thp_mode == "always"
    assert host.memory.memlock_limit is None and host.memory.memlock_known
    texts = " ".join(n.text for n in __import__("ktwizard.host.checks", fromlist=["x"]).host_notices(host))
    assert "Swap is on" in texts and "SMT is on" in texts


def test_zen4_without_amx_and_v1_memory():
    host = probe(root=str(HOSTS / "epyc-zen4-nps4"), with_engine=False)
    assert kt_variant(host.cpu.flags) == "avx512_bf16"
    assert not host.cpu.has("amx_tile")
    assert len(host.numa_nodes) == 4 and host.cpu.sockets == 1
    g0, g1 = host.gpus.devices
    assert g0.memory_reserved is None  # old driver: v1 only, used includes the reserve
    assert (g0.numa_node, g1.numa_node) == (0, 2)  # from sysfs, NVML could not tell


def test_avx2_desktop():
    host = probe(root=str(HOSTS / "desktop-avx2"), with_engine=False)
    assert kt_variant(host.cpu.flags) == "avx2"
    assert "avx_vnni" in host.cpu.flags and "avx512f" not in host.cpu.flags
    assert host.cpu.physical_cores == 24  # 8 P-cores (SMT) + 16 E-cores
    (gpu,) = host.gpus.devices
    assert gpu.processes[0].pid == 1873
    assert host.memory.thp_mode == "never"


def test_container_quota_and_limits():
    host = probe(root=str(HOSTS / "container-quota"), with_engine=False)
    assert len(host.cpu.online_cpus) == 128
    assert host.cpu.usable_cpus == tuple(range(16))
    assert host.cpu.cpu_quota == 8.0
    assert host.cpu.usable_physical_cores == 8
    assert host.memory.cgroup_limit == 64 * 2**30
    assert host.memory.usable == 64 * 2**30
    assert not host.gpus.available and "no NVIDIA GPU recorded" in host.gpus.reason


def test_cuda_visible_devices():
    root = str(HOSTS / "xeon-2s-amx-smt")
    host = probe(root=root, env={"CUDA_VISIBLE_DEVICES": "1,3"}, with_engine=False)
    assert [g.index for g in host.visible_gpus] == [1, 3]
    assert host.gpus.cuda_visible_devices == "1,3"
    uuid = host.gpus.devices[2].uuid
    host = probe(root=root, env={"CUDA_VISIBLE_DEVICES": uuid[:12]}, with_engine=False)
    assert [g.index for g in host.visible_gpus] == [2]
    host = probe(root=root, env={"CUDA_VISIBLE_DEVICES": ""}, with_engine=False)
    assert not host.gpus.available and "hides every GPU" in host.gpus.reason


def test_container_without_sys_degrades(tmp_path: Path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text((HOSTS / "desktop-avx2/proc/cpuinfo").read_text())
    (tmp_path / "proc/meminfo").write_text((HOSTS / "desktop-avx2/proc/meminfo").read_text())
    host = probe(root=str(tmp_path), with_engine=False)
    assert len(host.numa_nodes) == 1 and host.numa_nodes[0].memory_total is None
    assert host.memory.thp_mode is None and not host.memory.memlock_known
    (tmp_path / "nvml.json").write_text("{not json")
    host = probe(root=str(tmp_path), with_engine=False)
    assert "not valid JSON" in host.gpus.reason


def test_flag_spellings():
    assert normalise_flags("avx512vnni avx512bf16 avx512_vbmi AVX512FP16 amx-tile avxvnni") == (
        "avx512_vnni",
        "avx512_bf16",
        "avx512vbmi",
        "avx512_fp16",
        "amx_tile",
        "avx_vnni",
    )


def test_this_machine_agrees_with_proc():
    host = probe()
    own = own_cpuinfo(Path("/"))
    assert len(host.cpu.online_cpus) == own["cpus"]
    assert set(host.cpu.flags) == set(normalise_flags(list(own["flags"])))
    assert host.memory.total == own_meminfo(Path("/"), "MemTotal")
    if not Path("/dev/nvidiactl").exists():
        assert not host.gpus.available and host.gpus.reason


def test_engine_reason_when_socket_missing(monkeypatch):
    from ktwizard.host.engine import probe_engine
    from ktwizard.host.root import Root

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    engine = probe_engine(Root("/"))
    assert not engine.reachable and "no Docker socket" in engine.reason


@pytest.mark.docker
def test_engine_live_when_dockerd_runs():
    from ktwizard.host.engine import probe_engine
    from ktwizard.host.root import Root

    if not Path("/var/run/docker.sock").exists():
        pytest.skip("no Docker engine on this machine")
    engine = probe_engine(Root("/"))
    assert engine.reachable and engine.server_version and "runc" in engine.runtimes


def test_cli_probe_json_save_and_no_textual(tmp_path: Path):
    out = run_cli("probe", "--json", "--root", str(HOSTS / "xeon-2s-amx-smt"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cpu"]["sockets"] == 2
    target = tmp_path / "host.yaml"
    out = run_cli("probe", "--save", str(target), "--root", str(HOSTS / "h200-1gpu-xeon-amx"))
    assert out.returncode == 0 and target.exists()
    assert yaml.safe_load(target.read_text())["gpus"]["devices"][0]["name"] == "NVIDIA H200"
    out = run_cli("probe", "--root", str(tmp_path / "missing"))
    assert out.returncode == 2 and "no such directory" in out.stderr and "Traceback" not in out.stderr
    code = (
        "import sys, ktwizard.cli as c; c.main(['probe','--json','--no-engine']); "
        "assert 'textual' not in sys.modules and 'docker' not in sys.modules"
    )
    import subprocess
    import sys

    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_recorded_real_nvml_run_agrees_with_nvidia_smi():
    """Recorded on the H200 device while a torch process held 6.5 GiB: `ktwizard probe --json` vs nvidia-smi."""
    dev = TESTS / "fixtures" / "device"
    profile = from_data(HostProfile, json.loads((dev / "probe-busy.json").read_text()))
    smi = (dev / "smi-busy.txt").read_text()
    total_mib, used_mib = map(int, re.search(r"^0, (\d+) MiB, (\d+) MiB", smi, re.M).groups())
    pid, proc_mib = map(int, re.search(r"^(\d+), (\d+) MiB", smi.split("pid,")[1].split("\n", 1)[1], re.M).groups())
    (gpu,) = profile.gpus.devices

    def mib(n: int) -> int:  # nvidia-smi rounds MiB up
        return -(-n // 2**20)

    assert mib(gpu.memory_total) == total_mib
    assert mib(gpu.memory_used) == used_mib  # nvidia-smi's used is v2's used: reserve apart
    assert gpu.processes[0].pid == pid and mib(gpu.processes[0].used_memory) == proc_mib
    reserved_mib = int((dev / "smi-before.txt").read_text().strip().splitlines()[1].split(",")[4].split()[0])
    assert mib(gpu.memory_reserved) == reserved_mib


def test_bad_cpulists_in_a_recorded_root_are_skipped_not_fatal(tmp_path):
    from ktwizard.host.root import parse_cpu_list

    assert parse_cpu_list("0-3,x,8,5-2,0-999999999,-1,10-11") == (0, 1, 2, 3, 8, 10, 11)
    root = tmp_path / "root"
    for rel, text in {
        "proc/cpuinfo": "processor : 0\nflags : avx2\n",
        "proc/meminfo": "MemTotal: 1024 kB\n",
        "sys/devices/system/cpu/online": "0-999999999\n",
        "sys/devices/system/node/node0/cpulist": "garbage\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    out = run_cli("probe", "--root", str(root), "--json", "--no-engine", timeout=30)
    assert "Traceback" not in out.stderr and out.returncode in (0, 2)


def test_a_port_in_time_wait_is_free_and_a_listener_is_not():
    """A deployment stopped a minute ago leaves its port in TIME_WAIT; servers bind with SO_REUSEADDR, so the
    check does too. A port something listens on is still in use."""
    import socket

    import pytest

    from ktwizard.errors import KtwizardError
    from ktwizard.host.ports import check_port

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    with pytest.raises(KtwizardError, match="in use"):
        check_port("127.0.0.1", port)
    conn.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
    client.close()
    server.close()
    check_port("127.0.0.1", port)  # free for a server that binds as servers do
