"""clients/node/play.js when answers are lost: a call that reached the server but whose
answer did not come back (UNAVAILABLE at the client) is sent again with the same
``request_id``, so each move is applied once and the hand is played to its end; a refusal
is printed with its ErrorInfo reason from the ``grpc-status-details-bin`` trailer."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

from tests.e2e import test_node_client
from tests.e2e.test_table_affinity import API_KEY, RecordingProxy, proxy

node = test_node_client.node  # the fixture: the node binary, clients/node installed
__all__ = ["node", "proxy"]  # fixtures used by name
MUTATING = ("CreateTable", "JoinSeat", "StartHand", "PlaceCards")


def _play(node: str, address: str, key: str) -> subprocess.CompletedProcess[str]:
    play_js = str(test_node_client.NODE_DIR / "play.js")
    return subprocess.run(
        [node, play_js, address, key], capture_output=True, text=True, timeout=120, check=False
    )


def test_each_lost_answer_is_sent_again_with_its_request_id_and_applied_once(
    proxy: RecordingProxy, node: str
) -> None:
    proxy.calls.clear()
    proxy.lose = set(MUTATING)  # the first answer of each: the server applied it, none came back
    played = _play(node, proxy.address, API_KEY)
    assert played.returncode == 0, played.stderr
    assert proxy.lose == set(), "every answer to lose was sent"
    out = json.loads(played.stdout)
    assert out["moves"] == 18 and sum(p["points"] for p in out["settlement"]["players"]) == 0
    sent = [(c.method, c.request_id) for c in proxy.calls if c.method in MUTATING]
    times = Counter(sent)
    # The first request of each method twice (its answer lost, then its retry), same id.
    for method in MUTATING:
        first = next(request_id for m, request_id in sent if m == method)
        assert first and times[(method, first)] == 2, (method, sent)
    assert sum(times.values()) == len(times) + len(MUTATING)  # no other request sent twice
    assert "same request_id" in played.stderr


def test_a_refusal_is_printed_with_its_errorinfo_reason(proxy: RecordingProxy, node: str) -> None:
    proxy.lose = set()
    refused = _play(node, proxy.address, "not-the-key")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "play.js: error [UNAUTHENTICATED UNAUTHENTICATED]: CreateTable:" in refused.stderr
    assert "sent again" not in refused.stderr  # a refusal is an answer: not retried
