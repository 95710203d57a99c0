"""image render / image build, and doctor."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _host(args):
    from ktwizard.inputs import resolve_host

    return resolve_host(args.host)


def cmd_image_render(args: argparse.Namespace) -> int:
    from ktwizard.image.render import write_context

    target = write_context(_host(args), Path(args.out))
    print(f"wrote {args.out}/Dockerfile for CPU class {target.cpu_class}, CUDA {';'.join(target.cuda_archs) or 'none'}; "
          f"build it with: ktwizard image build --context {args.out}", file=sys.stderr)
    return 0


def cmd_image_build(args: argparse.Namespace) -> int:
    from ktwizard.image.build import build
    from ktwizard.image.render import target_for, write_context

    host = _host(args)
    context = Path(args.context) if args.context else None
    if context is None:
        import tempfile

        context = Path(tempfile.mkdtemp(prefix="ktwizard-image-"))
        write_context(host, context)
    target = target_for(host)
    tag = args.tag or f"sglang-kt:local-{target.tag_suffix}"
    build(context, tag, target)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ktwizard.doctor import checks_text, run_checks
    from ktwizard.serial import dump_json

    checks = run_checks(root=args.root, weights=args.weights, port=args.port)
    sys.stdout.write(dump_json(checks) if args.json else checks_text(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


def register(sub: argparse._SubParsersAction) -> None:
    im = sub.add_parser("image", help="render or build the SGLang-KT image for this host class")
    isub = im.add_subparsers(dest="image_command", required=True)
    r = isub.add_parser("render", help="write the Dockerfile and build context")
    r.add_argument("--host", metavar="FILE|NAME")
    r.add_argument("--out", default="sglang-kt-image")
    r.set_defaults(func=cmd_image_render)
    b = isub.add_parser("build", help="build it through the Docker SDK")
    b.add_argument("--host", metavar="FILE|NAME")
    b.add_argument("--context", metavar="DIR", help="a rendered (or your own) build context")
    b.add_argument("--tag")
    b.set_defaults(func=cmd_image_build)

    d = sub.add_parser("doctor", help="check this machine for what SGLang-KT needs, with fixes")
    d.add_argument("--json", action="store_true")
    d.add_argument("--root", default="/", help="check a recorded host")
    d.add_argument("--weights", metavar="DIR", help="where the weights live (disk space)")
    d.add_argument("--port", type=int, default=30000)
    d.set_defaults(func=cmd_doctor)
