"""Stopping a deployment ktwizard started (a container it labelled, or a native process group), record included."""

from __future__ import annotations

from ktwizard.errors import BadInput, KtwizardError


def stop_deployment(name: str, timeout: int = 30) -> str:
    """Stop and remove `name`; says what was done. A record whose server is already gone is cleared.

    The labels are the truth and the record a cache: an unreadable record still finds the container labelled with
    the name and the native processes carrying it in their environment; a native record's PID is signalled only
    while it is still the process ktwizard started (procid.still_ours)."""
    from ktwizard.deploy import records
    from ktwizard.deploy.native_proc import stop_labelled, stop_owned
    from ktwizard.deploy.procid import DEPLOYMENT_ENV
    from ktwizard.render.names import check_name

    check_name(name)
    corrupt = False
    try:
        rec = records.load(name)
    except BadInput:  # a record that cannot be read: found by label below, then cleared
        rec, corrupt = None, True
    label = (DEPLOYMENT_ENV, name)
    if rec is not None and rec.kind == "native":
        why = stop_owned(rec.pid, rec.pid_start, label, grace=timeout)
        records.forget(name)
        if why is None:
            return f"stopped {name} (process group {rec.pid})"
        if why == "already gone":
            return f"{name}: its process is already gone; cleared the deployment record"
        return f"{name}: nothing signalled: {why}; cleared the deployment record"
    groups = stop_labelled(label, grace=timeout) if rec is None else []
    unreadable = " (its record was unreadable; found by its label)" if corrupt else ""
    from ktwizard.deploy.engine import connect, find_managed

    try:
        client = connect()
    except KtwizardError:
        if rec is None and not corrupt and not groups:
            raise records.no_deployment(name) from None  # no record, no process: a name, not the engine, is wrong
        raise
    try:
        container = find_managed(client, name)
    except BadInput as exc:
        if rec is None and not corrupt and not groups and exc.message.startswith("no container"):
            raise records.no_deployment(name) from None
        if rec is None and not corrupt and not groups:
            raise
        records.forget(name)
        if groups:
            return f"stopped {name} (process group {', '.join(map(str, groups))}){unreadable}"
        return f"{name}: its container is already gone; cleared the deployment record"
    container.stop(timeout=timeout)
    container.remove(force=True)
    records.forget(name)
    return f"stopped and removed {name}{unreadable}"
