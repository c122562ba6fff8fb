"""Server configuration (flags, env vars, validation), TLS, and the shell's doctests."""

from __future__ import annotations

import argparse
import doctest
import importlib
import socket
from pathlib import Path

import grpc
import pytest
from ofc_client import OfcClient, RetryableError
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import (
    MAX_REQUEST_WINDOW_SECONDS,
    OPTIONS,
    ConfigError,
    ServerConfig,
    add_arguments,
    config_from_args,
    config_from_mapping,
)
from ofc_service.server.main import _server_options
from ofc_service.store import DEFAULT_REQUEST_TTL_SECONDS, MemorySettlementFeed
from ofc_service.store.feed import DEFAULT_DEDUPE_TTL_SECONDS, DEFAULT_RETENTION_SECONDS

from tests.conftest import self_signed_certificate

DOCTESTED = [
    "ofc_service.api.errors",
    "ofc_service.server.config",
    "ofc_service.server.logs",
    "ofc_service.server.background",
    "bench.grpc_load",
]


@pytest.mark.parametrize("name", DOCTESTED)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_defaults_match_the_issue() -> None:
    c = ServerConfig()
    assert (c.listen, c.metrics_listen, c.redis_url, c.tls_cert) == (
        "127.0.0.1:50051",
        "127.0.0.1:9464",
        "",
        "",
    )
    assert (c.http_listen, c.cors_origins) == ("127.0.0.1:8080", "")
    assert c.max_message_bytes == 4 * 1024 * 1024
    assert c.workers == 1


def test_every_option_has_a_flag_and_an_env_var_and_flags_win() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    env = {
        "OFC_LISTEN": "0.0.0.0:7000",
        "OFC_METRICS_LISTEN": "",
        "OFC_HTTP_LISTEN": "[::1]:8081",
        "OFC_CORS_ORIGINS": "https://casino.example, http://localhost:5173/",
        "OFC_HTTP_BODY_SECONDS": "12.5",
        "OFC_REDIS_URL": "redis://127.0.0.1:6399/0",
        "OFC_LOG_LEVEL": "debug",
        "OFC_MAX_MESSAGE_BYTES": "65536",
        "OFC_GRACE_SECONDS": "2.5",
        "OFC_MAX_CONNECTION_AGE_SECONDS": "300",
        "OFC_API_KEYS": "key-one, key-two",
        "OFC_EVENT_LOG_HANDS": "0",
        "OFC_REQUEST_WINDOW_SECONDS": "3600",
        "OFC_HISTORY_TTL_SECONDS": "604800",
        "OFC_FEED_RETENTION_SECONDS": "86400",
        "OFC_REDIS_WAIT_REPLICAS": "1",
        "OFC_REDIS_WAIT_TIMEOUT_MS": "250",
        "OFC_WORKERS": "2",
        "OFC_HTTP_SEND_SECONDS": "7.5",
    }
    assert {o.env for o in OPTIONS} == {*env, "OFC_TLS_CERT", "OFC_TLS_KEY"}
    from_env = config_from_args(parser.parse_args([]), env)
    assert from_env == ServerConfig(
        listen="0.0.0.0:7000",
        metrics_listen="",
        http_listen="[::1]:8081",
        cors_origins="https://casino.example, http://localhost:5173/",
        http_body_seconds=12.5,
        http_send_seconds=7.5,
        redis_url="redis://127.0.0.1:6399/0",
        log_level="debug",
        max_message_bytes=65536,
        grace_seconds=2.5,
        max_connection_age_seconds=300,
        api_keys="key-one, key-two",
        event_log_hands=0,
        request_window_seconds=3600,
        history_ttl_seconds=604800,
        feed_retention_seconds=86400,
        redis_wait_replicas=1,
        redis_wait_timeout_ms=250,
        workers=2,
    )
    assert from_env.api_key_list == ("key-one", "key-two")
    flags = parser.parse_args(["--listen", "127.0.0.1:7001", "--grace-seconds", "1"])
    both = config_from_args(flags, env)
    assert (both.listen, both.grace_seconds, both.log_level) == ("127.0.0.1:7001", 1.0, "debug")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OFC_LISTEN": "localhost"}, "OFC_LISTEN / --listen: expected HOST:PORT"),
        ({"OFC_LISTEN": "h:99999"}, "OFC_LISTEN / --listen: expected HOST:PORT"),
        ({"OFC_METRICS_LISTEN": "nope"}, "OFC_METRICS_LISTEN / --metrics-listen"),
        ({"OFC_MAX_MESSAGE_BYTES": "12"}, "OFC_MAX_MESSAGE_BYTES / --max-message-bytes"),
        ({"OFC_GRACE_SECONDS": "nan"}, "OFC_GRACE_SECONDS / --grace-seconds"),
        ({"OFC_GRACE_SECONDS": "soon"}, "OFC_GRACE_SECONDS / --grace-seconds: not a number"),
        ({"OFC_TLS_CERT": "/etc/hostname"}, "--tls-cert and --tls-key go together"),
        ({"OFC_TLS_CERT": "/no/cert", "OFC_TLS_KEY": "/no/key"}, "no such file"),
        ({"OFC_TLS_CERT": __file__, "OFC_TLS_KEY": __file__}, "is not a PEM certificate chain"),
        ({"OFC_REDIS_URL": "http://x"}, "OFC_REDIS_URL / --redis-url"),
        # origins a browser never sends would never match: refused, the one it sends named
        ({"OFC_CORS_ORIGINS": "https://App.Example"}, "it sends 'https://app.example'"),
        ({"OFC_CORS_ORIGINS": "https://app.example:443"}, "it sends 'https://app.example'"),
        ({"OFC_CORS_ORIGINS": "http://[::1]:80"}, "it sends 'http://.::1.'"),
        ({"OFC_CORS_ORIGINS": "https://*.example.com"}, "a host name, without wildcards"),
        ({"OFC_CORS_ORIGINS": "https://user@app.example"}, "a host name, without wildcards"),
        ({"OFC_MAX_CONNECTION_AGE_SECONDS": "-1"}, "OFC_MAX_CONNECTION_AGE_SECONDS"),
        ({"OFC_HTTP_BODY_SECONDS": "0"}, "OFC_HTTP_BODY_SECONDS / --http-body-seconds"),
        ({"OFC_HTTP_BODY_SECONDS": "nan"}, "OFC_HTTP_BODY_SECONDS / --http-body-seconds"),
        ({"OFC_HTTP_SEND_SECONDS": "0"}, "OFC_HTTP_SEND_SECONDS / --http-send-seconds"),
        ({"OFC_HTTP_SEND_SECONDS": "3601"}, "OFC_HTTP_SEND_SECONDS / --http-send-seconds"),
        ({"OFC_EVENT_LOG_HANDS": "-1"}, "OFC_EVENT_LOG_HANDS / --event-log-hands: must be 0"),
        ({"OFC_EVENT_LOG_HANDS": "two"}, "OFC_EVENT_LOG_HANDS / --event-log-hands: not a number"),
        ({"OFC_REQUEST_WINDOW_SECONDS": "59"}, "--request-window-seconds: must be 60 .. 86400"),
        ({"OFC_REQUEST_WINDOW_SECONDS": "86401"}, "--request-window-seconds: must be 60 .. 86400"),
        ({"OFC_HISTORY_TTL_SECONDS": "59"}, "--history-ttl-seconds: must be 0 (as long as"),
        ({"OFC_HISTORY_TTL_SECONDS": "-1"}, "--history-ttl-seconds: must be 0 (as long as"),
        ({"OFC_REDIS_URL": "redis+cluster://a:1/2"}, "--redis-url: a Redis Cluster has database 0"),
        ({"OFC_REDIS_URL": "redis+cluster://a:b"}, "--redis-url: bad host:port 'a:b'"),
        ({"OFC_REDIS_WAIT_REPLICAS": "1"}, "--redis-wait-replicas: needs a Redis URL"),
        (
            {"OFC_REDIS_URL": "redis://r:6379/0", "OFC_REDIS_WAIT_REPLICAS": "9"},
            "--redis-wait-replicas: must be 0 .. 5",
        ),
        ({"OFC_REDIS_WAIT_TIMEOUT_MS": "0"}, "--redis-wait-timeout-ms: must be 1 .. 60000"),
        ({"OFC_WORKERS": "0", "OFC_REDIS_URL": "redis://r"}, "OFC_WORKERS / --workers: must be 1"),
        ({"OFC_WORKERS": "65", "OFC_REDIS_URL": "redis://r"}, "OFC_WORKERS / --workers: must be 1"),
        ({"OFC_WORKERS": "two"}, "OFC_WORKERS / --workers: not a number"),
        ({"OFC_WORKERS": "2"}, "--workers: 2 workers need a shared store: set OFC_REDIS_URL"),
        ({"OFC_FEED_RETENTION_SECONDS": "3599"}, "--feed-retention-seconds: must be 3600 .."),
        # keys meant, none given: it would leave the operator's calls open to anyone
        ({"OFC_API_KEYS": " , "}, "OFC_API_KEYS / --api-keys: no key in ','"),
        ({"OFC_API_KEYS": ", ,"}, "OFC_API_KEYS / --api-keys: no key in ', ,'"),
    ],
)
def test_bad_settings_name_the_variable_and_the_flag(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        config_from_mapping(env)


def test_a_certificate_with_another_certificates_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cert, _ = self_signed_certificate(tmp_path / "a")
    _, other_key = self_signed_certificate(tmp_path / "b")
    env = {"OFC_TLS_CERT": str(cert), "OFC_TLS_KEY": str(other_key)}
    with pytest.raises(ConfigError, match="--tls-cert: is not a PEM certificate chain whose key"):
        config_from_mapping(env)
    env["OFC_TLS_KEY"] = str(tmp_path / "a" / "key.pem")
    assert config_from_mapping(env).tls_cert == str(cert)


def test_the_longest_retry_window_is_the_stores_default() -> None:
    # config.py does not import the store (``ofc --help`` stays fast): the two must agree
    assert ServerConfig().request_window_seconds == MAX_REQUEST_WINDOW_SECONDS
    assert MAX_REQUEST_WINDOW_SECONDS == DEFAULT_REQUEST_TTL_SECONDS


def test_the_feed_keeps_what_its_retention_setting_says() -> None:
    """Acknowledged feed records are trimmed after ``OFC_FEED_RETENTION_SECONDS`` (30 days by
    default, the store's default), and settlement ids remembered for dedupe three times as
    long (90 days by default)."""
    assert ServerConfig().feed_retention_seconds == DEFAULT_RETENTION_SECONDS
    assert 3 * DEFAULT_RETENTION_SECONDS == DEFAULT_DEDUPE_TTL_SECONDS
    config = config_from_mapping({"OFC_FEED_RETENTION_SECONDS": "7200", "OFC_LISTEN": "127.0.0.1:0",
                                  "OFC_METRICS_LISTEN": "", "OFC_HTTP_LISTEN": ""})  # fmt: skip
    with BackgroundServer(config) as background:
        relay, feed = background.server.relay, background.server.feed
        assert relay is not None and relay.retention_s == 7200
        assert isinstance(feed, MemorySettlementFeed) and feed.dedupe_ttl_seconds == 21600


@pytest.mark.parametrize("option", ["http_listen", "metrics_listen"])
def test_a_port_in_use_is_named_in_the_error(option: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", http_listen="")
        background = BackgroundServer(config.replace(**{option: address}))
        try:
            with pytest.raises(OSError, match=f"^cannot bind {address}: "):
                background.start()
        finally:
            background.stop()


def test_grpc_options_follow_the_config() -> None:
    options = dict(_server_options(ServerConfig(max_message_bytes=65536, grace_seconds=3)))
    assert options["grpc.max_receive_message_length"] == 65536
    assert "grpc.max_connection_age_ms" not in options
    aged = dict(_server_options(ServerConfig(max_connection_age_seconds=60, grace_seconds=3)))
    assert (aged["grpc.max_connection_age_ms"], aged["grpc.max_connection_age_grace_ms"]) == (
        60_000,
        3_000,
    )


def test_tls(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    config = ServerConfig(
        listen="127.0.0.1:0",
        metrics_listen="",
        http_listen="",
        tls_cert=str(cert),
        tls_key=str(key),
    )
    with BackgroundServer(config) as server:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with OfcClient(f"localhost:{server.port}", credentials=credentials) as client:
            assert client.health() == "SERVING"
        with OfcClient(server.address, timeout=3) as plaintext, pytest.raises(RetryableError):
            plaintext.health()
