"""The development bridge the browser test runs (tests/web/connect_bridge.py): Connect JSON
calls reach the gRPC server with their headers as metadata, errors come back with their
code and google.rpc details, and only the bundle's own files are served."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from google.rpc import error_details_pb2


def call(url: str, method: str, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.{method}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers["content-type"], answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"], error.read()


def test_an_error_keeps_its_code_and_details(web_url: str) -> None:
    status, body = call(web_url, "RulesService/EvaluateRow", {"cards": ["Zz", "As", "Kd"]})
    assert status == 400
    assert body["code"] == "invalid_argument"
    assert body["message"] == "invalid card: 'Zz'"
    kinds = {d["type"]: d["value"] for d in body["details"]}
    info = error_details_pb2.ErrorInfo.FromString(
        base64.b64decode(kinds["google.rpc.ErrorInfo"] + "==")
    )
    assert (info.reason, info.domain, info.metadata["field"]) == (
        "INVALID_CARD",
        "ofc.poker",
        "cards[0]",
    )
    assert "google.rpc.BadRequest" in kinds


def test_headers_travel_as_metadata(web_url: str) -> None:
    status, created = call(web_url, "TableService/CreateTable", {"requestId": "bridge-1"})
    assert status == 200
    table_id = created["tableId"]
    join = {"tableId": table_id, "seat": 0, "playerId": "ann", "requestId": "bridge-2"}
    status, joined = call(web_url, "TableService/JoinSeat", {**join, "expectedVersion": "1"})
    assert status == 200, joined
    token = joined["seatToken"]
    status, mine = call(web_url, "TableService/GetTable", {"tableId": table_id},
                        **{"x-ofc-seat-token": token})  # fmt: skip
    assert status == 200 and mine["table"]["viewerSeat"] == 0
    status, refused = call(web_url, "TableService/GetTable", {"tableId": table_id},
                           **{"x-ofc-seat-token": f"st_{table_id}.made-up"})  # fmt: skip
    assert (status, refused["code"]) == (401, "unauthenticated")
    status, spectator = call(web_url, "TableService/GetTable", {"tableId": table_id})
    assert status == 200 and "viewerSeat" not in spectator["table"]


def test_only_the_bundle_is_served(web_url: str) -> None:
    status, kind, page = get(f"{web_url}/")
    assert status == 200 and kind.startswith("text/html") and b"app.js" in page
    status, kind, _ = get(f"{web_url}/app.js")
    assert status == 200 and "javascript" in kind
    for path in (
        "/../pyproject.toml",
        "/%2e%2e/pyproject.toml",
        "/nothing.js",
        "/ofcpoker.v1.Nope/X",
    ):
        assert get(f"{web_url}{path}")[0] == 404, path
