"""Fleet constants the command line needs before any planning (kept apart so `ktwizard --help` stays light)."""

POLICIES = ("cache_aware", "round_robin", "power_of_two", "random")
ROUTER_METRICS_PORT = 29000
DEFAULT_ROUTER_IMAGE = "sglang-router:local"
