"""The wheel carries the top-level presets/ and assets/ as ktwizard/bundled/ (ktwizard.bundled finds either place)."""

from setuptools import find_packages, setup

DATA = {"ktwizard.bundled.presets": "presets", "ktwizard.bundled.assets": "assets"}

setup(
    packages=[*find_packages(include=["ktwizard", "ktwizard.*"]), *DATA],
    package_dir=DATA,
    package_data={
        "ktwizard.bundled.presets": ["models/*.yaml", "recipes/*.yaml"],
        "ktwizard.bundled.assets": ["*.json", "hosts/*.yaml", "docker/*", "docker/scripts/*.py", "grafana/*.json"],
        "ktwizard.tui": ["*.tcss"],
    },
)
