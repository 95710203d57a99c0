"""Stopping a deployment ktwizard started (a container it labelled, or a native process group), record included."""

from __future__ import annotations

from ktwizard.errors import BadInput


def stop_deployment(name: str, timeout: int = 30) -> str:
    """Stop and remove `name`; says what was done. A record whose server is already gone is cleared."""
    from ktwizard.deploy import records
    from ktwizard.render.docker import check_name

    check_name(name)
    try:
        rec = records.load(name)
        kept = rec is not None
    except BadInput:  # a record that cannot be read is still cleared below
        rec, kept = None, True
    if rec is not None and rec.kind == "native" and rec.pid:
        from ktwizard.deploy.native_proc import stop_group

        stop_group(rec.pid)
        records.forget(name)
        return f"stopped {name} (process group {rec.pid})"
    from ktwizard.deploy.engine import connect, find_managed

    try:
        container = find_managed(connect(), name)
    except BadInput:
        if not kept:
            raise
        records.forget(name)
        return f"{name}: its container is already gone; cleared the deployment record"
    container.stop(timeout=timeout)
    container.remove(force=True)
    records.forget(name)
    return f"stopped and removed {name}"
