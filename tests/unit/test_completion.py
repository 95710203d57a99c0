"""Shell completion, run in a real bash: preset ids, bundled host names, and the deployments and fleets ktwizard
launched (read from their record folders at Tab time, plan and peak files left out)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import run_cli

BASH = shutil.which("bash")


def complete(script: str, state, *words: str) -> list[str]:
    code = (
        f"source {script}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
        'COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}; '
        'COMPREPLY=(); _shtab_ktwizard; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(
        [BASH, "-c", code], capture_output=True, text=True, timeout=30, env={**os.environ, "XDG_STATE_HOME": str(state)}
    )
    return [w for w in out.stdout.split() if w]


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_bash_completes_presets_hosts_and_what_was_launched(tmp_path):
    out = run_cli("completion", "bash")
    assert out.returncode == 0
    script = tmp_path / "ktwizard.bash"
    script.write_text(out.stdout)
    deployments, fleets = tmp_path / "ktwizard" / "deployments", tmp_path / "ktwizard" / "fleets"
    deployments.mkdir(parents=True)
    fleets.mkdir(parents=True)
    for name in ("alpha.json", "plan/alpha.json", "peak/alpha.json", "beta.json", "beta.plan.json"):
        (deployments / name).parent.mkdir(exist_ok=True)
        (deployments / name).write_text("{}")
    (fleets / "f1.json").write_text("{}")
    # a deployment may be named beta.plan: the kept plans live in a subfolder, apart from the names (issue 54)
    assert complete(script, tmp_path, "ktwizard", "stop", "") == ["alpha", "beta", "beta.plan"]
    assert complete(script, tmp_path, "ktwizard", "monitor", "b") == ["beta", "beta.plan"]
    assert complete(script, tmp_path, "ktwizard", "logs", "") == ["alpha", "beta", "beta.plan"]
    assert complete(script, tmp_path, "ktwizard", "fleet", "status", "") == ["f1"]
    assert "qwen3-30b-a3b-fp8" in complete(script, tmp_path, "ktwizard", "plan", "--preset", "qwen3-3")
    assert complete(script, tmp_path, "ktwizard", "launch", "--host", "rtx") == ["rtx-pro-6000-epyc-9355"]
