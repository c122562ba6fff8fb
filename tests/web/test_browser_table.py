"""The browser table (clients/web) in Chromium against a live service.

Each test starts a server (Redis tables) with its HTTP port, which serves Connect and the
bundle (tests/web/conftest.py); the ``web_url`` fixture is the one place that says where the
browser goes.
Then ``node --test`` runs a playwright-core script from clients/web/test/browser, which
drives Debian's chromium (installed with apt when missing, scripts/ensure_chromium.sh).
Nothing here skips: without node, npm or chromium the test fails and says what is missing.

Screenshots of each phase of a hand and the hand histories land in clients/web/artifacts/
(``OFC_WEB_ARTIFACTS`` overrides; gitignored).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ofc.rulesets import get_ruleset
from ofc_service.server.background import BackgroundServer

from tests.e2e.tablekit import fantasyland_plan
from tests.e2e.test_table_fantasyland import seed_source
from tests.web.conftest import web_config

ROOT = Path(__file__).resolve().parents[2]
WEB_DIR = ROOT / "clients" / "web"
ARTIFACTS = Path(os.environ.get("OFC_WEB_ARTIFACTS", WEB_DIR / "artifacts"))
CHROMIUM = os.environ.get("OFC_CHROMIUM", "/usr/bin/chromium")
FANTASYLAND_SEED = "browser e2e fantasyland"


def _run(args: list[str], *, timeout: float, env: dict[str, str] | None = None,
         cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, check=False, env=env, cwd=cwd
    )


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium, installed with apt-get when it is missing (CI runs as root)."""
    got = _run(["bash", str(ROOT / "scripts" / "ensure_chromium.sh")], timeout=900)
    if got.returncode != 0:
        pytest.fail(f"chromium is needed for the browser test and could not be installed:\n"
                    f"{got.stdout}{got.stderr}")  # fmt: skip
    return CHROMIUM


@pytest.fixture(scope="module")
def browser_tests() -> Path:
    """clients/web installed from its lock file and the browser tests built for node."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm (Node.js >= 20) are needed for the browser test")
    check_web = str(ROOT / "scripts" / "check_web.sh")
    installed = _run(["bash", check_web, "--install-only"], timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    built = _run(["node", "scripts/build-tests.mjs"], timeout=120, cwd=WEB_DIR)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (WEB_DIR / "dist" / "index.html").is_file(), "clients/web/dist is missing"
    return WEB_DIR / ".test-build" / "browser"


def run_browser_test(script: Path, web_url: str, chromium: str, **extra: str) -> str:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OFC_WEB_URL": web_url, "OFC_CHROMIUM": chromium,
           "OFC_WEB_ARTIFACTS": str(ARTIFACTS), **extra}  # fmt: skip
    got = _run(["node", "--test", "--test-reporter=tap", str(script)], timeout=420, env=env,
               cwd=WEB_DIR)  # fmt: skip
    out = got.stdout + got.stderr
    assert got.returncode == 0, out
    assert "# pass 1" in got.stdout and "# fail 0" in got.stdout, out
    return got.stdout


def test_two_browsers_play_a_pineapple_hand(
    browser_tests: Path, web_url: str, chromium: str
) -> None:
    """A full Pineapple hand, one clock run out; settlement equal to SettleHand's, "Deal
    verified" on both pages, neither page's responses or DOM holding the other's hidden cards."""
    out = run_browser_test(browser_tests / "table.e2e.mjs", web_url, chromium)
    assert "hand played in" in out


def test_a_fantasyland_hand_set_with_the_solvers_suggestion(
    browser_tests: Path, server: BackgroundServer, web_url: str, chromium: str, tmp_path: Path
) -> None:
    """Hand 1 is dealt from a seed with which one seat earns Fantasyland by the plan the test
    gives its browser; in hand 2 that browser sets its cards with "Suggest" (the solver)
    while the other plays street by street and sees the Fantasyland board face down."""
    plan = fantasyland_plan(get_ruleset("pineapple"), 2, FANTASYLAND_SEED.encode())
    server.server.sweeper.manager.server_seed = seed_source(plan.server_seed)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({
        "seat": plan.seat,
        "fantasyland_cards": plan.fantasyland_cards,
        "moves": {str(street): {"rows": rows, "discard": discard}
                  for street, (rows, discard) in plan.moves.items()},
        "client_seed": FANTASYLAND_SEED,
    }))  # fmt: skip
    run_browser_test(browser_tests / "fantasyland.e2e.mjs", web_url, chromium,
                     OFC_WEB_PLAN=str(plan_file))  # fmt: skip


def test_a_page_offline_for_a_moment_catches_up(
    browser_tests: Path, web_url: str, chromium: str
) -> None:
    """A spectator's browser goes offline while a player sits down: the page shows no error
    for the table read it could not send, and shows the player soon after it is back online
    (well before its 20 s silent-stream check), its connection notice gone."""
    out = run_browser_test(browser_tests / "offline.e2e.mjs", web_url, chromium)
    assert "caught up" in out


def test_lost_answers_are_retried_under_their_ids_and_a_seat_token_recovered(
    browser_tests: Path, web_url: str, chromium: str
) -> None:
    """The page's proxy loses answers after the service gave them: a create and a join are
    retried under their request ids (one table, the seat's token); a join left unanswered
    through every retry is sent again when the table shows its player seated, and its seat
    token comes back."""
    run_browser_test(browser_tests / "lost-answers.e2e.mjs", web_url, chromium)


def test_a_player_leaving_after_the_hand_is_gone_when_it_ends(
    browser_tests: Path, web_url: str, chromium: str
) -> None:
    """A page asks to leave during a hand (and withdraws it, and asks again): its seat and
    token hold until the hand's last move, which vacates the seat; the page then watches on
    as a spectator, without an error, and the other player cannot deal again alone."""
    run_browser_test(browser_tests / "leave.e2e.mjs", web_url, chromium)


def test_a_turn_played_in_another_tab_is_said_in_a_players_words_and_cleared(
    browser_tests: Path, web_url: str, chromium: str
) -> None:
    """A second tab of the same seat that never heard the first tab's move tries the turn:
    refused, the page reads the table again and says the turn was played first (not the
    service's STALE_VERSION), and the notice goes once the table moves on."""
    run_browser_test(browser_tests / "two-tabs.e2e.mjs", web_url, chromium)


def test_dead_ends_say_what_happened_and_offer_the_way_on(
    browser_tests: Path, web_url: str, chromium: str
) -> None:
    """A seat left from another tab shows a notice on the page (not only to screen readers);
    a join link to a taken seat, or to a seat the table lacks, says so; a table that is not
    there says so in words and links back to the lobby."""
    run_browser_test(browser_tests / "dead-ends.e2e.mjs", web_url, chromium)


def test_a_page_whose_connections_are_retired_says_nothing_and_misses_nothing(
    browser_tests: Path, redis_url: str, chromium: str
) -> None:
    """A server retiring its HTTP connections after 1.5 s (and 0.5 s of grace): a spectator's
    page on a quiet table has its Watch ended CONNECTION_RETIRED again and again; it reopens
    it at once, never says its connection is lost, and shows a player who sits down."""
    config = web_config(redis_url, grace_seconds=0.5, max_connection_age_seconds=1.5)
    with BackgroundServer(config) as server:
        out = run_browser_test(browser_tests / "retired.e2e.mjs", server.http_url, chromium)
    assert "the Watch opened" in out
