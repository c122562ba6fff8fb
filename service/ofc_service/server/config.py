"""Server configuration: one table of options, each a command-line flag and an env variable.

A flag given on the command line wins over its environment variable, which wins over the
default. This module imports no gRPC, so ``ofc --help`` stays fast.

>>> config_from_mapping({"OFC_LISTEN": "127.0.0.1:0", "OFC_GRACE_SECONDS": "2"}).grace_seconds
2.0
>>> config_from_mapping({"OFC_LOG_LEVEL": "loud"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ofc_service.server.config.ConfigError: OFC_LOG_LEVEL / --log-level: must be one of debug, ...
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import ssl
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
MAX_WAIT_REPLICAS = 5
MIN_REQUEST_WINDOW_SECONDS = 60
MAX_REQUEST_WINDOW_SECONDS = 24 * 3600  # the default: store.DEFAULT_REQUEST_TTL_SECONDS
MIN_HISTORY_TTL_SECONDS = 60
MAX_HISTORY_TTL_SECONDS = 366 * 24 * 3600
FEED_RETENTION_SECONDS = 30 * 24 * 3600  # the default: store.DEFAULT_RETENTION_SECONDS
MIN_FEED_RETENTION_SECONDS = 3600
MAX_FEED_RETENTION_SECONDS = 366 * 24 * 3600
MAX_WORKERS = 64
DEFAULT_HTTP_BODY_SECONDS = 30.0
DEFAULT_HTTP_SEND_SECONDS = 60.0


class ConfigError(ValueError):
    """A flag or environment variable with a value the server cannot use."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``ofc serve`` can be told. Addresses are ``HOST:PORT``; port 0 picks one."""

    listen: str = "127.0.0.1:50051"
    metrics_listen: str = "127.0.0.1:9464"  # empty: no metrics endpoint
    http_listen: str = "127.0.0.1:8080"  # Connect, gRPC-Web, the web table; empty: none
    cors_origins: str = ""  # browser origins allowed to call the HTTP port, comma-separated
    http_body_seconds: float = DEFAULT_HTTP_BODY_SECONDS  # a one-message call's body, at most
    http_send_seconds: float = DEFAULT_HTTP_SEND_SECONDS  # a client not reading: closed after
    redis_url: str = ""  # table storage (tables service); empty: embedded in-memory store
    log_level: str = "info"
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    tls_cert: str = ""  # PEM file; with tls_key, serve TLS instead of plaintext
    tls_key: str = ""
    grace_seconds: float = 10.0
    max_connection_age_seconds: float = 0.0  # 0: connections live as long as clients keep them
    api_keys: str = ""  # operator API keys, comma-separated; empty: anyone may create tables
    event_log_hands: int = 2  # hands a table's event log keeps for Watch resumes; 0: all
    request_window_seconds: int = MAX_REQUEST_WINDOW_SECONDS  # a request id's retry window
    history_ttl_seconds: int = 0  # a hand history's life after it was written; 0: its table's
    feed_retention_seconds: int = FEED_RETENTION_SECONDS  # a feed record's life (once acked)
    redis_wait_replicas: int = 0  # WAIT for this many replicas after each commit/append; 0: off
    redis_wait_timeout_ms: int = 500  # how long one WAIT may take before the call fails
    workers: int = 1  # server processes sharing the listen port (SO_REUSEPORT); >1 needs Redis

    @property
    def api_key_list(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.api_keys.split(",") if k.strip())

    @property
    def cors_origin_list(self) -> tuple[str, ...]:
        return tuple(o.strip().rstrip("/") for o in self.cors_origins.split(",") if o.strip())

    def __post_init__(self) -> None:
        _validate(self)

    def replace(self, **changes: Any) -> ServerConfig:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Option:
    field: str
    env: str
    flag: str
    help: str
    parse: Callable[[str], Any] = str
    metavar: str | None = None


def _number(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise ConfigError(f"not a number: {text!r}") from None

    return parse


OPTIONS: tuple[Option, ...] = (
    Option("listen", "OFC_LISTEN", "--listen", "gRPC address HOST:PORT", metavar="ADDR"),
    Option(
        "metrics_listen",
        "OFC_METRICS_LISTEN",
        "--metrics-listen",
        "Prometheus /metrics address HOST:PORT; empty to disable",
        metavar="ADDR",
    ),
    Option(
        "http_listen",
        "OFC_HTTP_LISTEN",
        "--http-listen",
        "HTTP address HOST:PORT: Connect (JSON, binary), gRPC-Web, the web table at /, "
        "/healthz; empty to disable",
        metavar="ADDR",
    ),
    Option(
        "cors_origins",
        "OFC_CORS_ORIGINS",
        "--cors-origins",
        "browser origins (https://host[:port], or *) allowed to call the HTTP port from "
        "other sites, comma-separated; empty: same origin only",
        metavar="ORIGINS",
    ),
    Option(
        "http_body_seconds",
        "OFC_HTTP_BODY_SECONDS",
        "--http-body-seconds",
        "HTTP port: how long the request body of a call that takes one message may take to "
        "arrive in full after its headers (slower: DEADLINE_EXCEEDED): 0.1 .. 3600",
        _number(float),
        "SECONDS",
    ),
    Option(
        "http_send_seconds",
        "OFC_HTTP_SEND_SECONDS",
        "--http-send-seconds",
        "HTTP port: how long a connection may wait for its client to take what was sent "
        "(64 KiB and more unread); past it the connection is closed: 0.1 .. 3600",
        _number(float),
        "SECONDS",
    ),
    Option(
        "redis_url",
        "OFC_REDIS_URL",
        "--redis-url",
        "Redis URL for table state (redis://, rediss://, unix://, or a Redis Cluster: "
        "redis+cluster://host:port,host:port, rediss+cluster:// for TLS); unset: in-memory",
        metavar="URL",
    ),
    Option("log_level", "OFC_LOG_LEVEL", "--log-level", "debug, info, warning or error"),
    Option(
        "max_message_bytes",
        "OFC_MAX_MESSAGE_BYTES",
        "--max-message-bytes",
        "largest request or response message; larger requests get RESOURCE_EXHAUSTED",
        _number(int),
        "BYTES",
    ),
    Option(
        "tls_cert",
        "OFC_TLS_CERT",
        "--tls-cert",
        "PEM certificate chain (with --tls-key)",
        metavar="FILE",
    ),
    Option(
        "tls_key", "OFC_TLS_KEY", "--tls-key", "PEM private key (with --tls-cert)", metavar="FILE"
    ),
    Option(
        "grace_seconds",
        "OFC_GRACE_SECONDS",
        "--grace-seconds",
        "on SIGTERM, how long in-flight calls may finish",
        _number(float),
        "SECONDS",
    ),
    Option(
        "max_connection_age_seconds",
        "OFC_MAX_CONNECTION_AGE_SECONDS",
        "--max-connection-age-seconds",
        "close connections (both ports) after this long so clients rebalance, with "
        "--grace-seconds for the calls under way; 0: never",
        _number(float),
        "SECONDS",
    ),
    Option(
        "api_keys",
        "OFC_API_KEYS",
        "--api-keys",
        "operator API keys, comma-separated (prefer the env var: flags show in ps)",
        metavar="KEYS",
    ),
    Option(
        "event_log_hands",
        "OFC_EVENT_LOG_HANDS",
        "--event-log-hands",
        "hands each table's event log keeps for Watch resumes (finished hands stay in their "
        "histories; request records: the current and the previous hand, whatever this is); "
        "0: keep every event up to the 10000 cap",
        _number(int),
        "HANDS",
    ),
    Option(
        "request_window_seconds",
        "OFC_REQUEST_WINDOW_SECONDS",
        "--request-window-seconds",
        "how long a request id keeps returning its first result (within its table's "
        "current and previous hand): 60 .. 86400",
        _number(int),
        "SECONDS",
    ),
    Option(
        "history_ttl_seconds",
        "OFC_HISTORY_TTL_SECONDS",
        "--history-ttl-seconds",
        "how long a finished hand's history stays in the store after it was written (then "
        "the table's next move removes it; copy histories to cold storage first). 0: as "
        f"long as its table; else {MIN_HISTORY_TTL_SECONDS} .. {MAX_HISTORY_TTL_SECONDS}",
        _number(int),
        "SECONDS",
    ),
    Option(
        "feed_retention_seconds",
        "OFC_FEED_RETENTION_SECONDS",
        "--feed-retention-seconds",
        "how long the settlement feed keeps a record after it was added (and longer until "
        "every consumer group has acknowledged it); a settlement id is remembered for dedupe three "
        f"times as long: {MIN_FEED_RETENTION_SECONDS} .. {MAX_FEED_RETENTION_SECONDS}",
        _number(int),
        "SECONDS",
    ),
    Option(
        "redis_wait_replicas",
        "OFC_REDIS_WAIT_REPLICAS",
        "--redis-wait-replicas",
        "after each commit (and each settlement appended to the feed), WAIT until this many "
        "Redis replicas have it, else fail the call UNAVAILABLE (a retry is safe): an "
        "acknowledged move, and its settlement, survive a failover; what a table shows "
        "(views, events, histories, a retry's answer) waits the same way. 0: off",
        _number(int),
        "N",
    ),
    Option(
        "redis_wait_timeout_ms",
        "OFC_REDIS_WAIT_TIMEOUT_MS",
        "--redis-wait-timeout-ms",
        "how long one WAIT for replicas may take: 1 .. 60000",
        _number(int),
        "MS",
    ),
    Option(
        "workers",
        "OFC_WORKERS",
        "--workers",
        "server processes sharing the gRPC port (SO_REUSEPORT), metrics summed on one "
        "endpoint; more than 1 needs OFC_REDIS_URL: 1 .. 64",
        _number(int),
        "N",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per option; the defaults shown are the built-in ones (env vars override)."""
    defaults = ServerConfig()
    for option in OPTIONS:
        parser.add_argument(
            option.flag,
            dest=option.field,
            default=None,
            metavar=option.metavar,
            help=f"{option.help} [env {option.env}, default {getattr(defaults, option.field)!r}]",
        )


def config_from_mapping(
    environ: Mapping[str, str], flags: Mapping[str, str | None] | None = None
) -> ServerConfig:
    """A config from environment variables and flag values (flags win)."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw = (flags or {}).get(option.field)
        if raw is None:
            raw = environ.get(option.env)
        if raw is None:
            continue
        try:
            values[option.field] = option.parse(raw.strip())
        except ConfigError as exc:
            raise ConfigError(f"{option.env} / {option.flag}: {exc}") from None
    return ServerConfig(**values)


def config_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ServerConfig:
    flags = {option.field: getattr(args, option.field, None) for option in OPTIONS}
    return config_from_mapping(os.environ if environ is None else environ, flags)


def split_address(address: str, *, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) into its parts.

    >>> split_address("[::1]:50051", what="listen")
    ('::1', 50051)
    """
    host, sep, port_text = address.rpartition(":")
    # ASCII digits: str.isdigit() also takes "²", which int() rejects.
    if not sep or not host or not re.fullmatch(r"[0-9]{1,5}", port_text) or int(port_text) > 65535:
        raise ConfigError(f"{what}: expected HOST:PORT, got {address!r}")
    return host.removeprefix("[").removesuffix("]"), int(port_text)


def _validate(c: ServerConfig) -> None:
    def bad(option_field: str, message: str) -> ConfigError:
        option = next(o for o in OPTIONS if o.field == option_field)
        return ConfigError(f"{option.env} / {option.flag}: {message}")

    split_address(c.listen, what="OFC_LISTEN / --listen")
    if c.metrics_listen:
        split_address(c.metrics_listen, what="OFC_METRICS_LISTEN / --metrics-listen")
    if c.http_listen:
        split_address(c.http_listen, what="OFC_HTTP_LISTEN / --http-listen")
    if c.api_keys and not c.api_key_list:
        # commas only: meant to set keys, it would leave the operator's calls open
        raise bad("api_keys", f"no key in {c.api_keys!r} (comma-separated keys; unset for none)")
    for origin in c.cors_origin_list:
        if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", origin):
            raise bad("cors_origins", f"not an origin (scheme://host[:port]): {origin!r}")
        sent = _origin_as_sent(origin)
        if origin != "*" and sent != origin:
            # matched as written: one a browser never sends would silently never match
            raise bad(
                "cors_origins",
                f"{origin!r} is not an origin as a browser sends it"
                + (f" (it sends {sent!r})" if sent else " (a host name, without wildcards)"),
            )
    if not 0.1 <= c.http_body_seconds <= 3600:
        raise bad("http_body_seconds", "must be 0.1 .. 3600")
    if not 0.1 <= c.http_send_seconds <= 3600:
        raise bad("http_send_seconds", "must be 0.1 .. 3600")
    if c.log_level not in LOG_LEVELS:
        raise bad("log_level", f"must be one of {', '.join(LOG_LEVELS)}")
    if not 1024 <= c.max_message_bytes <= 2**31 - 1:
        raise bad("max_message_bytes", "must be 1024 .. 2147483647")
    if bool(c.tls_cert) != bool(c.tls_key):
        raise bad("tls_cert", "--tls-cert and --tls-key go together")
    for option_field in ("tls_cert", "tls_key"):
        path = getattr(c, option_field)
        if path and not os.path.isfile(path):
            raise bad(option_field, f"no such file: {path!r}")
    if c.tls_cert and not _tls_pair_loads(c.tls_cert, c.tls_key):  # else gRPC's core logs it
        raise bad("tls_cert", "is not a PEM certificate chain whose key is --tls-key's PEM key")
    if not 0 <= c.grace_seconds <= 3600:
        raise bad("grace_seconds", "must be 0 .. 3600")
    if not 0 <= c.max_connection_age_seconds <= 365 * 86400:
        raise bad("max_connection_age_seconds", "must be 0 or more (0: no limit)")
    if not 0 <= c.event_log_hands <= 1000:
        raise bad("event_log_hands", "must be 0 .. 1000 (0: no per-hand trim)")
    if not MIN_REQUEST_WINDOW_SECONDS <= c.request_window_seconds <= MAX_REQUEST_WINDOW_SECONDS:
        raise bad(
            "request_window_seconds",
            f"must be {MIN_REQUEST_WINDOW_SECONDS} .. {MAX_REQUEST_WINDOW_SECONDS}",
        )
    ttl = c.history_ttl_seconds
    if ttl != 0 and not MIN_HISTORY_TTL_SECONDS <= ttl <= MAX_HISTORY_TTL_SECONDS:
        raise bad(
            "history_ttl_seconds",
            f"must be 0 (as long as the table) or {MIN_HISTORY_TTL_SECONDS} .. "
            f"{MAX_HISTORY_TTL_SECONDS}",
        )
    if not MIN_FEED_RETENTION_SECONDS <= c.feed_retention_seconds <= MAX_FEED_RETENTION_SECONDS:
        raise bad(
            "feed_retention_seconds",
            f"must be {MIN_FEED_RETENTION_SECONDS} .. {MAX_FEED_RETENTION_SECONDS}",
        )
    if c.redis_url and not c.redis_url.startswith(REDIS_SCHEMES):
        raise bad("redis_url", f"must start with {', '.join(REDIS_SCHEMES)}")
    if c.redis_url.startswith(REDIS_SCHEMES[3:]):
        from ofc_service.store.redis_io import cluster_seeds  # only then: redis is slow to import

        try:
            cluster_seeds(c.redis_url)
        except ValueError as error:
            raise bad("redis_url", str(error)) from None
    if not 0 <= c.redis_wait_replicas <= MAX_WAIT_REPLICAS:
        raise bad("redis_wait_replicas", f"must be 0 .. {MAX_WAIT_REPLICAS} (0: no WAIT)")
    if c.redis_wait_replicas and not c.redis_url:
        raise bad("redis_wait_replicas", "needs a Redis URL (the in-memory store has no replicas)")
    if not 1 <= c.redis_wait_timeout_ms <= 60_000:
        raise bad("redis_wait_timeout_ms", "must be 1 .. 60000")
    if not 1 <= c.workers <= MAX_WORKERS:
        raise bad("workers", f"must be 1 .. {MAX_WORKERS}")
    if c.workers > 1 and not c.redis_url:
        raise bad(
            "workers",
            f"{c.workers} workers need a shared store: set OFC_REDIS_URL / --redis-url "
            "(the in-memory store lives in one process and cannot be shared)",
        )


def _origin_as_sent(origin: str) -> str:
    """``origin`` as a browser's ``Origin`` header has it (scheme and host in lower case, no
    default port), or "" when no browser could send it (a wildcard, a user, a bad port).

    >>> _origin_as_sent("https://App.Example:443"), _origin_as_sent("https://*.example")
    ('https://app.example', '')
    """
    try:
        parts = urllib.parse.urlsplit(origin)
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port out of range, a bad IPv6 literal
        return ""
    if parts.username is not None or not re.fullmatch(r"[a-z0-9.-]+|[0-9a-f:.]+", host):
        return ""
    scheme = parts.scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{shown}" + (f":{port}" if port is not None and port != default else "")


def _tls_pair_loads(cert: str, key: str) -> bool:
    """Whether the PEM certificate chain and its unencrypted PEM key load as a TLS server's."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password="")
    except (OSError, ValueError):  # ssl.SSLError is an OSError: not PEM, no match, encrypted
        return False
    return True
