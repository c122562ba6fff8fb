# syntax=docker/dockerfile:1
# The ofc service image: `ofc serve` on a slim Python 3.11 runtime, as a non-root user.
#
#   docker build -t ofc:local .
#   docker run --rm -p 127.0.0.1:50051:50051 -p 127.0.0.1:8080:8080 -p 127.0.0.1:9464:9464 ofc:local
#
# Configuration is the environment (deploy/README.md lists every OFC_* variable). The image
# sets only the three listen addresses, because inside a container the defaults (127.0.0.1)
# would be unreachable from outside it.
#
# tests/deploy/test_image_steps.py runs the same install steps (a venv, `pip install .` of
# exactly the files copied below, no dev extras) and starts the server from that venv, because
# no Docker engine runs where CI does; hadolint lints this file (scripts/check_deploy.sh).

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- build: a self-contained virtualenv with the project and its runtime dependencies only.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/ofc
COPY pyproject.toml README.md ./
COPY service/ service/
COPY clients/python/ clients/python/
# The web table's bundle: package data of ofc_service.server (service/ofc_service/server/web
# links to it), served at / on the HTTP port.
COPY clients/web/dist/ clients/web/dist/
# A plain (non-editable) install of the runtime dependencies from pyproject.toml: no [dev].
RUN /opt/ofc/bin/pip install --no-cache-dir . \
    && /opt/ofc/bin/ofc --help > /dev/null

# ---- runtime: the venv, a health probe, and nothing else (no compiler, no pip cache, no sources).
FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 ofc \
    && useradd --system --uid 10001 --gid ofc --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin ofc
COPY --from=build /opt/ofc /opt/ofc
COPY deploy/docker/healthcheck.py /opt/ofc/healthcheck.py
ENV PATH=/opt/ofc/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    OFC_LISTEN=0.0.0.0:50051 \
    OFC_HTTP_LISTEN=0.0.0.0:8080 \
    OFC_METRICS_LISTEN=0.0.0.0:9464
WORKDIR /opt/ofc
USER 10001:10001
# 50051: gRPC (ofcpoker.v1.*, grpc.health.v1.Health, reflection); 8080: HTTP (Connect,
# gRPC-Web, the web table at /, /healthz); 9464: Prometheus /metrics.
EXPOSE 50051 8080 9464
# `ofc serve` handles SIGTERM: health goes NOT_SERVING, in-flight calls get OFC_GRACE_SECONDS
# to finish, then it exits 0. The orchestrator's stop timeout must exceed OFC_GRACE_SECONDS.
STOPSIGNAL SIGTERM
# Docker and compose use this; Kubernetes ignores it and uses its native gRPC probes.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "/opt/ofc/healthcheck.py"]
ENTRYPOINT ["ofc", "serve"]
