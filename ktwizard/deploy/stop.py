"""Stopping a deployment ktwizard started (a container it labelled, or a native process group), record included."""

from __future__ import annotations

from ktwizard.errors import BadInput, KtwizardError


def stop_deployment(name: str, timeout: int = 30) -> str:
    """Stop and remove `name`; says what was done. A record whose server is already gone is cleared.

    The labels are the truth and the record a cache: an unreadable record still finds the container labelled with
    the name and the native processes carrying it in their environment; a native record's PID is signalled only
    while it is still the process ktwizard started (procid.still_ours).

    One stop of a name at a time (namelock.stop_lock): of several at once, one stops the server and the others,
    having waited for it, find nothing left and say it was already stopped (all of them said "stopped")."""
    from ktwizard.deploy import records
    from ktwizard.deploy.namelock import stop_lock
    from ktwizard.render.names import check_name

    check_name(name)
    with stop_lock(name) as waited:
        try:
            return _stop(name, timeout)
        except records.NoDeployment:
            if waited:
                return f"{name}: already stopped (by another ktwizard stop, which this one waited for)"
            raise


def _stop(name: str, timeout: int) -> str:
    from ktwizard.deploy import records
    from ktwizard.deploy.native_proc import stop_labelled, stop_owned
    from ktwizard.deploy.procid import DEPLOYMENT_ENV

    corrupt = False
    try:
        rec = records.load(name)
    except BadInput:  # a record that cannot be read: found by label below, then cleared
        rec, corrupt = None, True
    label = (DEPLOYMENT_ENV, name)
    if rec is not None and rec.kind == "native":
        why = stop_owned(rec.pid, rec.pid_start, label, grace=timeout)
        if why is None:
            records.forget(name)
            return f"stopped {name} (process group {rec.pid})"
        # the record's PID is not the server's: the label still finds the server, which must not outlive its record
        groups = stop_labelled(label, grace=timeout)
        records.forget(name)
        if groups:
            return f"stopped {name} (process group {', '.join(map(str, groups))}; found by its label: {why})"
        if why == "already gone":
            return f"{name}: its process is already gone; cleared the deployment record"
        return f"{name}: nothing signalled: {why}; cleared the deployment record"
    groups = stop_labelled(label, grace=timeout) if rec is None else []
    unreadable = " (its record was unreadable; found by its label)" if corrupt else ""
    if groups:  # a native server found by its label: Docker has nothing to say about it
        records.forget(name)
        return f"stopped {name} (process group {', '.join(map(str, groups))}){unreadable}"
    from ktwizard.deploy.engine import connect, find_managed

    try:
        container = find_managed(connect(), name)
    except BadInput as exc:
        if rec is None and not corrupt:
            raise records.no_deployment(name) if exc.message.startswith("no container") else exc from None
        records.forget(name)
        return f"{name}: its container is already gone; cleared the deployment record"
    except KtwizardError:
        if rec is None and not corrupt:  # no record, no labelled process: the name is wrong, not the engine
            raise records.no_deployment(name) from None
        if not corrupt:
            raise
        # a torn record and no Docker: no labelled process runs, so nothing of it can be running natively
        records.forget(name)
        return (
            f"{name}: its record was unreadable, no process carries its label, Docker is not reachable; record cleared"
        )
    container.stop(timeout=timeout)
    container.remove(force=True)
    records.forget(name)
    return f"stopped and removed {name}{unreadable}"
