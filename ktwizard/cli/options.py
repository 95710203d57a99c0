"""Options shared by several commands: the plan inputs (plan, launch, fleet) and building a plan from them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ktwizard.errors import BadInput

if TYPE_CHECKING:  # the parser is built for every command: the planner loads only for those that plan
    from ktwizard.host.profile import HostProfile
    from ktwizard.inputs import GoalOptions, ModelChoice
    from ktwizard.planner.types import Plan

T = TypeVar("T")


def typed(parse: Callable[[str, str], T], flag: str) -> Callable[[str], T]:
    """An argparse `type=` from one of ktwizard.inputs' parsers; BadInput becomes a usage error (exit 2)."""

    def convert(text: str) -> T:
        try:
            return parse(text, flag)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    return convert


def tokens(flag: str) -> Callable[[str], int]:
    from ktwizard.inputs import parse_tokens

    return typed(parse_tokens, flag)


def count(flag: str, low: int, high: int) -> Callable[[str], int]:
    from ktwizard.inputs import parse_count

    return typed(lambda text, f: parse_count(text, f, low, high), flag)


def port(flag: str = "--port") -> Callable[[str], int]:
    return count(flag, 1, 65535)


def seconds(flag: str, low: float = 0.1, high: float = 86400.0) -> Callable[[str], float]:
    from ktwizard.inputs import parse_seconds

    return typed(lambda text, f: parse_seconds(text, f, low, high), flag)


def url(flag: str = "--url") -> Callable[[str], str]:
    from ktwizard.urlauth import parse_url

    return typed(parse_url, flag)


def bind(flag: str = "--bind") -> Callable[[str], str]:
    from ktwizard.inputs import parse_bind

    return typed(parse_bind, flag)


def label_value(text: str) -> str:
    """A Prometheus label value ktwizard sets: plain, so it reads the same in PromQL, YAML and the dashboard."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", text):
        raise argparse.ArgumentTypeError(f"{text[:60]!r}: use 1 to 128 letters, digits and . _ : -")
    return text


def mount_path(flag: str) -> Callable[[str], str]:
    from ktwizard.inputs import parse_mount_path

    return typed(parse_mount_path, flag)


def method(flag: str = "--method") -> Callable[[str], str]:
    def parse(text: str, f: str) -> str:
        from ktwizard.planner.methods import METHODS

        name = text.strip().upper()
        if name not in METHODS:
            raise BadInput(f"{f} {text!r}: use one of {', '.join(METHODS)}")
        return name

    return typed(parse, flag)


def add_target(parser: argparse.ArgumentParser, optional: bool = True) -> None:
    """The NAME|URL positional every command that talks to a running server takes (app.target.resolve reads it)."""
    parser.add_argument(
        "target",
        nargs="?" if optional else None,
        metavar="NAME|URL",
        help="a deployment name (ktwizard ps) or the server's base URL",
    )


def parser_name(flag: str) -> Callable[[str], str]:
    """A parser's name as sglang lists them (kimi_k2, qwen3-thinking, gpt-oss): one word; which names the runtime
    knows is its own check at start-up."""
    import re

    def parse(text: str, f: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", text):
            raise BadInput(f"{f} {text[:60]!r}: a parser name such as kimi_k2 or qwen3-thinking")
        return text

    return typed(parse, flag)


def add_plan_inputs(pr: argparse.ArgumentParser, many_hosts: bool = False) -> None:
    src = pr.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="ID", help="a bundled model preset (ktwizard presets)")
    src.add_argument(
        "--model",
        metavar="DIR|hf:ORG/NAME[@REV]",
        help="a local checkpoint folder, or a Hugging Face repository read before downloading (headers only)",
    )
    pr.add_argument(
        "--host",
        metavar="FILE|NAME",
        action="append" if many_hosts else "store",
        default=[] if many_hosts else None,  # a list: a config default fills it as a one-item list
        help="a saved profile, a bundled host name or a hand-written spec (default: this machine)"
        + ("; once per machine of the fleet (the same one twice: two machines of that class)" if many_hosts else ""),
    )
    pr.add_argument(
        "--context",
        type=tokens("--context"),
        metavar="N",
        help="longest request in tokens, such as 163840 or 160k (default: as long as fits, up to 128k)",
    )
    pr.add_argument(
        "--concurrency",
        type=count("--concurrency", 1, 4096),
        metavar="N",
        help="concurrent requests (default 1)",
    )
    pr.add_argument("--gpus", metavar="LIST", help="all (default) or GPU indices such as 0,1")
    pr.add_argument("--method", type=method(), metavar="M", help="kt-method (default: the checkpoint's native method)")
    pr.add_argument(
        "--gpu-experts",
        type=count("--gpu-experts", 0, 4096),
        metavar="N",
        help="routed experts per MoE layer on GPU (default: as many as fit)",
    )
    pr.add_argument("--kv-dtype", choices=("auto", "bf16", "fp8_e4m3"), help="KV cache type (default auto: bf16)")
    pr.add_argument(
        "--no-layerwise-prefill", action="store_true", help="do not run long prefills layer by layer on the GPU"
    )
    pr.add_argument(
        "--chunked-prefill-size",
        type=count("--chunked-prefill-size", 512, 1 << 20),
        metavar="N",
        help="prefill chunk in tokens (default: SGLang's for the GPU size); a larger one prefills faster and costs "
        "activation memory on every GPU, which the plan budgets",
    )
    pr.add_argument(
        "--kt-gpu-prefill-token-threshold",
        type=count("--kt-gpu-prefill-token-threshold", 1, 1 << 20),
        metavar="N",
        help="prefill chunks of N tokens or more upload each layer's CPU experts and run them on the GPU (layerwise); "
        "shorter ones run them on the CPU (default: the KT docs' value for the method). The plan shows the time to "
        "first token on both sides of it",
    )
    pr.add_argument(
        "--weights", metavar="DIR", type=mount_path("--weights"), help="the checkpoint folder the server will load"
    )
    pr.add_argument(
        "--kt-weights", metavar="DIR", type=mount_path("--kt-weights"), help="converted CPU weights for AMXINT4/AMXINT8"
    )
    pr.add_argument("--port", type=port(), help="HTTP port (default 30000)")
    pr.add_argument("--bind", type=bind(), help="address to publish on (default 127.0.0.1)")
    pr.add_argument(
        "--profile",
        metavar="FILE|NAME",
        help="a deployment profile the wizard saved (Ctrl+S): its host, model and "
        "goals, which the options given here override",
    )
    pr.add_argument("--image", metavar="IMG", help="container image")
    pr.add_argument(
        "--placement",
        choices=("uniform", "frequency"),  # planner.types.PLACEMENTS, which the planner checks (not imported here)
        help="which experts the GPUs hold: uniform (the runtime's default) or frequency (the most-routed, from "
        "--expert-stats)",
    )
    pr.add_argument(
        "--record-routing",
        metavar="DIR",
        type=mount_path("--record-routing"),
        help="start the server with SGLang's expert-distribution recorder writing to DIR (ktwizard placement record "
        "drives it)",
    )
    pr.add_argument(
        "--expert-stats",
        metavar="FILE",
        type=mount_path("--expert-stats"),
        help="an expert-distribution dump (ktwizard placement record, or SGLang's recorder): frequency placement's "
        "input, checked against the model",
    )
    pr.add_argument(
        "--api-key-file",
        metavar="FILE",
        help="the server's API key, one line in a file (chmod 600); it never appears in a command line, record, "
        "rendering or log",
    )
    pr.add_argument(
        "--chat-template",
        metavar="FILE",
        type=mount_path("--chat-template"),
        help="a Jinja chat template for the server",
    )
    pr.add_argument("--served-name", metavar="NAME", help="the model id clients send (default: the preset's)")
    pr.add_argument(
        "--tool-call-parser", type=parser_name("--tool-call-parser"), metavar="NAME",
        help="the runtime's tool-call parser, instead of the model's own (what a failed verify check may suggest)",
    )  # fmt: skip
    pr.add_argument(
        "--reasoning-parser", type=parser_name("--reasoning-parser"), metavar="NAME",
        help="the runtime's reasoning parser, instead of the model's own (another checkpoint's, such as qwen3)",
    )  # fmt: skip


def goal_options(args: argparse.Namespace) -> GoalOptions:
    """The goal options of a parsed command line, typed: the one place argparse's Namespace becomes goals (plan,
    launch and fleet share these options; a command without one of them reads it as not given)."""
    from ktwizard.inputs import GoalOptions

    def opt(name: str) -> Any:
        return getattr(args, name, None)

    return GoalOptions(
        context=opt("context"),
        concurrency=opt("concurrency"),
        gpus=opt("gpus"),
        method=opt("method"),
        gpu_experts=opt("gpu_experts"),
        kv_dtype=opt("kv_dtype"),
        no_layerwise_prefill=bool(opt("no_layerwise_prefill")),
        weights=opt("weights") or opt("model"),  # an inspected folder is the weights the server loads
        kt_weights=opt("kt_weights"),
        port=opt("port"),
        bind=opt("bind"),
        image=opt("image"),
        chat_template=opt("chat_template"),
        served_name=opt("served_name"),
        api_key_file=opt("api_key_file"),
        placement=opt("placement"),
        expert_stats=opt("expert_stats"),
        record_routing=opt("record_routing"),
        chunked_prefill=opt("chunked_prefill_size"),
        prefill_threshold=opt("kt_gpu_prefill_token_threshold"),
        tool_call_parser=opt("tool_call_parser"),
        reasoning_parser=opt("reasoning_parser"),
    )


def make_plan(args: argparse.Namespace, all_gpus: bool = False) -> Plan:
    """all_gpus: plan for every GPU of the host whatever --gpus says.

    (launch --gpus none requests no GPU but plans for all.)
    """
    return planned(args, all_gpus)[2]


def planned(args: argparse.Namespace, all_gpus: bool = False) -> tuple[HostProfile, ModelChoice, Plan]:
    """The host and model the options name (a --profile's where not given) and the plan for them, each made once."""
    from dataclasses import replace

    from ktwizard.app.planning import make_plan
    from ktwizard.inputs import goals_from_options, resolve_host, resolve_model, routing_counts

    profile = None
    if args.profile:
        from ktwizard.profiles import load_profile

        profile = load_profile(args.profile)
    if profile is not None and not (args.preset or args.model):
        model = resolve_model(profile.preset, profile.model_dir)
    else:
        model = resolve_model(args.preset, args.model)
    host = profile.host if profile is not None and not args.host else resolve_host(args.host, args.weights)
    goals = goals_from_options(goal_options(args), profile.goals if profile is not None else None)
    goals = replace(goals, gpus=None) if all_gpus else goals
    return host, model, make_plan(host, model, goals, routing_counts(goals, model.spec))
