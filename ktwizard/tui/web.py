"""The dashboard in a browser through textual-serve: each browser tab runs its own dashboard process.

On 127.0.0.1 by default, and a token is required in the page's URL on every bind (the command prints the URL
with it). Any web page the user visits can open a WebSocket to 127.0.0.1, so the socket is also refused unless its
Origin is the dashboard's own, and on loopback unless the Host is a loopback name (no DNS rebinding). The browser
view never stops a server: its confirmation is a key any page script could send. Sessions are capped.
"""

from __future__ import annotations

import contextlib
import os
import re
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


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def host_allowed(host_header: str, bind_loopback: bool, port: int) -> bool:
    """The Host a request names: on a loopback bind only a loopback name at this port (a rebound DNS name is
    another site's page talking to us)."""
    if not bind_loopback:
        return bool(host_header)
    name, _, p = host_header.rpartition(":")
    return name.lower() in LOOPBACK_NAMES and p == str(port)


def token_matches(given: str, token: str) -> bool:
    """In constant time, as bytes: compare_digest raises TypeError on a str with non-ASCII characters (an HTTP 500
    and a traceback for a URL anyone can type)."""
    import hmac

    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode("utf-8", "surrogateescape"))


def origin_allowed(origin: str | None, host_header: str) -> bool:
    """A browser always sends Origin with a WebSocket; only the dashboard's own page may open one."""
    return origin is not None and origin.lower() in (f"http://{host_header}".lower(), f"https://{host_header}".lower())


def require_serve() -> None:
    """textual-serve and its aiohttp are the `web` extra: without them --web is one line, not a traceback."""
    try:
        import aiohttp_jinja2  # noqa: F401
        import textual_serve.server  # noqa: F401
    except ImportError as exc:
        from ktwizard.errors import KtwizardError

        raise KtwizardError(
            f"monitor --web needs the web extra ({exc.name or 'textual-serve'} is not installed): "
            "pip install 'ktwizard[web]', or watch in this terminal without --web"
        ) from None


def make_server(command: str, bind: str, port: int, token: str, max_sessions: int) -> Any:
    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.server import Server

    from ktwizard.inputs import is_loopback

    class DashboardServer(Server):
        def __init__(self) -> None:
            super().__init__(command, host=bind, port=port, title="ktwizard monitor")
            self.sessions = 0

        def request_exit(self) -> None:
            # end every tab's dashboard now instead of waiting for each to notice (Ctrl-C took 14 s with a tab open)
            import signal

            from ktwizard.deploy.procid import descendants

            for pid in descendants(os.getpid()):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            super().request_exit()

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            # textual-serve's page appends "?width=..&height=.." to the socket URL: the token rides in the path
            app.router.add_get("/ws/{token}", self.handle_websocket)
            return app

        def allowed(self, request: web.Request) -> bool:
            given = request.match_info.get("token") or request.query.get("token", "")
            return token_matches(given, token) and host_allowed(request.host, is_loopback(bind), port)

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            if not self.allowed(request):
                return web.Response(status=403, text="ktwizard: open the URL with its token (printed at start)\n")
            context = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]
            # the browser reaches the page at request.host: the socket and the static files are there too
            context["app_websocket_url"] = f"ws://{request.host}/ws/{token}"
            context["config"]["static"]["url"] = f"http://{request.host}/static/"
            page = aiohttp_jinja2.render_template("app_index.html", request, context)
            page.text = offline_page(page.text or "")
            return page

        async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
            if not self.allowed(request):
                return web.Response(status=403, text="ktwizard: token required\n")
            if not origin_allowed(request.headers.get("Origin"), request.host):
                return web.Response(status=403, text="ktwizard: this socket is for the dashboard's own page\n")
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


FONT_LINK = re.compile(r"<link[^>]*fonts\.googleapis\.com[^>]*>", re.S)
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1" />'


def offline_page(html: str) -> str:
    """textual-serve's page with a viewport (a phone gets the terminal's width, not a 980-px page) and without the
    web font fetched from the internet on every load (it fails offline; the local monospace fonts are used)."""
    html = FONT_LINK.sub("", html)
    return html.replace("<head>", f"<head>\n    {VIEWPORT}", 1) if 'name="viewport"' not in html else html


PARENT_ENV = "KTWIZARD_WEB_PARENT"  # "PID:START" of the web server, for the tabs' watch (procid.watch_parent)


def mark_parent() -> None:
    from ktwizard.deploy.procid import start_ticks

    os.environ[PARENT_ENV] = f"{os.getpid()}:{start_ticks(os.getpid())}"


def new_token() -> str:
    import secrets  # here, not at the top: every dashboard process imports this module, few serve the web

    return secrets.token_urlsafe(24)
