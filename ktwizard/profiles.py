"""Deployment profiles: host + model + goals (+ the plan made from them), saved by the wizard (Ctrl+S) and read
back by `plan --profile`, `launch --profile` and `ktwizard --profile`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ktwizard.errors import BadInput
from ktwizard.host.profile import HostProfile
from ktwizard.planner.types import Goals, Plan
from ktwizard.serial import dump_json, from_data, read_structured, write_atomic


@dataclass(frozen=True)
class Profile:
    """host + model + goals + plan: enough to re-plan or relaunch later."""

    name: str
    host: HostProfile
    preset: str | None
    model_dir: str | None
    goals: Goals
    plan: Plan | None = None


def profiles_dir() -> Path:
    from ktwizard import folders

    return folders.config() / "profiles"


def save_profile(profile: Profile) -> Path:
    path = profiles_dir() / f"{profile.name}.json"
    write_atomic(path, dump_json(profile))
    return path


def load_profile(ref: str) -> Profile:
    """A profile file, or the name of one saved under the profiles folder."""
    path = Path(ref)
    if not path.exists():
        named = profiles_dir() / f"{ref}.json"
        if not named.is_file():
            raise BadInput(f"--profile {ref}: no such file and no saved profile of that name (in {profiles_dir()})")
        path = named
    profile = from_data(Profile, read_structured(path), str(path))
    if not (profile.preset or profile.model_dir):
        raise BadInput(f"{path}: the profile names no model (preset or model_dir)")
    from ktwizard.host.spec import check_saved_host

    check_saved_host(profile.host, f"{path}: host")
    from ktwizard.apikey import check_key_file

    # a profile is a file anyone could hand over: its key files get the same checks as the flag
    for key in {profile.goals.api_key_file, profile.plan.goals.api_key_file if profile.plan else None} - {None}:
        check_key_file(str(key), f"{path}: api_key_file")
    return profile
