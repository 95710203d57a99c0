"""chat: a short streaming smoke test against a server ktwizard launched (or any OpenAI-compatible URL)."""

from __future__ import annotations

import argparse
import sys

from ktwizard.errors import KtwizardError


def cmd_chat(args: argparse.Namespace) -> int:
    import asyncio
    import time

    import httpx

    from ktwizard.bench.client import served_model, stream_chat

    end = time.monotonic() + args.max_seconds  # --max-seconds covers the whole command, the model list too
    from ktwizard.app.target import resolve

    target = resolve(args.target)
    url = target.url
    headers = target.headers(args.api_key_file)
    model = args.model or served_model(url, headers, deadline_s=min(10.0, args.max_seconds))
    left = max(0.1, end - time.monotonic())
    timeout = httpx.Timeout(connect=min(10.0, left), read=left, write=min(30.0, left), pool=min(10.0, left))

    def show(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    async def once() -> None:
        async with asyncio.timeout(left), httpx.AsyncClient(timeout=timeout, headers=headers) as http:
            r = await stream_chat(
                http, url, model, args.prompt, args.max_tokens, on_text=show, ignore_eos=False, temperature=0.6
            )
        span = r.token_times[-1] - r.token_times[0]
        rate = (len(r.token_times) - 1) / span if span > 0 else 0.0
        print(
            f"\n-- {model}: first token after {r.ttft:.2f} s, {r.completion_tokens} tokens, {rate:.1f} tok/s",
            file=sys.stderr,
        )

    try:
        asyncio.run(once())
    except TimeoutError:
        raise KtwizardError(f"no complete answer within {args.max_seconds:.0f} s (--max-seconds)") from None
    except (httpx.HTTPError, RuntimeError) as exc:
        raise KtwizardError(f"{url}: {exc}"[:300]) from None
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from ktwizard.cli.options import add_target, count, seconds

    ch = sub.add_parser(
        "chat",
        help="stream one answer from a running server: a smoke test with time to first token and tok/s",
        epilog="examples:\n  ktwizard chat ktwizard-kimi-k2.7-code\n"
        '  ktwizard chat http://127.0.0.1:30000 --prompt "Write a haiku about RAM"',
    )
    add_target(ch, optional=False)
    ch.add_argument("--prompt", default="Say hello in one short sentence.", help="what to ask")
    ch.add_argument("--model", help="the served model id (default: the one /v1/models names)")
    ch.add_argument(
        "--api-key-file", metavar="FILE", help="the server's API key (default: its launch's, or $KTWIZARD_API_KEY)"
    )
    ch.add_argument(
        "--max-tokens", type=count("--max-tokens", 1, 32768), default=256, metavar="N", help="longest answer"
    )
    ch.add_argument(
        "--max-seconds", type=seconds("--max-seconds", 1.0, 3600.0), default=300.0, metavar="S",
        help="give up after S seconds",
    )  # fmt: skip
    ch.set_defaults(func=cmd_chat)
