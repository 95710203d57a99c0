"""Every rendered variable is one the pinned runtime reads.

The torch pin comes from the sglang-kt 0.7.2 wheel's METADATA (kept as a fixture). Which variable that torch's CUDA
caching allocator takes expandable_segments from is written here from pytorch/pytorch#183387 (2.9.1: only
PYTORCH_CUDA_ALLOC_CONF; the unified PYTORCH_ALLOC_CONF is silently ignored for CUDA until 2.11), independently of
ktwizard's table; every rendering and the launch paths must carry that variable and not the ignored one.
"""

from __future__ import annotations

import re
import shlex

import pytest
import yaml
from conftest import ORACLES

from ktwizard.deploy.docker_proc import create_kwargs
from ktwizard.deploy.launch import LaunchOptions
from ktwizard.fleet.compose import compose_fleet
from ktwizard.fleet.k8s import k8s_documents
from ktwizard.fleet.plan import fleet_plan
from ktwizard.host.spec import load_host
from ktwizard.inputs import resolve_model
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.render.docker import container_spec
from ktwizard.render.formats import render
from ktwizard.runtime import release as runtime_env

METADATA = (ORACLES / "sglang-kt-0.7.2-METADATA-torch.txt").read_text()
# pytorch/pytorch#183387: torch releases whose CUDA allocator reads expandable_segments from each name
HONOURED_BY_MINOR = {(2, 9): {"PYTORCH_CUDA_ALLOC_CONF"}, (2, 10): {"PYTORCH_CUDA_ALLOC_CONF"}}
SETTING = "expandable_segments:True"


def pinned_torch() -> str:
    (pin,) = re.findall(r"^Requires-Dist: torch==([0-9.]+)$", METADATA, re.M)
    return pin


def honoured() -> set[str]:
    major, minor = map(int, pinned_torch().split(".")[:2])
    return HONOURED_BY_MINOR[(major, minor)]


@pytest.fixture(scope="module")
def kimi():
    p = get_preset("kimi-k2.7-code")
    g = Goals(context=65536, concurrency=1, weights="/models/Kimi-K2.7-Code")
    return plan(load_host("rtx-pro-6000-epyc-9355"), p.spec(), g, p.sglang, recipe_for(p.id))


def test_the_pin_is_the_one_ktwizard_plans_for():
    assert pinned_torch() == runtime_env.SGLANG_KT_TORCH_PIN == "2.9.1"
    assert set(runtime_env.honoured_alloc_vars(pinned_torch())) == honoured()


def test_plan_env_sets_only_variables_the_runtime_reads(kimi):
    env = {e.name: e.value for e in kimi.env}
    (var,) = honoured()
    assert env[var] == SETTING
    assert "PYTORCH_ALLOC_CONF" not in env  # ignored by torch 2.9.1 for CUDA
    assert "SAFETENSORS_FAST_GPU" not in env  # read nowhere in sglang-kt 0.7.2


def _assert_env(env: dict[str, str]) -> None:
    (var,) = honoured()
    assert env.get(var) == SETTING and "PYTORCH_ALLOC_CONF" not in env


def test_every_rendering_and_launch_carries_it(kimi):
    shell = render(kimi, "shell")
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in shell.splitlines() if line.startswith("export ")
    )
    _assert_env(exports)
    words = shlex.split(render(kimi, "docker").replace("\\\n", " "))
    docker_env = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "-e")
    _assert_env(docker_env)
    compose = yaml.safe_load(render(kimi, "compose"))
    (service,) = compose["services"].values()
    _assert_env(dict(service["environment"]))
    launch = create_kwargs(container_spec(kimi), LaunchOptions(name="kt-env-test", port=30000))
    _assert_env(launch["environment"])
    m = resolve_model("qwen3-30b-a3b", None)  # small enough for two replicas on one machine

    def fleet(refs: list[str], per: int):
        hosts = [(r, load_host(r)) for r in refs]
        return fleet_plan(hosts, m.spec, Goals(context=32768), lambda h, g: plan(h, m.spec, g, m.hints, m.recipe), per)

    two = fleet(["xeon-2s-amx-4x4090-48gb"], 2)
    replicas = [s for s in compose_fleet(two)["services"].values() if "--kt-method" in str(s.get("command"))]
    assert len(replicas) == 2
    for svc in replicas:
        _assert_env(dict(svc["environment"]))
    workers = [
        d
        for d in k8s_documents(fleet(["xeon-2s-amx-4x4090-48gb", "rtx-pro-6000-epyc-9355"], 1))
        if d.get("kind") == "Deployment" and "router" not in str(d)
    ]
    assert workers
    for d in workers:
        (c,) = d["spec"]["template"]["spec"]["containers"]
        _assert_env({e["name"]: e["value"] for e in c["env"]})


def test_the_recipe_variables_the_runtime_ignores_are_said(kimi):
    said = " ".join(n.text for n in kimi.notices)
    assert "sets PYTORCH_ALLOC_CONF; this plan does not" in said
    assert "sets SAFETENSORS_FAST_GPU; this plan does not" in said
