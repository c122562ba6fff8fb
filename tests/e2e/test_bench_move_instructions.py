"""``bench.move_instructions`` counts what it says (without callgrind here: the calls it
would collect are those made inside ``sys.call_tracing``, recorded instead)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from ofc import engine
from ofc_service.application.manager import TableManager

from bench import move_instructions


def _traced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions run inside ``sys.call_tracing`` from now on."""
    names: list[str] = []
    real = sys.call_tracing

    def recording(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        names.append(getattr(function, "__qualname__", repr(function)))
        return real(function, args)

    monkeypatch.setattr(sys, "call_tracing", recording)
    return names


def test_the_place_run_counts_each_placecards_whole(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    traced = _traced(monkeypatch)
    calls = move_instructions.play(redis_url, "place", 1)
    assert calls > 0 and len(traced) == calls  # one collected call per PlaceCards, nothing else
    assert set(traced) == {"BaseEventLoop.run_until_complete"}


def test_a_stage_run_counts_that_stage_inside_the_placecards_only(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    traced = _traced(monkeypatch)
    apply, apply_action = engine.apply, TableManager.__dict__["apply_action"]
    calls = move_instructions.play(redis_url, "place", 1, "ofc.engine:apply")
    # each PlaceCards applies its move once (the StartHand and joins are not counted)
    assert len(traced) == calls and all("counted.<locals>.<lambda>" in t for t in traced)
    assert engine.apply is apply  # put back
    traced.clear()
    stage = "ofc_service.application.manager:TableManager.apply_action"  # a static method
    assert move_instructions.play(redis_url, "place", 1, stage) == calls == len(traced)
    assert TableManager.__dict__["apply_action"] is apply_action


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ("nope:x", "no such function"),
        ("ofc.engine:nope", "no such function"),
        ("ofc_service.application.manager:TableManager.run", "not a plain function"),
        ("ofc.engine:MatchState", "not a plain function"),
    ],
)
def test_a_stage_that_is_no_plain_function_ends_the_bench_at_once(stage: str, message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        move_instructions.main(["--stage", stage])
