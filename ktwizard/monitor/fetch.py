"""One capped HTTP GET for the samplers: a hostile or broken server cannot make ktwizard read without end."""

from __future__ import annotations

from typing import Any


class TooLarge(Exception):
    pass


def get_capped(http: Any, url: str, cap: int) -> tuple[int, bytes]:
    """(status, body) of GET url through an httpx.Client (whose timeout applies); TooLarge past `cap` bytes."""
    with http.stream("GET", url) as resp:
        body = bytearray()
        for chunk in resp.iter_bytes():
            body += chunk
            if len(body) > cap:
                raise TooLarge(f"{url} sent more than {cap >> 20} MiB")
        return resp.status_code, bytes(body)
