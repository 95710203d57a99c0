"""What the wizard knows so far, and saving it as a deployment profile (atomically, under the config directory)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, overload

if TYPE_CHECKING:  # the wizard paints its first screen before the planner is imported
    from ktwizard.deploy.records import Deployment
    from ktwizard.host.profile import HostProfile
    from ktwizard.planner.types import Goals, Plan
    from ktwizard.profiles import Profile


class _DefaultGoals:
    """The goals field: Goals() made when first read, not when the state is made, so the wizard paints its Host
    step before the planner (which defines Goals) is imported."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_value"

    @overload
    def __get__(self, obj: None, owner: type) -> None: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Goals: ...
    def __get__(self, obj: object | None, owner: type) -> Goals | None:
        if obj is None:
            return None  # the dataclass's default: the field is filled on first read
        value = obj.__dict__.get(self._slot)
        if value is None:
            from ktwizard.planner.types import Goals

            value = obj.__dict__[self._slot] = Goals()
        return value

    def __set__(self, obj: object, value: Goals | None) -> None:
        obj.__dict__[self._slot] = value


@dataclass
class WizardState:
    host: HostProfile | None = None
    host_ref: str | None = None
    preset: str | None = None
    model_dir: str | None = None
    goals: _DefaultGoals = _DefaultGoals()
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
