"""The Makefile's two commands for a fresh machine: ``make run`` installs the package with its
runtime dependencies only, ``make test`` the development tools too (``make -n``: what each
would run in a virtualenv that does not exist yet)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.deploy.deployfiles import REPO


def planned(target: str, venv: Path) -> list[str]:
    make = shutil.which("make")
    assert make is not None, "make is needed (the README's two commands are make targets)"
    result = subprocess.run(
        [make, "-n", "-C", str(REPO), target, f"VENV={venv}"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return [line for line in result.stdout.splitlines() if "pip install" in line]


def test_make_run_installs_only_what_serving_needs(tmp_path: Path) -> None:
    installs = planned("run", tmp_path / "venv")
    assert installs[-1].endswith("pip install --quiet -e ."), installs
    assert not any("[dev]" in line for line in installs)


def test_make_test_installs_the_development_tools(tmp_path: Path) -> None:
    installs = planned("test", tmp_path / "venv")
    assert installs[-1].endswith("pip install --quiet -e '.[dev]'"), installs
