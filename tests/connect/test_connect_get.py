"""Connect's GET for the side-effect-free reads: the rules service's unary methods.

Each is marked ``idempotency_level = NO_SIDE_EFFECTS`` in rules_service.proto, so Connect
clients may call it as ``GET /<service>/<method>?connect=v1&encoding=json|proto&message=...``
(``base64=1`` for binary, ``compression=gzip``); anything that changes a table or records a
request stays POST only and a GET of it is refused 405 with ``allow: POST``.
"""

from __future__ import annotations

import base64
import gzip
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from email.message import Message
from types import SimpleNamespace
from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from google.rpc import error_details_pb2
from ofc_service.api.connect import snake_case
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import (
    cards_pb2,
    rules_service_connect,
    rules_service_pb2,
    settlement_feed_pb2,
    table_service_pb2,
)

SIDE_EFFECT_FREE = {
    "EvaluateRow", "ValidateBoard", "SettleHand", "SettleHands", "ListPresets", "ResolveRuleset",
    "SolveFantasyland", "DeriveDeck", "VerifyCommitment", "VerifyHandHistory", "VerifyMatch",
}  # fmt: skip
NO_SIDE_EFFECTS = descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS
ROW = {"cards": ["As", "Ad", "Kc"]}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", http_listen="127.0.0.1:0",
                          grace_seconds=1)  # fmt: skip
    with BackgroundServer(config) as server:
        yield server.http_url


def get(url: str, path: str, **query: str) -> tuple[int, Message, bytes]:
    target = f"{url}/ofcpoker.v1.{path}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(target, timeout=10) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def reason(body: bytes) -> tuple[str, str]:
    error = json.loads(body)
    for detail in error.get("details", ()):
        if detail["type"] == "google.rpc.ErrorInfo":
            raw = base64.b64decode(detail["value"] + "==")
            return error["code"], error_details_pb2.ErrorInfo.FromString(raw).reason
    return error["code"], ""


def test_exactly_the_stateless_rules_methods_are_marked_side_effect_free() -> None:
    """Nothing that changes a table or the feed, records a request or streams is marked."""
    marked = {
        (service.name, method.name)
        for module in (rules_service_pb2, table_service_pb2, settlement_feed_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
        if method.GetOptions().idempotency_level == NO_SIDE_EFFECTS
    }
    assert marked == {("RulesService", name) for name in SIDE_EFFECT_FREE}
    # the generated Connect application was regenerated from the marked protos
    service: Any = SimpleNamespace(**{snake_case(m): None for m in marked_names()})
    endpoints = rules_service_connect.RulesServiceASGIApplication(service=service)._endpoints
    levels = {path.rsplit("/", 1)[1]: e.method.idempotency_level.name
              for path, e in endpoints(service).items()}  # fmt: skip
    assert {n for n, level in levels.items() if level == "NO_SIDE_EFFECTS"} == SIDE_EFFECT_FREE


def marked_names() -> list[str]:
    return [m.name for m in rules_service_pb2.DESCRIPTOR.services_by_name["RulesService"].methods]


def test_a_rules_read_over_get_in_json(url: str) -> None:
    status, headers, body = get(url, "RulesService/EvaluateRow", connect="v1", encoding="json",
                                message=json.dumps(ROW))  # fmt: skip
    assert status == 200, body
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["hand"]["category"] == "HAND_CATEGORY_PAIR"
    # What Connect sets for caches: the answer varies with Accept-Encoding; no freshness is
    # claimed (a cache in front of the port decides), and it is not the no-cache of /healthz.
    assert "Accept-Encoding" in headers.get_all("vary", [])
    assert headers["cache-control"] is None
    same = get(url, "RulesService/EvaluateRow", connect="v1", encoding="json",
               message=json.dumps(ROW))  # fmt: skip
    assert same[2] == body  # a pure function of the query: cacheable by URL


def test_a_rules_read_over_get_in_binary_base64_and_gzip(url: str) -> None:
    request = rules_service_pb2.EvaluateRowRequest(cards=["As", "Ad", "Kc"]).SerializeToString()
    plain = base64.urlsafe_b64encode(request).decode().rstrip("=")
    status, headers, body = get(url, "RulesService/EvaluateRow", connect="v1", encoding="proto",
                                base64="1", message=plain)  # fmt: skip
    assert status == 200 and headers["content-type"] == "application/proto"
    answer = rules_service_pb2.EvaluateRowResponse.FromString(body)
    assert answer.hand.category == cards_pb2.HAND_CATEGORY_PAIR
    packed = base64.urlsafe_b64encode(gzip.compress(request)).decode()
    status, _, zipped = get(url, "RulesService/EvaluateRow", connect="v1", encoding="proto",
                            base64="1", compression="gzip", message=packed)  # fmt: skip
    assert status == 200 and zipped == body
    # every marked method answers GET; an empty message is the request with no fields
    status, _, presets = get(url, "RulesService/ListPresets", connect="v1", encoding="proto",
                             base64="1", message="")  # fmt: skip
    assert status == 200
    names = [p.name for p in rules_service_pb2.ListPresetsResponse.FromString(presets).presets]
    assert names[0] == "classic"


def test_a_rules_error_over_get_is_the_error_a_post_gets(url: str) -> None:
    status, _, body = get(url, "RulesService/EvaluateRow", connect="v1", encoding="json",
                          message=json.dumps({"cards": ["Zz", "As", "Kd"]}))  # fmt: skip
    assert status == 400 and reason(body) == ("invalid_argument", "INVALID_CARD")


@pytest.mark.parametrize(
    "path",
    ["TableService/CreateTable", "TableService/JoinSeat", "TableService/PlaceCards",
     "TableService/GetTable", "SettlementFeedService/Acknowledge",
     "RulesService/SettleHandsStream"],
)  # fmt: skip
def test_a_get_of_a_method_with_effects_or_a_stream_is_refused_405(url: str, path: str) -> None:
    """A table or feed method (a read of a table included: its answer depends on the caller's
    credentials and changes with every move) is POST only."""
    status, headers, body = get(url, path, connect="v1", encoding="json",
                                message=json.dumps({"requestId": "get-1"}))  # fmt: skip
    assert (status, headers["allow"], body) == (405, "POST", b"")


@pytest.mark.parametrize(
    ("what", "query"),
    [
        ("no message", {"connect": "v1", "encoding": "json"}),
        ("base64 that is not", {"connect": "v1", "encoding": "proto", "base64": "1",
                                "message": "%%%"}),
        ("gzip that is not", {"connect": "v1", "encoding": "proto", "base64": "1",
                              "compression": "gzip", "message": "bm90IGd6aXA"}),
        ("another protocol version", {"connect": "v2", "encoding": "json",
                                      "message": json.dumps(ROW)}),
    ],
)  # fmt: skip
def test_a_get_that_does_not_decode_is_malformed_request(
    url: str, what: str, query: dict[str, str]
) -> None:
    status, _, body = get(url, "RulesService/EvaluateRow", **query)
    assert (status, reason(body)) == (400, ("invalid_argument", "MALFORMED_REQUEST")), what


@pytest.mark.parametrize("second", ["v2", ""])  # an empty one counts too
def test_a_get_naming_its_protocol_version_twice_is_malformed_request_saying_so(
    url: str, second: str
) -> None:
    message = urllib.parse.quote(json.dumps(ROW))
    target = (
        f"{url}/ofcpoker.v1.RulesService/EvaluateRow?connect=v1&connect={second}&message={message}"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(target + "&encoding=json", timeout=10)
    body = refused.value.read()
    assert reason(body) == ("invalid_argument", "MALFORMED_REQUEST")
    assert json.loads(body)["message"] == "connect must be v1, given once, not 2 times"


def test_a_json_get_whose_message_is_not_utf8_is_malformed_request_as_its_post_is(
    url: str,
) -> None:
    message = urllib.parse.quote(b'{"cards": ["A\xffs", "Ad", "Kc"]}')
    query = f"connect=v1&encoding=json&message={message}"
    target = f"{url}/ofcpoker.v1.RulesService/EvaluateRow?{query}"
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(target, timeout=10)
    assert (raised.value.code, reason(raised.value.read())) == (
        400,
        ("invalid_argument", "MALFORMED_REQUEST"),
    )


def test_a_get_with_an_unknown_compression_is_unsupported_compression(url: str) -> None:
    status, _, body = get(url, "RulesService/ListPresets", connect="v1", encoding="proto",
                          base64="1", compression="snappy", message="")  # fmt: skip
    assert (status, reason(body)) == (501, ("unimplemented", "UNSUPPORTED_COMPRESSION"))


def test_a_get_whose_url_passes_64_kib_is_431_and_its_post_is_answered(url: str) -> None:
    """The HTTP layer refuses a request line over 64 KiB before the service sees it (HTTP 431,
    no Connect error: README says so); a GET just under it, and the same message POSTed,
    get the service's own answer."""
    for size, status in ((60_000, 400), (70_000, 431)):
        message = json.dumps({**ROW, "ruleset": {"preset": "x" * size}})
        got, _, body = get(url, "RulesService/EvaluateRow", connect="v1", encoding="json",
                           message=message)  # fmt: skip
        assert got == status
        if status == 400:
            assert json.loads(body)["code"] == "invalid_argument"
        else:
            assert body == b""
    posted = urllib.request.Request(
        f"{url}/ofcpoker.v1.RulesService/EvaluateRow", data=message.encode(),
        headers={"content-type": "application/json"},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(posted, timeout=10)
    assert json.loads(refused.value.read())["code"] == "invalid_argument"
