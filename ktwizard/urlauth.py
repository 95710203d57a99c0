"""URLs given with user:password@: the credentials leave the URL at the edge.

parse_url keeps the URL without its userinfo (what is shown, logged, recorded and passed to child processes on
their command line) and remembers the credentials as a Basic authorization header for that origin, in this process
and, through the environment, in the dashboard processes it starts. Requests to that origin carry the header; an
API key's Bearer header takes precedence where both are given.
"""

from __future__ import annotations

import base64
import json
import os
from urllib.parse import unquote, urlsplit, urlunsplit

ENV = "KTWIZARD_URL_CREDENTIALS"  # {origin: "Basic ..."}, inherited by the per-tab dashboard processes


def _origin(url: str) -> str:
    """scheme://host:port; "" for a URL that has none (a record's URL with port `abc`: no credentials match it)."""
    try:
        p = urlsplit(url)
        host, port = p.hostname or "", p.port
    except ValueError:
        return ""
    host = f"[{host}]" if ":" in host else host
    return f"{p.scheme}://{host}:{port or (443 if p.scheme == 'https' else 80)}"


def _table() -> dict[str, str]:
    try:
        data = json.loads(os.environ.get(ENV, "{}"))
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def strip_credentials(url: str) -> str:
    """The URL without user:password@; the credentials kept for requests to its origin."""
    p = urlsplit(url)
    if p.username is None and p.password is None:
        return url
    pair = f"{unquote(p.username or '')}:{unquote(p.password or '')}".encode()
    table = _table()
    table[_origin(url)] = "Basic " + base64.b64encode(pair).decode()
    os.environ[ENV] = json.dumps(table)
    netloc = p.netloc.rpartition("@")[2]
    return urlunsplit((p.scheme, netloc, p.path, p.query, p.fragment))


def headers_for(url: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """`headers` plus the Basic authorization remembered for the URL's origin (unless one is already set)."""
    out = dict(headers or {})
    basic = _table().get(_origin(url))
    if basic and not any(k.lower() == "authorization" for k in out):
        out["Authorization"] = basic
    return out


def parse_url(text: str, flag: str = "--url") -> str:
    """An http(s) URL of a server: scheme, host and optional port, nothing that would surprise httpx."""
    from urllib.parse import urlsplit

    from ktwizard.errors import BadInput
    from ktwizard.textsafe import url_shown

    try:  # an unclosed [ raises here, and the port property raises on a port that is not a number
        parts = urlsplit(text.strip())
        scheme, port, host = parts.scheme, parts.port, parts.hostname
    except ValueError:
        scheme, port, host = "", -1, None
    odd = any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text.strip())
    if odd or scheme not in ("http", "https") or not host or port == -1 or len(text) > 2048:
        raise BadInput(f"{flag} {url_shown(text)!r}: give the server's base URL, such as http://127.0.0.1:30000")
    return strip_credentials(text.strip()).rstrip("/")
