"""probe: the live host (or a recorded one) -> HostProfile."""
