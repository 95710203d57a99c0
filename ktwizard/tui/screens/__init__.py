"""The wizard's screens: Host -> Model -> Plan -> Launch -> Monitor. Each calls the same functions the CLI does."""

from ktwizard.tui.screens.host import HostScreen
from ktwizard.tui.screens.launch import LaunchScreen
from ktwizard.tui.screens.model import ModelScreen
from ktwizard.tui.screens.plan import PlanScreen

__all__ = ["HostScreen", "LaunchScreen", "ModelScreen", "PlanScreen"]
