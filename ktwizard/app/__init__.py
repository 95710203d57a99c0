"""The application layer: what the product does, once, for both front ends (docs/architecture.md).

The CLI parses and prints, the wizard collects and draws; both call these workflows: resolve a target (target.py),
launch (launch.py), download → convert → launch → verify as one job (chain.py), the relaunch a failed verify check
suggests (relaunch.py), placement (placement.py), and a plan with the bench calibrations applied (planning.py).
Below it: deploy, monitor, fleet, bench and the domain."""
