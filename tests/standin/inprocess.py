"""The stand-in's HTTP server in this process (real sockets on 127.0.0.1), for tests of clients such as verify:
the same handler `python -m sglang.launch_server` serves, started ready, with no start-up phases."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def standin(model_dir: Path, *flags: str) -> Iterator[str]:
    """Serve the stand-in with these launch_server flags; yields its URL."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from sglang import launch_server as ls

    (model_dir / "config.json").write_text(json.dumps({"model_type": "standin"}))
    args = ls.parser().parse_args(["--model-path", str(model_dir), "--host", "127.0.0.1", "--port", "0", *flags])
    ready = threading.Event()
    engine = ls.Engine(args)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ls.make_handler(args, engine, ready))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    ready.set()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
