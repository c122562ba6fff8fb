"""The README's table session (examples/table_session.py) runs against a live server, and
the README shows that very file."""

from __future__ import annotations

from pathlib import Path

from ofc_service.server.background import BackgroundServer

from tests.e2e.tablekit import run_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "table_session.py"


def example_body() -> str:
    """The example without its module docstring: what the README shows."""
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.startswith('"""')
    return text[text.index('"""', 3) + 3 :].lstrip("\n")


def test_the_readme_shows_the_example_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Live tables") :]
    assert "```python\n" + example_body() + "```\n" in section


def test_the_example_plays_a_hand_to_settlement_against_a_live_server(
    server: BackgroundServer,
) -> None:
    """The e2e package's server is what ``make run`` starts: in-memory store, no API keys."""
    out = run_example(EXAMPLE, server.address)
    assert "with ann in seat 0 and bob in seat 1" in out
    assert "ann's watch: snapshot at version 3 then every event" in out
    assert "ann's watch: hand_settled" in out
    results = [line for line in out.splitlines() if line.startswith(("ann:", "bob:"))]
    assert len(results) == 2
    points = [int(line.split()[1]) for line in results]
    assert sum(points) == 0
    assert out.rstrip().endswith("matches the commitment: True")
    # ann's stream shows her own dealt cards and never bob's
    dealt = [line for line in out.splitlines() if "CardsDealtEvent(seat=" in line]
    assert dealt and all(("seat=0" in d) == ("cards=()" not in d) for d in dealt)
