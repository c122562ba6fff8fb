"""``python -m bench`` (what ``make bench`` runs): its sections, each in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_sections_named_run_in_turn_and_print_their_figures_and_nothing_else() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "redis_exchange", "miss_path"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("== redis_exchange:") < out.index("direct, one clock")
    assert out.index("direct, one clock") < out.index("== miss_path:")
    assert out.index("== miss_path:") < out.index("alternating / affine")
    assert "Traceback" not in result.stderr, result.stderr


def test_an_unknown_section_is_refused_before_anything_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "redis_exchange", "nonsense"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "unknown section(s): nonsense" in result.stderr
    assert "==" not in result.stdout
