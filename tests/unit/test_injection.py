"""Hostile names in every rendering: each one is executed (shell, docker, client lines) with fake programs on PATH,
or parsed (compose, YAML snippets), and nothing may run that the plan did not ask for."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
import yaml

from ktwizard.errors import BadInput
from ktwizard.host.spec import host_from_spec
from ktwizard.models.presets import get_preset, recipe_for
from ktwizard.planner.core import plan
from ktwizard.planner.types import Goals
from ktwizard.render import args as render_args
from ktwizard.render.docker import container_argv
from ktwizard.render.formats import render

FAKE = """#!/bin/sh
# records its arguments, one per line, NUL-safe enough for the test's strings
for a in "$@"; do printf '%s\\n---\\n' "$a"; done > "$RECORD.$(basename "$0")"
"""


@pytest.fixture
def hostile(tmp_path):
    mark = tmp_path / "PWNED"
    evil = f"x'; touch {mark}; echo '$(touch {mark})`touch {mark}`"
    host = host_from_spec(
        {
            "name": f"box\ntouch {mark}\n#",
            "gpus": [{"name": "NVIDIA RTX PRO 6000 Blackwell", "memory_gib": 96, "compute_capability": "12.0"}],
            "cpu": {
                "cores_per_socket": 32,
                "flags": ["avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx512vbmi"],
            },
            "memory_gib": 768,
        }
    )
    p = get_preset("kimi-k2.7-code")
    goals = Goals(
        context=65536,
        weights=f"/data/{evil}/Kimi",
        chat_template=f"/t/{evil}.jinja",
        image=f"img:{evil}".replace(" ", ""),
    )
    r = plan(host, p.spec(), goals, p.sglang, recipe_for(p.id))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for prog in ("python3", "docker", "curl", "aider"):
        (bin_ / prog).write_text(FAKE)
        (bin_ / prog).chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "RECORD": str(tmp_path / "rec"), "HOME": str(tmp_path)}
    return r, mark, env, tmp_path


def recorded(tmp_path, prog: str) -> list[str]:
    return (tmp_path / f"rec.{prog}").read_text().split("\n---\n")[:-1]


def test_the_shell_script_runs_only_the_planned_server(hostile):
    r, mark, env, tmp = hostile
    script = tmp / "run.sh"
    script.write_text(render(r, "shell"))
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert not mark.exists()
    assert recorded(tmp, "python3") == ["-m", "sglang.launch_server", *render_args.argv(r)]
    assert render(r, "shell").splitlines()[1].count("\n") == 0 and "touch" not in render(r, "shell").splitlines()[2]


def test_the_docker_command_runs_only_docker_with_the_values_intact(hostile):
    r, mark, env, tmp = hostile
    out = subprocess.run(["bash", "-c", render(r, "docker")], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert not mark.exists()
    argv = recorded(tmp, "docker")
    assert argv[-len(container_argv(r, r.goals.port)) :] == container_argv(r, r.goals.port)
    assert f"{r.goals.weights}:/models/Kimi:ro" in argv and r.goals.image in argv


def test_compose_and_yaml_snippets_parse_to_the_same_values(hostile):
    r, mark, env, tmp = hostile
    # Compose reads `$$` as one literal `$` (its interpolation rule): what it hands the container is this
    service = yaml.safe_load(render(r, "compose").replace("$$", "$"))["services"]["sglang"]
    assert service["command"][3:] == container_argv(r, r.goals.port)
    assert {v["source"] for v in service["volumes"]} >= {r.goals.weights}
    text = render(r, "clients")
    cont = yaml.safe_load(text.split("Continue (config.yaml):\n", 1)[1].splitlines()[0])
    lite = yaml.safe_load(text.split("LiteLLM:", 1)[1].splitlines()[0])
    assert cont["models"][0]["model"] == r.served_name and lite["model_list"][0]["model_name"] == r.served_name
    copilot = json.loads(text.split("chat-completions API:\n", 1)[1].split("\n\n", 1)[0].split("\n  note:")[0])
    assert copilot["models"][0]["id"] == r.served_name


def test_client_command_lines_run_only_their_program(hostile):
    r, mark, env, tmp = hostile
    text = render(r, "clients")
    for label, prog in (("aider:", "aider"), ("Smoke test:\n", "curl")):
        line = text.split(label, 1)[1].strip().splitlines()[0]
        out = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert recorded(tmp, prog)[0] in ("--openai-api-base", "-s")
    webui = text.split("Open WebUI:", 1)[1].strip().splitlines()[0]
    assert [w.split("=", 1)[0] for w in shlex.split(webui)] == ["OPENAI_API_BASE_URL", "OPENAI_API_KEY"]
    assert not mark.exists()


def test_a_hostile_served_name_is_refused_and_a_folder_name_is_tamed(tmp_path):
    host = host_from_spec(
        {
            "gpus": [{"name": "NVIDIA H200", "memory_gib": 141}],
            "cpu": {"cores_per_socket": 32, "flags": ["avx2"]},
            "memory_gib": 1024,
        }
    )
    p = get_preset("qwen3-30b-a3b")
    with pytest.raises(BadInput, match="--served-name"):
        plan(host, p.spec(), Goals(served_name="a b;rm -rf /"), p.sglang)
    from dataclasses import replace

    spec = replace(p.spec(), id="My Model; touch x\n")
    r = plan(host, spec, Goals(context=8192), replace(p.sglang, served_model_name=None))
    assert r.served_name == "My-Model-touch-x"
    assert os.path.basename(r.served_name) == r.served_name
