"""What the wizard knows so far, and saving it as a deployment profile (atomically, under the config directory)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the wizard paints its first screen before the planner is imported
    from ktwizard.deploy.records import Deployment
    from ktwizard.host.profile import HostProfile
    from ktwizard.planner.types import Goals, Plan
    from ktwizard.profiles import Profile


def _goals() -> Goals:
    from ktwizard.planner.types import Goals

    return Goals()


@dataclass
class WizardState:
    host: HostProfile | None = None
    host_ref: str | None = None
    preset: str | None = None
    model_dir: str | None = None
    goals: Goals = field(default_factory=_goals)
    plan: Plan | None = None
    launched: Deployment | None = None  # what this wizard started: the monitor key and the farewell name it
    routing: str | None = None  # the routing recording `b` made on the launched server
    rate_before: float | None = None  # its decode rate then, to compare a relaunch with
    _model: object | None = field(default=None, repr=False)
    _model_key: tuple | None = field(default=None, repr=False)

    def model(self):
        """The resolved model (spec, parsers, recipe).

        Inspecting a checkpoint reads every header, so it happens once per choice.
        """
        from ktwizard.inputs import resolve_model

        key = (self.preset, self.model_dir)
        if self._model_key != key:
            self._model, self._model_key = resolve_model(self.preset, self.model_dir), key
        return self._model


def save_profile(state: WizardState, name: str) -> Path:
    from ktwizard.profiles import Profile
    from ktwizard.profiles import save_profile as save

    assert state.host is not None
    return save(Profile(name, state.host, state.preset, state.model_dir, state.goals, state.plan))


def state_from(profile: Profile) -> WizardState:
    return WizardState(host=profile.host, preset=profile.preset, model_dir=profile.model_dir, goals=profile.goals)


class WizardHost(Protocol):
    """What the wizard's screens need from their app (the app is WizardApp; screens never import it)."""

    state: WizardState
    gpus: bool
