"""ofc.frozen.maker: the same values as the class's own constructor, for the classes a
record is read into, and refused where it would skip a check."""

from __future__ import annotations

import dataclasses

import pytest
from ofc import engine
from ofc.cards import parse_cards
from ofc.frozen import maker
from ofc.scoring import Board


def test_a_made_value_is_the_constructed_one() -> None:
    board = maker(Board)(tuple(parse_cards("As")), tuple(parse_cards("Kd Qc")), ())
    assert board == Board(tuple(parse_cards("As")), tuple(parse_cards("Kd Qc")))
    assert hash(board) == hash(Board(tuple(parse_cards("As")), tuple(parse_cards("Kd Qc"))))
    seat = maker(engine.HandSeat)(2, 14, 1, board, (), tuple(parse_cards("2c")))
    assert seat == engine.HandSeat(2, 14, 1, board, (), tuple(parse_cards("2c")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        seat.seat = 3  # type: ignore[misc]


def test_every_field_is_asked_for() -> None:
    with pytest.raises(TypeError):
        maker(Board)((), ())


def test_fields_named_like_its_own_names_are_set() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Odd:
        made: int
        new: int
        cls: int

    assert maker(Odd)(1, 2, 3) == Odd(1, 2, 3)


def test_a_class_that_checks_its_fields_or_has_no_slots_is_refused() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("x < 0")

    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int

    with pytest.raises(TypeError, match="__post_init__"):
        maker(Checked)
    with pytest.raises(TypeError, match="slots"):
        maker(Plain)
