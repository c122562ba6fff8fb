"""Container health check: exit 0 when the local ``ofc serve`` reports SERVING.

The image's ``HEALTHCHECK`` runs this (Docker and compose). Kubernetes ignores
``HEALTHCHECK`` and uses its native gRPC probes (deploy/k8s/deployment.yaml) instead.

It reads the environment ``ofc serve`` reads: ``OFC_LISTEN`` for the port, and
``OFC_TLS_CERT`` to speak TLS (trusting ``OFC_HEALTHCHECK_CA`` if set, else the server's
own certificate, with the name ``OFC_HEALTHCHECK_TLS_NAME``, default ``localhost``).
Exit status: 0 SERVING, 1 anything else (NOT_SERVING, unreachable, timeout).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

DEFAULT_LISTEN = "127.0.0.1:50051"
TIMEOUT_SECONDS = 2.0


def probe_target(listen: str) -> str:
    """The address to dial for a server listening on ``listen`` (wildcards become loopback).

    >>> probe_target("0.0.0.0:50051")
    '127.0.0.1:50051'
    >>> probe_target("[::]:7000")
    '[::1]:7000'
    >>> probe_target("10.0.0.5:50051")
    '10.0.0.5:50051'
    """
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid listen address: {listen!r}")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host in ("[::]", "::"):
        host = "[::1]"
    return f"{host}:{port}"


def open_channel(env: Mapping[str, str]) -> grpc.Channel:
    target = probe_target(env.get("OFC_LISTEN", DEFAULT_LISTEN))
    cert_path = env.get("OFC_TLS_CERT")
    if not cert_path:
        return grpc.insecure_channel(target)
    with open(env.get("OFC_HEALTHCHECK_CA") or cert_path, "rb") as handle:
        roots = handle.read()
    name = env.get("OFC_HEALTHCHECK_TLS_NAME", "localhost")
    credentials = grpc.ssl_channel_credentials(root_certificates=roots)
    return grpc.secure_channel(
        target, credentials, options=[("grpc.ssl_target_name_override", name)]
    )


def check(env: Mapping[str, str]) -> int:
    """0 if the overall health status ("" service) is SERVING, else 1, with a line on stderr."""
    try:
        with open_channel(env) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=TIMEOUT_SECONDS)
    except (grpc.RpcError, OSError, ValueError) as error:
        print(f"unhealthy: {error}", file=sys.stderr)
        return 1
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"unhealthy: status {reply.status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(check(os.environ))
