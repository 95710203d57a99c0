"""The dashboard in a browser through textual-serve: each browser tab runs its own dashboard process.

On 127.0.0.1 by default. Bound elsewhere, a token is required in the page's URL (the dashboard can stop
servers), and the number of sessions is capped either way.
"""

from __future__ import annotations

import hmac
import os
import secrets
import shlex
import sys
from typing import Any

WEB_DRIVER = "textual.drivers.web_driver:WebDriver"


def served_by_web() -> bool:
    """True inside a textual-serve session: stdout is the web driver's pipe, not a terminal, and that is fine."""
    return os.environ.get("TEXTUAL_DRIVER") == WEB_DRIVER


def monitor_command(args: list[str]) -> str:
    """The per-session command line: this Python, this ktwizard, the same monitor options (shell-quoted)."""
    return shlex.join([sys.executable, "-m", "ktwizard", "monitor", *args])


def make_server(command: str, bind: str, port: int, token: str | None, max_sessions: int) -> Any:
    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.server import Server

    class DashboardServer(Server):
        def __init__(self) -> None:
            super().__init__(command, host=bind, port=port, title="ktwizard monitor")
            self.sessions = 0

        def allowed(self, request: web.Request) -> bool:
            return token is None or hmac.compare_digest(request.query.get("token", ""), token)

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            if not self.allowed(request):
                return web.Response(status=403, text="ktwizard: open the URL with its token (printed at start)\n")
            context = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]
            # the browser reaches the page at request.host: the socket and the static files are there too
            query = f"?token={token}" if token else ""
            context["app_websocket_url"] = f"ws://{request.host}/ws{query}"
            context["config"]["static"]["url"] = f"http://{request.host}/static/"
            return aiohttp_jinja2.render_template("app_index.html", request, context)

        async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
            if not self.allowed(request):
                return web.Response(status=403, text="ktwizard: token required\n")
            if self.sessions >= max_sessions:
                return web.Response(
                    status=503,
                    text=f"ktwizard: {max_sessions} dashboard sessions are open (each tab runs its own process); "
                    "close one or raise --web-sessions\n",
                )
            self.sessions += 1
            try:
                return await super().handle_websocket(request)
            finally:
                self.sessions -= 1

    return DashboardServer()


def new_token() -> str:
    return secrets.token_urlsafe(24)
