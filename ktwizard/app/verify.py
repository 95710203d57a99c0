"""verify, once for the CLI, launch and the wizard: NAME|URL → the spec (the kept plan's rendered flags, else the
server's own /server_info) → the checks → the report, kept beside the deployment's record."""

from __future__ import annotations

from collections.abc import Callable

from ktwizard.errors import BadInput
from ktwizard.verify.spec import DEFAULT_TIMEOUT_S, Spec, from_server_args
from ktwizard.verify.verdict import Report, Verdict


def spec_of_plan(plan, url: str, headers: dict[str, str], timeout_s: float) -> Spec:
    """The checks' facts from the plan as rendered: what the server was started with."""

    def num(name: str) -> int | None:
        v = plan.flag(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def text(name: str) -> str | None:
        v = plan.flag(name)
        return v if isinstance(v, str) and v else None

    tools, thoughts = _parsers(plan.model.id)
    tool, thought = text("--tool-call-parser"), text("--reasoning-parser")
    return Spec(
        url=url,
        model=plan.served_name or "",
        context=num("--context-length"),
        threshold=num("--kt-gpu-prefill-token-threshold"),
        tool_parser=tool,
        reasoning_parser=thought,
        timeout_s=timeout_s,
        headers=headers,
        method=plan.method,
        methods=_methods(plan),
        gpus=tuple(plan.gpus),
        tool_parsers=tuple(p for p in tools if p != tool),
        reasoning_parsers=tuple(p for p in thoughts if p != thought),
    )


def _methods(plan) -> tuple[str, ...]:
    """Other kt-methods for this checkpoint, the most likely first: its native method (from its preset), then the
    converted ones. app/relaunch offers only those that re-plan and fit on the host."""
    from ktwizard.models.presets import all_presets
    from ktwizard.planner.methods import CONVERTED, NATIVE

    native = plan.method if plan.flag("--kt-weight-path") == plan.model_path else None
    preset = all_presets().get(plan.model.id)
    if native is None and preset is not None:
        native = NATIVE.get(preset.spec().expert_format.kind)
    return tuple(m for m in dict.fromkeys((native, *CONVERTED)) if m and m != plan.method)


def _parsers(model_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tool-call and reasoning parsers the model's published checkpoints use (its preset's), for a relaunch
    with another one; none for a model no preset describes."""
    from ktwizard.models.presets import all_presets
    from ktwizard.runtime.rules import tool_parser

    preset = all_presets().get(model_id)
    if preset is None:
        return (), ()
    tools = [preset.sglang.tool_call_parser, *(c.tool_call_parser for c in preset.checkpoints)]
    thoughts = [preset.sglang.reasoning_parser, *(c.reasoning_parser for c in preset.checkpoints)]
    return tuple(dict.fromkeys(tool_parser(t) for t in tools if t)), tuple(dict.fromkeys(t for t in thoughts if t))


def _server_spec(url: str, headers: dict[str, str], timeout_s: float) -> Spec:
    import httpx

    try:
        r = httpx.get(f"{url}/server_info", headers=headers, timeout=min(timeout_s, 30.0), trust_env=False)
        info = r.json() if r.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        info = {}
    return from_server_args(url, info if isinstance(info, dict) else {}, timeout_s=timeout_s, headers=headers)


def verify(
    ref: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[str, Verdict | None], None] | None = None,
    key_file: str | None = None,
) -> Report:
    from ktwizard.app.target import resolve
    from ktwizard.verify.runner import run_checks

    if not timeout_s > 0:
        raise BadInput(f"--check-timeout {timeout_s}: give seconds above 0")
    target = resolve(ref)
    headers = target.headers(key_file)
    if target.plan is not None:
        spec = spec_of_plan(target.plan, target.url, headers, timeout_s)
    else:
        spec = _server_spec(target.url, headers, timeout_s)
    report = run_checks(spec, progress)
    if target.record is not None:
        keep(target.record.name, report)
    return report


def verify_launched(plan, name: str, url: str, timeout_s: float, progress=None) -> Report:
    """Launch's last step: the plan just served, at the URL it really listens on."""
    from ktwizard.apikey import auth_headers
    from ktwizard.urlauth import headers_for
    from ktwizard.verify.runner import run_checks

    spec = spec_of_plan(plan, url, headers_for(url, auth_headers(plan.goals.api_key_file)), timeout_s)
    report = run_checks(spec, progress)
    keep(name, report)
    return report


def keep(name: str, report: Report) -> None:
    from ktwizard.app.kept import keep as keep_extra

    keep_extra(name, "verify", report)


def line(v: Verdict) -> str:
    """One verdict as one line (and its hint), for the CLI and the wizard alike."""
    from ktwizard.textsafe import printable

    head = f"{'pass' if v.passed else 'FAIL'}  {v.name:<17} {printable(v.evidence, False)}"
    return head + (f"\n      try: {printable(v.hint, False)}" if v.hint and not v.passed else "")
