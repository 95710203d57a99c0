"""The command line as people expect it: --version, help with defaults and examples, shell completion, colour only
on a colour terminal (NO_COLOR respected), 80 columns, identical GPUs as one block, a config file for defaults."""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import shutil
import subprocess
import sys

import pytest
from conftest import HOSTS, run_cli

from ktwizard import __version__
from ktwizard.cli import build_parser

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def walk(parser: argparse.ArgumentParser, path: list[str]):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield path + [name], sp
                yield from walk(sp, path + [name])


def test_version():
    out = run_cli("--version")
    assert out.returncode == 0 and __version__ in out.stdout


def test_every_option_has_help_and_every_command_examples():
    for path, sp in walk(build_parser(), ["ktwizard"]):
        for a in sp._actions:
            if a.option_strings and not isinstance(a, argparse._HelpAction):
                assert a.help, (path, a.option_strings)
        if not any(isinstance(a, argparse._SubParsersAction) for a in sp._actions) and path[-1] in (
            "plan", "launch", "ps", "chat", "monitor", "bench", "doctor", "probe", "exporter", "grafana",
        ):  # fmt: skip
            assert sp.epilog and "examples:" in sp.epilog, path


def test_a_command_parses_the_same_with_only_its_group_loaded():
    whole = build_parser()
    top = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    for command, full in top.choices.items():
        lean = build_parser(command)
        (only,) = [a for a in lean._actions if isinstance(a, argparse._SubParsersAction)]
        assert command in only.choices, command  # its group's module registers it
        assert len(only.choices) < len(top.choices)  # and no other group was loaded
        assert only.choices[command].format_help() == full.format_help()
    # anything else (the wizard's own options, a typo) gets the whole command line and its suggestions
    assert build_parser("--host") is not None and len(top.choices) == len(
        next(a for a in build_parser("monitr")._actions if isinstance(a, argparse._SubParsersAction)).choices
    )


def test_the_live_dashboard_loads_no_other_command_module():
    code = (
        "import sys; from ktwizard.cli import build_parser; build_parser('monitor').parse_args(['monitor', '--once']);"
        "print(sorted(m for m in sys.modules if m.startswith('ktwizard.cli.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = set(json.loads(out.stdout.replace("'", '"')))
    assert "ktwizard.cli.monitor" in loaded
    assert not loaded & {"ktwizard.cli.plan", "ktwizard.cli.fleet", "ktwizard.cli.deploy", "ktwizard.cli.bench"}


def test_help_shows_defaults_and_examples():
    out = run_cli("bench", "--help", env={"NO_COLOR": "1", "COLUMNS": "100"})
    assert out.returncode == 0
    assert "(default: 1,2)" in out.stdout  # --concurrency
    assert "examples:" in out.stdout and "ktwizard bench --url" in out.stdout
    assert not ANSI.search(out.stdout)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts_name_the_commands(shell):
    out = run_cli("completion", shell)
    assert out.returncode == 0
    for word in ("fleet", "monitor", "--replicas-per-host", "--context"):
        assert word in out.stdout
    if shell == "bash" and shutil.which("bash"):
        check = subprocess.run(["bash", "-n"], input=out.stdout, text=True, capture_output=True)
        assert check.returncode == 0, check.stderr


def in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run ktwizard with stdout on a pseudo-terminal, as a person's shell would."""
    master, slave = pty.openpty()
    full = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", **env}
    full.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
    proc = subprocess.Popen([sys.executable, "-m", "ktwizard", *args], stdout=slave, stderr=subprocess.PIPE, env=full)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


PLAN = ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355"]


def test_colour_only_on_a_terminal_and_never_with_no_color():
    assert ANSI.search(in_a_terminal(PLAN, {}))
    assert not ANSI.search(in_a_terminal(PLAN, {"NO_COLOR": "1"}))
    piped = run_cli(*PLAN)
    assert piped.returncode == 0 and not ANSI.search(piped.stdout)


@pytest.mark.parametrize(
    "args",
    [
        PLAN,
        ["plan", "--preset", "deepseek-v2", "--host", "8x-l40-46gb", "--explain"],
        ["plan", "--preset", "qwen3-235b-a22b", "--host", "xeon-2s-amx-4x4090-48gb"],
        ["plan", "--preset", "kimi-k2.7-code", "--host", "rtx-pro-6000-epyc-9355", "--context", "262144",
         "--concurrency", "8"],
        *[["probe", "--root", str(HOSTS / h)] for h in ("h200-1gpu-xeon-amx", "container-quota", "epyc-zen4-nps4")],
        ["doctor", "--root", str(HOSTS / "h200-1gpu-xeon-amx"), "--port", "1"],
    ],
)  # fmt: skip
def test_output_fits_80_columns(args):
    out = run_cli(*args, env={"COLUMNS": "80"})
    assert out.returncode in (0, 1, 3), out.stderr
    long = [line for line in out.stdout.splitlines() if len(line.rstrip()) > 80 and not line.startswith("  --")]
    assert not long, long[:3]


def test_identical_gpus_are_one_block():
    out = run_cli("plan", "--preset", "deepseek-v2", "--host", "8x-l40-46gb", "--format", "json")
    budgets = json.loads(out.stdout)["gpu_budgets"]
    # independent: which GPUs' item lists are the same, from the JSON
    first = [(i["name"], i["bytes"]) for i in budgets[1]["items"]]
    same = [b["gpu"] for b in budgets if [(i["name"], i["bytes"]) for i in b["items"]] == first]
    assert same == list(range(1, 8))
    table = run_cli("plan", "--preset", "deepseek-v2", "--host", "8x-l40-46gb").stdout
    heads = re.findall(r"^GPU [0-9,-]+ .*$", table, re.M)
    assert heads[0].startswith("GPU 0 ") and heads[1].startswith("GPU 1-7 ") and heads[1].endswith("each")
    assert len(heads) == 2


def test_config_file_gives_defaults_and_options_win(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("host: 8x-l40-46gb\nport: 31000\nimage: my-sglang:1\n")
    env = {"KTWIZARD_CONFIG": str(cfg)}
    out = run_cli("plan", "--preset", "deepseek-v2", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["host"] == "8x-l40-46gb" and plan["goals"]["port"] == 31000 and plan["image"] == "my-sglang:1"
    out = run_cli("plan", "--preset", "deepseek-v2", "--format", "json", "--port", "32000", env=env)
    assert json.loads(out.stdout)["goals"]["port"] == 32000
    for bad in ("port: 99999\n", "colour: red\n", "- a\n", "host: [1, 2]\n", "{oops"):
        cfg.write_text(bad)
        out = run_cli("plan", "--preset", "deepseek-v2", env=env)
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert out.stderr.count("ktwizard: error:") == 1 and str(cfg) in out.stderr
