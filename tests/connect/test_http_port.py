"""The HTTP port seen with plain HTTP requests (what curl and a browser send).

Connect JSON calls carry the same headers as gRPC metadata and return the same errors (code,
message, ErrorInfo, BadRequest) and request id; CORS lets only the configured origins in;
``/healthz`` answers like gRPC health; only the web table's own files are served; and a
stopping server ends a Connect Watch with the same UNAVAILABLE / SERVER_SHUTTING_DOWN as a
gRPC one, and stops serving the port.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import hyperframe.frame
import pytest
from google.rpc import error_details_pb2
from hypercorn.asyncio import tcp_server as hypercorn_tcp
from hypercorn.asyncio.worker_context import EventWrapper
from hypercorn.events import Closed, RawData
from hypercorn.protocol import h2 as hypercorn_h2
from ofc_client import TableClient
from ofc_service.api.json_errors import MAX_REASON_CHARS
from ofc_service.metrics import GRPC_HANDLED, PROTOCOLS
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofc_service.server.http import (
    UNREAD_BYTES_MAX,
    HttpServer,
    _Base64Pieces,
    _close_connections_their_client_does_not_read,
    _drop_data_of_closed_streams,
    _end_streams_their_client_does_not_read,
)
from ofcpoker.v1 import cards_pb2, rules_service_pb2, table_service_pb2

from tests.conftest import self_signed_certificate
from tests.connect.conftest import serve, stop
from tests.connect.http_stub import HttpRpcError, HttpStub, b64_quanta_decode, envelope
from tests.e2e.tablekit import Watcher

ORIGIN = "https://casino.example"


def config(**changes: Any) -> ServerConfig:
    base = {"listen": "127.0.0.1:0", "metrics_listen": "", "http_listen": "127.0.0.1:0"}
    return ServerConfig(**{"grace_seconds": 1, **base, **changes})


@pytest.fixture(scope="module")
def running() -> Iterator[BackgroundServer]:
    with BackgroundServer(config(cors_origins=f"{ORIGIN}, http://localhost:5173")) as server:
        yield server


@pytest.fixture(scope="module")
def url(running: BackgroundServer) -> str:
    return running.http_url


def call(url: str, method: str, body: Any, **headers: str) -> tuple[int, Any, Message]:
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.{method}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read()), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def get(url: str, method: str = "GET", **headers: str) -> tuple[int, Message, bytes]:
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def details(body: dict[str, Any]) -> dict[str, bytes]:
    return {d["type"]: base64.b64decode(d["value"] + "==") for d in body.get("details", ())}


def error_info(body: dict[str, Any]) -> error_details_pb2.ErrorInfo:
    return error_details_pb2.ErrorInfo.FromString(details(body)["google.rpc.ErrorInfo"])


def test_an_error_has_the_code_message_and_details_a_grpc_client_gets(url: str) -> None:
    status, body, headers = call(url, "RulesService/EvaluateRow", {"cards": ["Zz", "As", "Kd"]},
                                 **{"x-request-id": "curl-1"})  # fmt: skip
    assert (status, body["code"]) == (400, "invalid_argument")
    assert body["message"] == "invalid card: 'Zz'"
    assert headers["x-request-id"] == "curl-1"
    found = details(body)
    info = error_details_pb2.ErrorInfo.FromString(found["google.rpc.ErrorInfo"])
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "INVALID_CARD", "ofc.poker", {"field": "cards[0]"})  # fmt: skip
    bad = error_details_pb2.BadRequest.FromString(found["google.rpc.BadRequest"])
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("cards[0]", "invalid card: 'Zz'")
    ]


def test_seat_tokens_and_api_keys_travel_as_the_same_headers(url: str) -> None:
    status, created, _ = call(url, "TableService/CreateTable", {"requestId": "h-1"})
    assert status == 200
    table_id = created["tableId"]
    join = {"tableId": table_id, "seat": 0, "playerId": "ann", "requestId": "h-2"}
    status, joined, _ = call(url, "TableService/JoinSeat", {**join, "expectedVersion": "1"})
    assert status == 200, joined
    token = joined["seatToken"]
    for headers in ({"x-ofc-seat-token": token}, {"authorization": f"Bearer {token}"}):
        status, mine, _ = call(url, "TableService/GetTable", {"tableId": table_id}, **headers)
        assert status == 200 and mine["table"]["viewerSeat"] == 0, headers
    made_up = {"x-ofc-seat-token": f"st_{table_id}.made-up"}
    status, refused, _ = call(url, "TableService/GetTable", {"tableId": table_id}, **made_up)
    assert (status, refused["code"]) == (401, "unauthenticated")
    status, spectator, _ = call(url, "TableService/GetTable", {"tableId": table_id})
    assert status == 200 and "viewerSeat" not in spectator["table"]


def test_cors_lets_in_the_configured_origins_only(url: str) -> None:
    preflight = {"origin": ORIGIN, "access-control-request-method": "POST",
                 "access-control-request-headers": "content-type, x-ofc-seat-token"}  # fmt: skip
    status, headers, _ = get(f"{url}/ofcpoker.v1.RulesService/SettleHand", "OPTIONS", **preflight)
    assert status == 204
    assert headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in headers["access-control-allow-methods"]
    allowed = {h.strip() for h in headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "x-ofc-seat-token", "x-ofc-api-key", "connect-protocol-version",
            "x-grpc-web", "grpc-timeout", "connect-timeout-ms"} <= allowed  # fmt: skip
    exposed = {h.strip() for h in headers["access-control-expose-headers"].split(",")}
    assert {"grpc-status", "grpc-message", "grpc-status-details-bin", "x-request-id"} <= exposed

    status, _, answer = call(url, "RulesService/ListPresets", {}, origin=ORIGIN)
    assert status == 200 and answer["access-control-allow-origin"] == ORIGIN
    assert "x-request-id" in answer["access-control-expose-headers"]

    other = {**preflight, "origin": "https://elsewhere.example"}
    status, headers, _ = get(f"{url}/ofcpoker.v1.RulesService/SettleHand", "OPTIONS", **other)
    assert status == 403 and "access-control-allow-origin" not in headers
    status, _, answer = call(url, "RulesService/ListPresets", {}, origin=other["origin"])
    assert status == 200 and "access-control-allow-origin" not in answer  # the browser blocks it
    # Every answer varies with the Origin, with none at all too: a shared cache keeps the
    # answer without CORS headers from a browser on an origin let in.
    for origin in ({"origin": ORIGIN}, {"origin": other["origin"]}, {}):
        status, _, answer = call(url, "RulesService/ListPresets", {}, **origin)
        assert status == 200 and "Origin" in answer.get_all("vary", []), origin
    status, answer, _ = get(
        f"{url}/ofcpoker.v1.RulesService/ListPresets?encoding=json&message=%7B%7D"
    )
    assert status == 200 and "Origin" in answer.get_all("vary", [])


def test_no_cors_by_default() -> None:
    with BackgroundServer(config()) as server:
        preflight = {"origin": ORIGIN, "access-control-request-method": "POST"}
        status, headers, _ = get(
            f"{server.http_url}/ofcpoker.v1.RulesService/SettleHand", "OPTIONS", **preflight
        )
        assert status == 403 and "access-control-allow-origin" not in headers


def test_healthz_answers_as_grpc_health(url: str) -> None:
    assert get(f"{url}/healthz")[::2] == (200, b"SERVING\n")
    assert get(f"{url}/healthz?service=ofcpoker.v1.TableService")[::2] == (200, b"SERVING\n")
    assert get(f"{url}/healthz?service=nope.Nope")[::2] == (404, b"SERVICE_UNKNOWN\n")


def test_only_the_bundle_is_served(url: str) -> None:
    status, headers, page = get(f"{url}/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b"app.js" in page
    status, headers, _ = get(f"{url}/app.js")
    assert status == 200 and headers["content-type"] == "text/javascript; charset=utf-8"
    for path in ("/../pyproject.toml", "/%2e%2e/pyproject.toml", "/nothing.js", "/web/app.js"):
        assert get(f"{url}{path}")[0] == 404, path
    assert get(f"{url}/ofcpoker.v1.Nope/X", "POST")[0] == 404


def test_the_page_runs_only_its_own_code_and_is_not_framed(url: str) -> None:
    for path in ("/", "/index.html", "/app.js", "/app.css"):
        status, headers, _ = get(f"{url}{path}")
        assert status == 200, path
        policy = dict(
            directive.strip().split(" ", 1)
            for directive in headers["content-security-policy"].split(";")
        )
        assert policy["default-src"] == "'none'", path
        assert policy["script-src"] == policy["style-src"] == policy["connect-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'" and policy["base-uri"] == "'none'"
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-content-type-options"] == "nosniff"


def test_a_websocket_upgrade_is_refused_forbidden_on_every_path(url: str) -> None:
    base = urllib.parse.urlsplit(url)
    for path in ("/ofcpoker.v1.TableService/Watch", "/", "/healthz", "/nothing"):
        conn = http.client.HTTPConnection(base.hostname or "", base.port, timeout=10)
        try:
            conn.request("GET", path, headers={
                "connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
                "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
            })  # fmt: skip
            assert conn.getresponse().status == 403, path
        finally:
            conn.close()


def test_a_percent_encoded_path_is_not_served(url: str) -> None:
    # What a proxy filtering by path sees is what is served: %2F is not a slash here.
    body = json.dumps({"cards": ["As", "Kd", "Qh"]}).encode()
    for path in (
        "/ofcpoker.v1.RulesService%2FEvaluateRow",
        "/ofcpoker.v1.RulesService/%45valuateRow",
        "/ofcpoker.v1.SettlementFeedService%2FAcknowledge",
        "/%61pp.js",
        "/healthz%3F",
    ):
        request = urllib.request.Request(
            f"{url}{path}", data=body, headers={"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 404, path
    status, answer, _ = call(url, "RulesService/EvaluateRow", {"cards": ["As", "Kd", "Qh"]})
    assert status == 200 and answer["hand"]["category"] == "HAND_CATEGORY_HIGH_CARD"


def test_a_stopping_server_ends_a_connect_watch_with_server_shutting_down() -> None:
    server = BackgroundServer(config()).start()
    url = server.http_url
    _, created, _ = call(url, "TableService/CreateTable", {"requestId": "w-1"})
    envelope = json.dumps({"tableId": created["tableId"]}).encode()
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.TableService/Watch",
        data=b"\0" + len(envelope).to_bytes(4, "big") + envelope,
        headers={"content-type": "application/connect+json"},
    )
    messages: list[tuple[int, Any]] = []
    snapshot = threading.Event()

    def read() -> None:
        with urllib.request.urlopen(request, timeout=20) as stream:
            while header := stream.read(5):
                flags, size = header[0], int.from_bytes(header[1:], "big")
                messages.append((flags, json.loads(stream.read(size))))
                snapshot.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert snapshot.wait(10), "no snapshot"
    server.stop(grace=1)
    reader.join(10)
    assert not reader.is_alive()
    (first_flags, first), (end_flags, end) = messages
    assert first_flags == 0 and "snapshot" in first
    assert end_flags == 2  # Connect's end-of-stream message, with the error
    assert end["error"]["code"] == "unavailable"
    info = error_info(end["error"])
    assert info.reason == "SERVER_SHUTTING_DOWN"
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/healthz", timeout=2)


@pytest.mark.parametrize("content_type", ["application/connect+json", "application/connect+proto"])
def test_a_connect_watch_on_a_retired_connection_ends_with_connection_retired(
    content_type: str,
) -> None:
    """A Watch over HTTP/1.1 on a connection past its age and grace was cut in the middle of
    its response (no Connect end message: a client read a broken connection, IncompleteRead,
    not "reconnect"); it ends with UNAVAILABLE, CONNECTION_RETIRED, then its connection is
    closed: the client reconnects at once and resumes after its last event."""
    aged = config(max_connection_age_seconds=0.5, grace_seconds=0.3)
    server = BackgroundServer(aged).start()
    try:
        url = server.http_url
        _, created, _ = call(url, "TableService/CreateTable", {"requestId": "r-1"})
        table_id = created["tableId"]
        if content_type.endswith("json"):
            body = json.dumps({"tableId": table_id}).encode()
        else:
            body = table_service_pb2.WatchRequest(table_id=table_id).SerializeToString()
        request = urllib.request.Request(
            f"{url}/ofcpoker.v1.TableService/Watch",
            data=b"\0" + len(body).to_bytes(4, "big") + body,
            headers={"content-type": content_type},
        )
        flags: list[int] = []
        ends: list[Any] = []
        with urllib.request.urlopen(request, timeout=20) as stream:
            while header := stream.read(5):  # IncompleteRead here: cut mid-response
                flags.append(header[0])
                message = stream.read(int.from_bytes(header[1:], "big"))
                if header[0] & 2:
                    ends.append(json.loads(message))
            assert stream.read() == b""  # and the chunked answer ended in full
        assert flags == [0, 2]  # the snapshot, then Connect's end-of-stream message
        (end,) = ends
        assert end["error"]["code"] == "unavailable"
        assert error_info(end["error"]).reason == "CONNECTION_RETIRED"
    finally:
        server.stop(grace=1)


@contextlib.contextmanager
def _aged_http_port(age_s: float, grace_s: float) -> Iterator[str]:
    """The address of a server's HTTP port whose connections are retired past ``age_s``."""
    server = BackgroundServer(
        config(max_connection_age_seconds=age_s, grace_seconds=grace_s)
    ).start()
    try:
        yield f"127.0.0.1:{urllib.parse.urlsplit(server.http_url).port}"
    finally:
        server.stop(grace=1)


def test_a_grpc_client_watching_through_the_http_port_across_retirements_misses_nothing() -> None:
    """The Python client (grpcio, HTTP/2 without TLS) watching a table through the HTTP port
    while its connections are retired every half second: each stream ends (CONNECTION_RETIRED
    in gRPC's trailers), the watch reopens after its last event, and every event of the
    table arrives once, in order."""
    with _aged_http_port(0.5, 0.2) as address, TableClient(address) as dealer:
        table_id = dealer.create_table(seats=2).table_id
        watcher = Watcher(dealer, table_id)
        for round_number in range(6):  # about 2.4 s: four or five retirements
            with TableClient(address) as player:
                player.join(table_id, 0, f"p{round_number}")
                time.sleep(0.2)
                player.leave(table_id)
            time.sleep(0.2)
        final = dealer.get(table_id).version
        watcher.wait_for(
            lambda: bool(watcher.events) and watcher.events[-1].version >= final,
            timeout=30,
            what=f"version {final}",
        )
        watcher.stop()
    ids = [event.event_id for event in watcher.events]
    assert len(set(ids)) == len(ids)  # none twice
    assert sorted({event.version for event in watcher.events}) == list(range(2, final + 1))
    assert watcher.watch.reconnects >= 2


def test_a_quiet_tables_watch_outlives_its_reconnect_timeout_across_retirements() -> None:
    """A watch of a table where nothing happens receives nothing, and its connection is
    retired again and again (here every ~1.5 s): each stream stood before it ended, so each
    end starts a new run of failures; the watch does not give up after ``reconnect_timeout``
    (0.5 s here) of them, as it did at the second retirement, and sees the next event."""
    with _aged_http_port(1.2, 0.3) as address, TableClient(address) as dealer:
        table_id = dealer.create_table(seats=2).table_id
        last = dealer.get(table_id).last_event_id
        watcher = Watcher(dealer, table_id, after_event_id=last, reconnect_timeout=0.5)
        # (the watch failing here: it gave up on a quiet table)
        watcher.wait_for(lambda: watcher.watch.reconnects >= 3, timeout=30, what="3 reconnects")
        with TableClient(address) as player:
            player.join(table_id, 0, "ann")
        watcher.wait_for(lambda: bool(watcher.events), timeout=30, what="the seat taken")
        watcher.stop()
    assert watcher.error is None
    assert [event.kind for event in watcher.events] == ["seat_taken"]


def test_a_stopping_server_refuses_new_calls_retryably_and_closes_their_connections() -> None:
    """As on the gRPC port: once the server stops, a call that comes on the HTTP port did
    nothing and is answered 503, Connect ``unavailable``, reason SERVER_SHUTTING_DOWN, with
    ``Connection: close`` (the client's next call opens a new connection, which goes to
    another replica); never another error. Ten clients keep calling until one is refused or
    their connection ends."""
    served = serve()
    host, port = served.http.removeprefix("http://").split(":")
    body = json.dumps({"hand": {"players": [
        {"board": {"top": ["Ac", "3d", "2h"], "middle": ["6c", "6d", "9h", "8s", "4c"],
                   "bottom": ["9c", "8c", "7d", "6h", "5s"]}},
        {"board": {"top": ["Kd", "3c", "2d"], "middle": ["5c", "5d", "9d", "8h", "4d"],
                   "bottom": ["7c", "7h", "Qd", "Js", "4s"]}}]}}).encode()  # fmt: skip
    refused: list[tuple[int, str, str, str | None]] = []
    calls = threading.Barrier(11)

    def client() -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=20)
        first = True
        while True:
            try:
                connection.request(
                    "POST", "/ofcpoker.v1.RulesService/SettleHand", body,
                    {"content-type": "application/json"},
                )  # fmt: skip
                answer = connection.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException):
                return  # the server closed the connection, or refuses new ones
            if first:
                first = False
                calls.wait(timeout=20)
            if answer.status != 200:
                error = json.loads(data)
                reason = error_details_pb2.ErrorInfo.FromString(
                    details(error)["google.rpc.ErrorInfo"]
                ).reason
                closing = answer.getheader("connection")
                refused.append((answer.status, error["code"], reason, closing))
                return

    threads = [threading.Thread(target=client) for _ in range(10)]
    for thread in threads:
        thread.start()
    calls.wait(timeout=20)  # every client has had an answer: all are calling
    time.sleep(0.2)
    assert stop(served) == 0
    for thread in threads:
        thread.join(timeout=20)
    assert refused, "no call came once the server stopped: the test proves nothing"
    assert set(refused) == {(503, "unavailable", "SERVER_SHUTTING_DOWN", "close")}, refused


def _raw_exchange(port: int, pieces: list[tuple[float, bytes]], *, wait: float = 10) -> bytes:
    """What the HTTP port answers a request sent as ``pieces`` over one plain socket, each
    after its pause in seconds: everything it sends until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        for pause, piece in pieces:
            time.sleep(pause)
            sock.sendall(piece)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _post_head(method: str, content_type: str, length: int) -> bytes:
    return (
        f"POST /ofcpoker.v1.{method} HTTP/1.1\r\nhost: ofc\r\ncontent-type: {content_type}\r\n"
        f"content-length: {length}\r\nconnection: close\r\n\r\n"
    ).encode()


def test_a_body_that_trickles_in_is_refused_in_time_and_its_connection_closed() -> None:
    """A client that keeps sending a byte now and then, never its whole body, is refused
    REQUEST_BODY_TIMEOUT at ``--http-body-seconds`` and its connection closed then: what an
    answer over HTTP/1.1 reads of a body unread before it ends (so that a client sending it
    all reads the answer) stops at the body's time too, however long the trickle goes on."""
    with BackgroundServer(config(http_body_seconds=0.6)) as server:
        port = urllib.parse.urlsplit(server.http_url).port
        assert port is not None
        stop = threading.Event()
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            started = time.monotonic()
            sock.sendall(_post_head("RulesService/EvaluateRow", "application/json", 1000) + b"{")

            def trickle() -> None:  # a byte every 0.2 s for 60 s, unless the server closed
                with contextlib.suppress(OSError):
                    for _ in range(300):
                        if stop.wait(0.2):
                            return
                        sock.sendall(b" ")

            sender = threading.Thread(target=trickle)
            sender.start()
            try:
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
                closed_after = time.monotonic() - started
            finally:
                stop.set()
                sender.join()
        assert answer.split()[1] == b"504" and b'"deadline_exceeded"' in answer
        assert closed_after < 30, closed_after  # not when the trickle ends (60 s)


def test_a_request_body_that_stalls_is_refused_in_time_and_its_connection_closed() -> None:
    """A client that sends its headers and then stalls (a slowloris) holds a connection only
    until ``--http-body-seconds``: it is answered DEADLINE_EXCEEDED, REQUEST_BODY_TIMEOUT,
    in its own protocol, and the connection is closed; a body that arrives in pieces within
    the time is served, and a Watch (its request in full) outlives that time."""
    with BackgroundServer(config(http_body_seconds=0.6)) as server:
        port = urllib.parse.urlsplit(server.http_url).port
        assert port is not None
        body = json.dumps({"cards": ["As", "Ad", "Kc"]}).encode()

        started = time.monotonic()
        head = _post_head("RulesService/EvaluateRow", "application/json", len(body))
        answer = _raw_exchange(port, [(0, head + body[:5])])
        assert 0.5 < time.monotonic() - started < 5
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line.split()[1] == b"504"
        error = json.loads(rest[rest.index(b"{") : rest.rindex(b"}") + 1])
        assert error["code"] == "deadline_exceeded"
        info = error_info(error)
        assert info.reason == "REQUEST_BODY_TIMEOUT"

        envelope = b"\0" + len(body).to_bytes(4, "big") + body
        head = _post_head("RulesService/EvaluateRow", "application/grpc-web+json", len(envelope))
        answer = _raw_exchange(port, [(0, head + envelope[:3])])
        assert b"grpc-status: 4\r\n" in answer and b"REQUEST_BODY_TIMEOUT" in base64.b64decode(
            re.search(rb"grpc-status-details-bin: ([A-Za-z0-9+/]+)", answer)[1] + b"=="  # type: ignore[index]
        )

        _, created, _ = call(server.http_url, "TableService/CreateTable", {"requestId": "slow-1"})
        watch = json.dumps({"tableId": created["tableId"]}).encode()
        request = urllib.request.Request(
            f"{server.http_url}/ofcpoker.v1.TableService/Watch",
            data=b"\0" + len(watch).to_bytes(4, "big") + watch,
            headers={"content-type": "application/connect+json", "connect-timeout-ms": "1500"},
        )
        started = time.monotonic()
        with urllib.request.urlopen(request, timeout=10) as stream:
            answer = stream.read()
        assert time.monotonic() - started >= 1.4 and b'"snapshot"' in answer
        end = json.loads(answer[answer.rindex(b'{"error"') :])
        assert end["error"]["code"] == "deadline_exceeded"  # its own deadline's, no reason
        assert "details" not in end["error"]

    # Pieces well within the time (a server of its own: how long a loaded machine takes
    # between the pieces is no part of what is checked).
    with BackgroundServer(config(http_body_seconds=30)) as server:
        port = urllib.parse.urlsplit(server.http_url).port
        assert port is not None
        head = _post_head("RulesService/EvaluateRow", "application/json", len(body))
        answer = _raw_exchange(port, [(0, head + body[:5]), (0.1, body[5:12]), (0.1, body[12:])])
        assert answer.split()[1] == b"200" and b"HAND_CATEGORY_PAIR" in answer


def test_a_request_that_does_not_decode_is_malformed_request(url: str) -> None:
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.RulesService/SettleHand",
        data=b'{"hand": {"players": "not a list"}}',
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    body = json.loads(raised.value.read())
    assert (raised.value.code, body["code"]) == (400, "invalid_argument")
    assert body["message"].startswith("the request does not decode: ")
    info = error_info(body)
    assert info.reason == "MALFORMED_REQUEST"


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        # A mistyped field is not dropped: the call is refused and the field named.
        ("RulesService/EvaluateRow", {"cards": ["As", "Ks", "Qs"], "rulset": "standard"},
         "rulset"),
        ("RulesService/ValidateBoard", {"board": {"top": ["As", "Ks", "Qs"], "midle": []}},
         "board.midle"),
        # A value of the wrong type, and one nested under another field.
        ("RulesService/EvaluateRow", {"cards": "As Ks Qs"}, "cards"),
        ("RulesService/ValidateBoard", {"board": {"top": 3}}, "board.top"),
        # What protobuf's own JSON reader would take: an enum as a boolean or a fraction
        # (read as 1), an array or a string where a message is (read as an empty message).
        ("RulesService/EvaluateRow", {"cards": ["As", "Ad", "Kc"], "row": 1.5}, "row"),
        ("RulesService/EvaluateRow", {"cards": ["As", "Ad", "Kc"], "row": True}, "row"),
        ("RulesService/EvaluateRow", {"cards": ["As", "Ad", "Kc"], "row": [1]}, "row"),
        ("RulesService/ValidateBoard", {"board": []}, "board"),
        ("RulesService/ValidateBoard", {"board": {}, "ruleset": "classic"}, "ruleset"),
        # an integer field given a fraction or too large a number, at the top and nested
        ("TableService/GetTable", {"tableId": "t", "asSeat": 1.5}, "as_seat"),
        ("TableService/GetTable", {"tableId": "t", "asSeat": 4294967296}, "as_seat"),
        ("RulesService/SettleHand", {"hand": {"players": [{"fantasylandStreak": 0.5}]}},
         "hand.players[0].fantasyland_streak"),
        # the path in proto names with the index of the element at fault, as every error's
        ("TableService/PlaceCards",
         {"placements": [{"card": "As", "row": 1}, {"card": "Ad", "row": "NOPE"}]},
         "placements[1].row"),
        ("RulesService/SettleHand",
         {"hand": {"players": [{"board": {"top": ["As"]}}, {"board": {"top": ["Kd", 5]}}]}},
         "hand.players[1].board.top[1]"),
        ("TableService/PlaceCards", {"placements": [{"card": "As"}, {"zz": 1}]},
         "placements[1].zz"),
        ("TableService/PlaceCards", {"expectedVersion": "abc"}, "expected_version"),
        # under a oneof's member, which protobuf's chain of fields leaves out
        ("RulesService/ResolveRuleset", {"ruleset": {"overrides": {"royalties": {"name": 5}}}},
         "ruleset.overrides.royalties.name"),
        ("RulesService/ResolveRuleset",
         {"ruleset": {"overrides": {"royalties": {"topPair": [{"points": 1}, {"points": "x"}]}}}},
         "ruleset.overrides.royalties.top_pair[1].points"),
        ("RulesService/SettleHand", {"hand": {"players": [{}, []]}}, "hand.players[1]"),
        ("RulesService/SettleHand", {"hand": {"players": [{"board": {"top": []}}],
                                              "ruleset": {"overrides": []}}},
         "hand.ruleset.overrides"),
        # bytes that are not base64, which protobuf's reader would read as other bytes
        ("RulesService/DeriveDeck", {"serverSeedBytes": "@@@@" + "QUJD" * 11}, "server_seed_bytes"),
        ("RulesService/DeriveDeck", {"serverSeedHex": "ab" * 32, "clientSeedBytes": "QU*JD"},
         "client_seed_bytes"),
    ],
)  # fmt: skip
def test_an_unknown_or_wrong_typed_json_field_is_malformed_request_naming_it(
    url: str, method: str, body: dict[str, Any], field: str
) -> None:
    status, answer, _ = call(url, method, body)
    assert (status, answer["code"]) == (400, "invalid_argument")
    assert answer["message"].startswith("the request does not decode: ")
    info = error_info(answer)
    assert (info.reason, info.metadata["field"]) == ("MALFORMED_REQUEST", field)
    bad = error_details_pb2.BadRequest.FromString(details(answer)["google.rpc.BadRequest"])
    assert [v.field for v in bad.field_violations] == [field]


def test_bytes_in_json_are_read_in_either_base64_alphabet_with_line_breaks_or_without(
    url: str,
) -> None:
    seed = bytes(range(32))
    forms = [base64.b64encode(seed).decode(), base64.urlsafe_b64encode(seed).decode().rstrip("="),
             base64.encodebytes(seed).decode(), base64.b64encode(seed).decode()[:20] + "\r\n"
             + base64.b64encode(seed).decode()[20:]]  # fmt: skip
    decks = set()
    for form in forms:
        status, answer, _ = call(url, "RulesService/DeriveDeck", {"serverSeedBytes": form})
        assert status == 200, (form, answer)
        decks.add(tuple(answer["deck"]))
    status, answer, _ = call(url, "RulesService/DeriveDeck", {"serverSeedHex": seed.hex()})
    assert decks == {tuple(answer["deck"])}


@pytest.mark.parametrize("root", [None, 1, "x", [], [{"cards": ["As", "Ad", "Kc"]}]])
def test_a_json_request_that_is_not_an_object_is_malformed_request(url: str, root: Any) -> None:
    status, answer, _ = call(url, "RulesService/EvaluateRow", root)
    assert (status, answer["code"]) == (400, "invalid_argument")
    assert answer["message"] == (
        "the request does not decode: a request is a JSON object, not "
        + {type(None): "null", int: "a number", str: "a string", list: "an array"}[type(root)]
    )
    info = error_info(answer)
    assert info.reason == "MALFORMED_REQUEST"


def test_a_connect_json_response_is_compact_json(url: str) -> None:
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.RulesService/EvaluateRow",
        data=b'{"cards": ["As", "Ad", "Kc"]}',
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        raw = answer.read()
    parsed = json.loads(raw)
    assert raw.decode() == json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)
    assert set(parsed) == {"hand"}


def test_a_connect_call_is_counted_once_under_its_protocol(url: str) -> None:
    def handled() -> dict[str, float]:
        labels = ("unary", "ofcpoker.v1.RulesService", "ListPresets")
        return {p: GRPC_HANDLED.labels(*labels, p, "OK")._value.get() for p in PROTOCOLS}

    before = handled()
    for _ in range(3):
        assert call(url, "RulesService/ListPresets", {})[0] == 200
    after = handled()
    assert {p: after[p] - before[p] for p in PROTOCOLS} == {"grpc": 0, "connect": 3, "grpc-web": 0}


def test_a_call_refused_before_its_handler_is_answered_counted_and_logged_once(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """What the HTTP port refuses before a handler runs (a body that does not decode, one
    over the size limit, a deadline header that is not one) still gets its x-request-id,
    one grpc_server_handled_total count, one ofc_request_errors_total count by reason and
    one access log line, as a call the handler refuses does."""
    from ofc_service.metrics import REQUEST_ERRORS

    labels = ("unary", "ofcpoker.v1.RulesService", "ValidateBoard", "connect", "INVALID_ARGUMENT")

    def counts() -> tuple[float, float, float]:
        return (
            GRPC_HANDLED.labels(*labels)._value.get(),
            REQUEST_ERRORS.labels("MALFORMED_REQUEST")._value.get(),
            REQUEST_ERRORS.labels("INVALID_TIMEOUT")._value.get(),
        )

    def send(body: bytes, rid: str, **headers: str) -> tuple[int, Any, Message]:
        request = urllib.request.Request(
            f"{url}/ofcpoker.v1.RulesService/ValidateBoard", data=body,
            headers={"content-type": "application/json", "x-request-id": rid, **headers},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, json.loads(answer.read()), answer.headers
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()), error.headers

    def reason(body: dict[str, Any]) -> str:
        info = error_info(body)
        return str(info.reason)

    before = counts()
    with caplog.at_level("INFO", logger="ofc.access"):
        status, body, headers = send(b"{not json", "bad-json-1")
        assert (status, body["code"], reason(body)) == (
            400,
            "invalid_argument",
            "MALFORMED_REQUEST",
        )
        assert headers["x-request-id"] == "bad-json-1"
        status, body, headers = send(b"{}", "bad-timeout-1", **{"connect-timeout-ms": "soon"})
        assert (status, reason(body)) == (400, "INVALID_TIMEOUT")
        assert headers["x-request-id"] == "bad-timeout-1"
    after = counts()
    assert [a - b for a, b in zip(after, before, strict=True)] == [2, 1, 1]
    logged = [r for r in caplog.records if r.name == "ofc.access"]
    ids = [getattr(r, "fields", {}).get("request_id") for r in logged]
    assert ids.count("bad-json-1") == 1 and ids.count("bad-timeout-1") == 1


def test_a_content_coding_and_a_media_type_are_read_whatever_their_case(url: str) -> None:
    import gzip

    for coding, media in [
        ("gzip", "application/json"),
        ("GZIP", "Application/JSON"),
        ("Gzip", "APPLICATION/JSON; Charset=UTF-8"),
    ]:
        request = urllib.request.Request(
            f"{url}/ofcpoker.v1.RulesService/EvaluateRow",
            data=gzip.compress(b'{"cards": ["As", "Ad", "Kc"]}'),
            headers={"content-type": media, "content-encoding": coding},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert json.loads(answer.read())["hand"]["category"] == "HAND_CATEGORY_PAIR", coding
    # gRPC-Web, its media type in capitals: answered as gRPC-Web
    message = rules_service_pb2.EvaluateRowRequest(cards=["As", "Ad", "Kc"]).SerializeToString()
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.RulesService/EvaluateRow",
        data=envelope(message),
        headers={"content-type": "Application/GRPC-Web+Proto", "x-grpc-web": "1"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        body = answer.read()
        assert answer.headers["content-type"] == "application/grpc-web+proto"
    size = int.from_bytes(body[1:5], "big")
    evaluated = rules_service_pb2.EvaluateRowResponse.FromString(body[5 : 5 + size])
    assert evaluated.hand.category == cards_pb2.HAND_CATEGORY_PAIR


def test_a_stream_its_deadline_ends_is_counted_deadline_exceeded_as_the_client_is_told(
    url: str,
) -> None:
    _, created, _ = call(url, "TableService/CreateTable", {"requestId": "deadline-1"})
    labels = ("server_stream", "ofcpoker.v1.TableService", "Watch", "connect")

    def handled(code: str) -> float:
        return float(GRPC_HANDLED.labels(*labels, code)._value.get())

    before = handled("DEADLINE_EXCEEDED"), handled("CANCELLED")
    envelope = json.dumps({"tableId": created["tableId"]}).encode()
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.TableService/Watch",
        data=b"\0" + len(envelope).to_bytes(4, "big") + envelope,
        headers={"content-type": "application/connect+json", "connect-timeout-ms": "300"},
    )
    with urllib.request.urlopen(request, timeout=10) as stream:
        body = stream.read()
    end = json.loads(body[body.rindex(b'{"error"') :])
    assert end["error"]["code"] == "deadline_exceeded"
    assert (handled("DEADLINE_EXCEEDED"), handled("CANCELLED")) == (before[0] + 1, before[1])


WORKED_EXAMPLE_1 = {"players": [
    {"playerId": "ann", "board": {"top": ["Ac", "3d", "2h"],
                                  "middle": ["6c", "6d", "9h", "8s", "4c"],
                                  "bottom": ["9c", "8c", "7d", "6h", "5s"]}},
    {"playerId": "bob", "board": {"top": ["Kd", "3c", "2d"],
                                  "middle": ["5c", "5d", "9d", "8h", "4d"],
                                  "bottom": ["7c", "7h", "Qd", "Js", "4s"]}},
]}  # fmt: skip


@pytest.mark.parametrize("protocol", ["connect", "grpc-web"])
def test_a_unary_call_past_its_deadline_is_deadline_exceeded_not_a_late_answer(
    url: str, protocol: str
) -> None:
    """A batch is settled in one go, with nothing to cut it short when the deadline passes:
    its answer is DEADLINE_EXCEEDED, as on the gRPC port, and counted so, not a late OK."""
    labels = ("unary", "ofcpoker.v1.RulesService", "SettleHands", protocol)

    def handled(code: str) -> float:
        return float(GRPC_HANDLED.labels(*labels, code)._value.get())

    before = handled("DEADLINE_EXCEEDED"), handled("OK")
    body = json.dumps({"hands": [WORKED_EXAMPLE_1] * 1000}).encode()
    if protocol == "connect":
        headers = {"content-type": "application/json", "connect-timeout-ms": "1"}
    else:
        body = b"\0" + len(body).to_bytes(4, "big") + body
        headers = {"content-type": "application/grpc-web+json", "grpc-timeout": "1m"}
    request = urllib.request.Request(
        f"{url}/ofcpoker.v1.RulesService/SettleHands", data=body, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, answered, trailers = answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as error:
        status, answered, trailers = error.code, error.read(), error.headers
    if protocol == "connect":
        assert (status, json.loads(answered)["code"]) == (504, "deadline_exceeded")
    else:  # the trailers frame (flag 0x80) ends the body: grpc-status 4
        frame = answered[answered.rindex(b"\x80") :]
        assert b"grpc-status:4" in frame.replace(b" ", b""), (trailers, frame[:200])
    assert (handled("DEADLINE_EXCEEDED"), handled("OK")) == (before[0] + 1, before[1])


def test_with_tls_the_http_port_serves_https_with_the_same_certificate(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    with BackgroundServer(config(tls_cert=str(cert), tls_key=str(key))) as server:
        assert server.server.http is not None
        https = f"https://localhost:{server.server.http.port}"  # the certificate's name
        trusted = ssl.create_default_context(cafile=str(cert))
        trusted.set_alpn_protocols(["h2", "http/1.1"])
        port = server.server.http.port
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            trusted.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            assert tls.selected_alpn_protocol() == "h2"  # HTTP/2 offered over TLS
        request = urllib.request.Request(
            f"{https}/ofcpoker.v1.RulesService/ListPresets", data=b"{}",
            headers={"content-type": "application/json"},
        )  # fmt: skip
        http1 = ssl.create_default_context(cafile=str(cert))  # urllib speaks HTTP/1.1 only
        with urllib.request.urlopen(request, timeout=10, context=http1) as answer:
            assert "classic" in {p["name"] for p in json.loads(answer.read())["presets"]}
        plain = f"http://127.0.0.1:{server.server.http.port}/healthz"
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            urllib.request.urlopen(plain, timeout=5)


def test_a_server_without_the_http_port_does_not_load_hypercorn_or_connectrpc() -> None:
    """Start-up cost: the HTTP stack (about a quarter of a second of imports) is loaded only
    when the HTTP port is on."""
    script = (
        "import sys\n"
        "from ofc_service.server.background import BackgroundServer\n"
        "from ofc_service.server.config import ServerConfig\n"
        "config = ServerConfig(listen='127.0.0.1:0', metrics_listen='', http_listen='',"
        " grace_seconds=1)\n"
        "with BackgroundServer(config):\n"
        "    print(sorted({m.split('.')[0] for m in sys.modules} & {'hypercorn', 'connectrpc'}))\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert got.stdout.strip() == "[]"


def test_grpc_web_text_is_base64_of_the_binary_frames_each_piece_padded(url: str) -> None:
    """gRPC-Web text (grpc-web's JavaScript default): a unary call's answer, a Watch's
    stream and an error in the trailers frame, each piece of the answer base64 on its own,
    under the text content type."""
    rules = rules_service_pb2.DESCRIPTOR.services_by_name["RulesService"]
    stub = HttpStub(url, "grpc-web-text", rules)
    presets = stub.ListPresets(rules_service_pb2.ListPresetsRequest())
    assert presets.presets[0].name == "classic"
    (exchange,) = stub.exchanges
    assert dict(exchange.headers)["content-type"] == "application/grpc-web-text+proto"
    assert re.fullmatch(rb"([A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2,3}=*)*", exchange.body)  # base64
    frames = b64_quanta_decode(exchange.body)
    message_size = int.from_bytes(frames[1:5], "big")
    trailers = frames[5 + message_size :]
    assert trailers[0] == 0x80 and b"grpc-status:0" in trailers.replace(b" ", b"")
    # each piece sent is encoded on its own (padded): the message frame, the trailers frame
    message = frames[: 5 + message_size]
    assert exchange.body == base64.b64encode(message) + base64.b64encode(trailers)

    tables = HttpStub(url, "grpc-web-text")
    _, created, _ = call(url, "TableService/CreateTable", {"requestId": "text-1"})
    watch = tables.Watch(table_service_pb2.WatchRequest(table_id=created["tableId"]))
    first = next(iter(watch))
    assert first.WhichOneof("kind") == "snapshot"
    watch.cancel()
    missing = tables.Watch(table_service_pb2.WatchRequest(table_id="no-such-table"))
    with pytest.raises(HttpRpcError) as raised:
        next(iter(missing))
    info = error_details_pb2.ErrorInfo()
    raised.value.status.details[0].Unpack(info)
    assert (raised.value.code().name, info.reason) == ("NOT_FOUND", "TABLE_NOT_FOUND")
    assert "grpc-status-details-bin" in dict(raised.value.http_trailers)


def test_grpc_web_text_pieces_read_back_however_the_body_is_cut() -> None:
    frames = [bytes(range(n % 256)) * (1 + n % 3) for n in range(1, 400)]
    body = b"".join(base64.b64encode(f) for f in frames)  # padded pieces, one after another
    for size in (1, 3, 4, 7, 64, len(body)):  # a chunk per size, the body whole last
        reader = _Base64Pieces()
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        read = b"".join(reader.feed(c, last=i == len(chunks) - 1) for i, c in enumerate(chunks))
        assert read == b"".join(frames)


def _request_headers(method: str, path: str) -> list[tuple[str, str]]:
    """The headers of an HTTP/2 request for ``path``."""
    return [(":method", method), (":path", path), (":scheme", "http"), (":authority", "ofc")]


def _h2_request(
    stream_id: int, path: str
) -> tuple[h2.connection.H2Connection, h2.connection.H2Connection]:
    """A server's and a client's HTTP/2 connection state, each having read the other's
    preface (no socket: bytes are handed over by the test), the client having opened
    stream ``stream_id`` (a POST to ``path``); with the server's HTTP/2 handler as
    ``HttpServer.start`` puts it in place."""
    _drop_data_of_closed_streams()
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    server.initiate_connection()
    client.initiate_connection()
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    client.send_headers(stream_id, _request_headers("POST", path))
    return server, client


class _ProtocolPart:
    """The part of Hypercorn's H2Protocol that the server's HTTP/2 event handler uses, on
    ``connection``: Hypercorn stopping, or the connection retired by a GOAWAY that let in
    streams up to ``goaway_last_stream_id``. What it flushes is kept in ``sent``."""

    def __init__(
        self,
        connection: h2.connection.H2Connection,
        *,
        stopping: bool = False,
        goaway_last_stream_id: int | None = None,
    ) -> None:
        self.connection = connection
        self.streams: dict[int, Any] = {}
        self.context = type("Context", (), {"terminated": threading.Event()})()
        if stopping:
            self.context.terminated.set()
        if goaway_last_stream_id is not None:
            self.goaway_last_stream_id = goaway_last_stream_id
        self.sent: list[bytes] = []

    async def _flush(self) -> None:
        self.sent.append(self.connection.data_to_send())

    def handle(self, events: list[h2.events.Event]) -> None:
        """The requests among ``events`` through the handler HttpServer.start puts in place."""
        requests = [e for e in events if isinstance(e, h2.events.RequestReceived)]
        asyncio.run(hypercorn_h2.H2Protocol._handle_events(self, requests))  # type: ignore[arg-type]


def _frames(data: bytes) -> tuple[list[bytes], bytes]:
    """The whole HTTP/2 frames at the start of ``data``, and the rest (a frame cut short)."""
    frames = []
    while len(data) >= 9 and len(data) >= 9 + (size := int.from_bytes(data[:3], "big")):
        frames.append(data[: 9 + size])
        data = data[9 + size :]
    return frames, data


def test_a_stream_opened_once_hypercorn_stops_is_refused_not_reset_without_error() -> None:
    """Hypercorn resets a stream that opens once it stops with NO_ERROR, which gRPC clients
    read as INTERNAL; the server's HTTP/2 handler resets it REFUSED_STREAM (not run: sent
    again elsewhere, UNAVAILABLE at a gRPC client) and allows no more streams."""
    server, client = _h2_request(1, "/ofcpoker.v1.RulesService/SettleHand")
    stopping = _ProtocolPart(server, stopping=True)
    stopping.handle(server.receive_data(client.data_to_send()))
    seen = client.receive_data(b"".join(stopping.sent))
    resets = [e for e in seen if isinstance(e, h2.events.StreamReset)]
    assert [(r.stream_id, r.error_code) for r in resets] == [
        (1, h2.errors.ErrorCodes.REFUSED_STREAM)
    ]
    (changed,) = [e for e in seen if isinstance(e, h2.events.RemoteSettingsChanged)]
    assert changed.changed_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS].new_value == 0


def test_a_stream_whose_client_reads_nothing_is_ended_not_kept_in_memory() -> None:
    """A client whose HTTP/2 window is shut: Hypercorn asks the stream's buffer for 0 bytes
    between answers, which resumed the handler every time, so its answers piled up (a probe
    grew the server by 170 MB with one SettleHandsStream). The buffer keeps at most
    UNREAD_BYTES_MAX unread, then ends the stream and drops the handler's later answers;
    one answer larger than that still goes out whole."""
    _end_streams_their_client_does_not_read()

    async def stalled(answer: bytes, answers: int) -> hypercorn_h2.StreamBuffer:
        buffer = hypercorn_h2.StreamBuffer(EventWrapper)
        for _ in range(answers):
            writer = asyncio.ensure_future(buffer.push(answer))
            await asyncio.sleep(0)
            await buffer.pop(0)  # the shut window: nothing can be sent
            # (BufferCompleteError: Hypercorn takes it for a stream gone, as after a reset)
            with contextlib.suppress(hypercorn_h2.BufferCompleteError):
                await asyncio.wait_for(writer, 5)
        return buffer

    cut = asyncio.run(stalled(b"a" * 60_000, 100))  # 6 MB of answers, none read
    assert cut.complete and len(cut.buffer) == 0
    whole = asyncio.run(stalled(b"b" * (2 * UNREAD_BYTES_MAX), 1))
    assert not whole.complete and len(whole.buffer) == 2 * UNREAD_BYTES_MAX


@contextlib.asynccontextmanager
async def _served(app: Any, served: ServerConfig) -> AsyncIterator[HttpServer]:
    """``app`` on an HTTP port of ``served``'s settings, in this loop."""
    server = HttpServer(app, served)
    server.start()
    try:
        yield server
    finally:
        await server.stop(1)


async def _h2_stream(
    port: int, *, window: int | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, h2.connection.H2Connection]:
    """An HTTP/2 connection (h2c) to ``port`` with stream 1 asking for ``/stream``;
    ``window``: the client's initial window (0: it reads nothing)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    if window is not None:
        client.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window}
        )
    client.initiate_connection()
    client.send_headers(1, _request_headers("POST", "/stream"), end_stream=True)
    writer.write(client.data_to_send())
    return reader, writer, client


class _AnswersForever:
    """An ASGI app: ``/ping`` answers an empty body; any other path answers 10,000 bytes at
    a time until the handler is told the client is gone (what it was told, in ``ended``);
    ``/big`` answers ``BIG_ANSWER`` bytes and ends."""

    BIG_ANSWER = 4 << 20

    def __init__(self) -> None:
        self.answered: list[int] = []
        self.ended: list[str] = []

    async def told(self) -> list[str]:
        """What the handler was told the client did, once it was (10 s at most)."""
        for _ in range(100):
            if self.ended:
                break
            await asyncio.sleep(0.1)
        return list(self.ended)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await receive()  # the (empty) body
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["path"] == "/ping":
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["path"] == "/big":
            chunk = b"y" * 10_000
            for at in range(0, self.BIG_ANSWER, len(chunk)):
                last = at + len(chunk) >= self.BIG_ANSWER
                body = chunk[: self.BIG_ANSWER - at]
                await send({"type": "http.response.body", "body": body, "more_body": not last})
            return
        told = asyncio.ensure_future(receive())
        while not told.done():
            await send({"type": "http.response.body", "body": b"x" * 10_000, "more_body": True})
            self.answered.append(1)
            await asyncio.sleep(0)
        self.ended.append(told.result()["type"])


def test_a_stream_whose_client_reads_nothing_is_reset_and_its_handler_ends() -> None:
    """Past UNREAD_BYTES_MAX unread the stream is reset ENHANCE_YOUR_CALM and its handler
    told (http.disconnect, which cancels a Connect handler): only ending the buffer left a
    stalled Watch's handler encoding every event of its table, for nothing, for as long as
    its client kept the connection."""
    app = _AnswersForever()
    answered = app.answered

    async def run() -> tuple[list[str], list[h2.events.Event]]:
        async with _served(app, config()) as server:
            reader, writer, client = await _h2_stream(server.port, window=0)
            in_time = await app.told()  # (without the reset: never)
            # the connection still serves its other streams
            client.send_headers(3, _request_headers("GET", "/ping"), end_stream=True)
            writer.write(client.data_to_send())
            seen: list[h2.events.Event] = []
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):  # until the ping's answer has ended
                    while data := await reader.read(1 << 16):
                        seen += client.receive_data(data)
                        if any(isinstance(e, h2.events.StreamEnded) for e in seen):
                            break
            writer.close()
            return in_time, seen

    in_time, seen = asyncio.run(run())
    assert in_time == ["http.disconnect"]
    resets = [e for e in seen if isinstance(e, h2.events.StreamReset)]
    assert [(r.stream_id, r.error_code) for r in resets] == [
        (1, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)
    ]
    assert [e.stream_id for e in seen if isinstance(e, h2.events.StreamEnded)] == [3]
    assert UNREAD_BYTES_MAX <= len(answered) * 10_000 <= UNREAD_BYTES_MAX + 64 * 10_000


def test_a_connection_whose_client_reads_nothing_is_closed_after_send_seconds() -> None:
    """HTTP/1.1 has no window to bound a stream's answers: a client that reads nothing kept
    its handler waiting on the socket, for as long as it kept the connection. Once what was
    sent has not drained for ``http_send_seconds`` the connection is closed and the handler
    told; a client that reads, at whatever pace its socket allows, gets its answer whole."""
    app = _AnswersForever()

    async def run() -> tuple[list[str], int, list[str]]:
        async with _served(app, config(http_send_seconds=0.5)) as server:
            stalled = socket.socket()
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.setblocking(False)
            await asyncio.get_running_loop().sock_connect(stalled, ("127.0.0.1", server.port))
            stalled.send(b"POST /stream HTTP/1.1\r\nHost: ofc\r\nContent-Length: 0\r\n\r\n")
            in_time = await app.told()  # (without the limit: never)
            stalled.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"POST /big HTTP/1.1\r\nHost: ofc\r\nContent-Length: 0\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            body = b""
            async with asyncio.timeout(30):
                while not body.endswith(b"0\r\n\r\n"):  # the chunked answer's end
                    body += await reader.read(1 << 16)
            writer.close()
            return in_time, body.count(b"y"), list(app.ended)

    in_time, received, ended = asyncio.run(run())
    assert in_time == ["http.disconnect"]
    assert received == _AnswersForever.BIG_ANSWER
    assert ended == ["http.disconnect"]  # the reading client's handler was not cut off


class _Socket:
    """The part of an ``asyncio.StreamWriter`` (and its transport) Hypercorn's sender uses:
    its client takes ``pace`` bytes every 50 ms (0: none); ``drain`` returns once less than
    asyncio's low-water mark waits."""

    def __init__(self, pace: int) -> None:
        self.pace = pace
        self.unsent = 0
        self.aborted = False
        self.transport = self

    def write(self, data: bytes) -> None:
        self.unsent += len(data)

    def get_write_buffer_size(self) -> int:
        return self.unsent

    def abort(self) -> None:
        self.aborted = True

    async def drain(self) -> None:
        while self.unsent > 16 << 10:
            await asyncio.sleep(0.05)
            self.unsent = max(0, self.unsent - self.pace)


def test_an_answer_a_client_reads_slowly_but_steadily_is_not_cut_off() -> None:
    """``http_send_seconds`` counts the time nothing of what waits unsent goes (nginx's
    ``send_timeout``), not the time all of it takes: one answer larger than the client
    takes in that time (a 4 MiB message on a mobile link) is not cut off while it reads;
    a client that takes nothing is."""
    _close_connections_their_client_does_not_read()  # what HttpServer.start puts in place

    async def send(pace: int) -> tuple[bool, list[Any], float]:
        closed: list[Any] = []

        class Protocol:
            async def handle(self, event: Any) -> None:
                closed.append(event)

        server = type("TCPServer", (), {})()
        # (a second: how long a loaded machine may stall the loop between two of the
        # client's reads is no part of what is checked)
        server.config = type("Config", (), {"send_seconds": 1.0})()
        server.send_lock = asyncio.Lock()
        server.writer = _Socket(pace)
        server.protocol = Protocol()
        started = time.monotonic()
        await hypercorn_tcp.TCPServer.protocol_send(server, RawData(b"x" * 3_000_000))
        return server.writer.aborted, closed, time.monotonic() - started

    aborted, closed, took = asyncio.run(send(100_000))  # 1.5 s in all, some of it every 50 ms
    assert not aborted and closed == [] and took > 1.0
    aborted, closed, took = asyncio.run(send(0))
    assert aborted and [type(e) for e in closed] == [Closed] and took < 5


def test_an_http1_connection_past_its_max_age_is_closed_after_the_grace() -> None:
    """``max_connection_age_seconds`` retires HTTP port connections as it does the gRPC
    port's: a stream still open on one (a Watch) ends after the grace, its handler told,
    and its client reconnects; the answer under way was the connection's last."""
    app = _AnswersForever()

    async def run() -> tuple[list[str], bytes, bool]:
        aged = config(max_connection_age_seconds=0.3, grace_seconds=0.3)
        async with _served(app, aged) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"POST /stream HTTP/1.1\r\nHost: ofc\r\nContent-Length: 0\r\n\r\n")
            read = b""
            closed = False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):  # without the age: the stream never ends
                    while data := await reader.read(1 << 16):
                        read += data[:100] if not read else b""
                    closed = True
            in_time = await app.told()  # before the client closes its end
            writer.close()
            return in_time, read, closed

    ended, read, closed = asyncio.run(run())
    assert read.startswith(b"HTTP/1.1 200")
    assert closed
    assert ended == ["http.disconnect"]


def test_an_http2_connection_past_its_max_age_is_sent_goaway_then_closed() -> None:
    """Over HTTP/2 a connection past its age is sent GOAWAY (NO_ERROR: its client opens new
    calls elsewhere) and closed once its calls are done or the grace has passed."""
    app = _AnswersForever()

    async def run() -> tuple[list[str], list[h2.events.Event], bool]:
        aged = config(max_connection_age_seconds=0.3, grace_seconds=0.3)
        async with _served(app, aged) as server:
            reader, writer, client = await _h2_stream(server.port)
            seen: list[h2.events.Event] = []
            closed = False
            pending = b""
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):  # without the age: the stream never ends
                    while data := await reader.read(1 << 16):
                        # frame by frame: h2's client takes nothing after a GOAWAY
                        frames, pending = _frames(pending + data)
                        for frame in frames:
                            if any(isinstance(e, h2.events.ConnectionTerminated) for e in seen):
                                continue
                            for event in client.receive_data(frame):
                                if isinstance(event, h2.events.DataReceived):
                                    client.acknowledge_received_data(
                                        event.flow_controlled_length, event.stream_id
                                    )
                                else:
                                    seen.append(event)
                        writer.write(client.data_to_send())
                    closed = True
            in_time = await app.told()  # before the client closes its end
            writer.close()
            return in_time, seen, closed

    ended, seen, closed = asyncio.run(run())
    goaways = [e for e in seen if isinstance(e, h2.events.ConnectionTerminated)]
    assert [g.error_code for g in goaways] == [h2.errors.ErrorCodes.NO_ERROR]
    assert closed
    assert ended == ["http.disconnect"]


def test_a_stream_that_crosses_the_goaway_of_an_aged_connection_is_refused_not_run() -> None:
    """A stream the client opened before it read the GOAWAY (above its last stream id) is
    taken by the client for one the server did not run, and sent again elsewhere: it is
    refused (REFUSED_STREAM), not run a second time on the retired connection."""
    app = _AnswersForever()

    async def run() -> list[tuple[int, Any]]:
        aged = config(max_connection_age_seconds=0.3, grace_seconds=3)
        async with _served(app, aged) as server:
            reader, writer, client = await _h2_stream(server.port)
            seen: list[tuple[int, Any]] = []
            pending = b""
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    while data := await reader.read(1 << 16):
                        frames, pending = _frames(pending + data)
                        for frame in frames:
                            if frame[3] == hyperframe.frame.GoAwayFrame.type:
                                # not given to h2's client, which would open no more streams
                                seen.append((0, "GOAWAY"))
                                client.send_headers(
                                    3, _request_headers("GET", "/ping"), end_stream=True
                                )
                                continue
                            for event in client.receive_data(frame):
                                if isinstance(event, h2.events.DataReceived):
                                    client.acknowledge_received_data(
                                        event.flow_controlled_length, event.stream_id
                                    )
                                if getattr(event, "stream_id", 1) == 3:
                                    seen.append((3, type(event).__name__))
                                if isinstance(event, h2.events.StreamReset):
                                    seen.append((3, event.error_code))
                        writer.write(client.data_to_send())
                        if any(stream == 3 for stream, _ in seen):
                            break
            writer.close()
            return seen

    seen = asyncio.run(run())
    assert seen == [(0, "GOAWAY"), (3, "StreamReset"), (3, h2.errors.ErrorCodes.REFUSED_STREAM)]


def test_a_stream_past_the_goaway_its_client_has_reset_already_is_let_go() -> None:
    """A gRPC client resets the streams a GOAWAY did not let in as it reads it: when the
    reset comes in the same read as the stream, there is nothing left to refuse (refusing
    it raised StreamClosedError and ended the connection, every call on it)."""
    server, client = _h2_request(3, "/ofcpoker.v1.RulesService/EvaluateRow")
    client.reset_stream(3, h2.errors.ErrorCodes.CANCEL)
    retired = _ProtocolPart(server, goaway_last_stream_id=1)
    retired.handle(server.receive_data(client.data_to_send()))
    assert b"".join(retired.sent) == b""


def test_a_json_decode_error_quoting_a_huge_value_says_a_bounded_reason(url: str) -> None:
    """protobuf's reader quotes the value in its message: the answer keeps MAX_REASON_CHARS
    of it (and reads it in linear time: a pattern that was not made a request of 64,000
    spaces take 13 s of the event loop)."""
    _, answer, _ = call(url, "TableService/GetTable", {"asSeat": "1" + " " * 50_000 + "x"})
    prefix = "the request does not decode: as_seat: "
    assert answer["message"].startswith(prefix + "Couldn't parse integer")
    assert len(answer["message"]) <= len(prefix) + MAX_REASON_CHARS


@pytest.mark.parametrize(
    ("method", "body", "message"),
    [
        ("TableService/PlaceCards",
         {"placements": [{"card": "As", "row": 1}, {"card": 5, "row": 1}]},
         "placements[1].card: a string is expected, not a number"),
        ("RulesService/ValidateBoard", {"board": {"top": ["As", "Ks", "Qs"], "midle": []}},
         "board.midle: no such field (the message has top, middle, bottom)"),
        ("RulesService/EvaluateRow", {"cards": "As Ks Qs"}, "cards: an array is expected"),
        ("TableService/GetTable", {"tableId": "t", "asSeat": 4294967296},
         "as_seat: Value out of range: 4294967296"),
    ],
)  # fmt: skip
def test_a_json_decode_error_says_the_path_and_what_was_wrong_in_one_line(
    url: str, method: str, body: dict[str, Any], message: str
) -> None:
    """Not protobuf's chain of "Failed to parse ... field:" and its location suffix."""
    _, answer, _ = call(url, method, body)
    assert answer["message"] == f"the request does not decode: {message}"


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ([("connect-protocol-version", "1"), ("connect-protocol-version", "2")],
         "connect-protocol-version"),
        ([("connect-timeout-ms", "100"), ("connect-timeout-ms", "abc")], "connect-timeout-ms"),
        ([("connect-timeout-ms", "5000"), ("connect-timeout-ms", "5000")], "connect-timeout-ms"),
    ],
)  # fmt: skip
def test_a_protocol_header_given_twice_is_malformed_request(
    url: str, headers: list[tuple[str, str]], named: str
) -> None:
    """The first of two would win, where a proxy or a filter in front may have read the
    other (a deadline, a protocol version): refused, as a duplicated credential is."""
    target = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=10)
    try:
        conn.putrequest("POST", "/ofcpoker.v1.RulesService/EvaluateRow")
        for key, value in [("content-type", "application/json"), *headers]:
            conn.putheader(key, value)
        body = json.dumps({"cards": ["As", "Ad", "Kc"]}).encode()
        conn.putheader("content-length", str(len(body)))
        conn.endheaders(body)
        answer = conn.getresponse()
        status, text = answer.status, answer.read()
    finally:
        conn.close()
    answer_body = json.loads(text)
    info = error_info(answer_body)
    assert (status, info.reason) == (400, "MALFORMED_REQUEST")
    assert answer_body["message"] == f"{named} is given once, not 2 times"


@pytest.mark.parametrize("first", ["{row}", ""])  # an empty one counts too
def test_a_get_parameter_given_twice_is_malformed_request(url: str, first: str) -> None:
    row = urllib.parse.quote(json.dumps({"cards": ["As", "Ad", "Kc"]}))
    target = (
        f"{url}/ofcpoker.v1.RulesService/EvaluateRow?connect=v1&encoding=json"
        f"&message={first.format(row=row)}&message={row}"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(target, timeout=10)
    answer = json.loads(refused.value.read())
    info = error_info(answer)
    assert (refused.value.code, info.reason) == (400, "MALFORMED_REQUEST")
    assert answer["message"] == "the GET's message is given once, not 2 times"
