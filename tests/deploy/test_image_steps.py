"""The image's install steps, run here: no Docker engine runs where CI does.

Like the Dockerfile's build stage, this copies exactly the files its COPY lines name into a
clean folder, installs them with pip into a fresh virtualenv (non-editable, no dev extras),
then starts ``ofc serve`` from that virtualenv the way the container would and checks what
the orchestrators rely on: gRPC health SERVING, the image's own HEALTHCHECK script passing,
Prometheus ``/metrics`` with the agreed metric families, and exit status 0 after SIGTERM.
The one difference: pip may use its download cache here (the image build passes
``--no-cache-dir`` to keep the layer small; what gets installed is the same).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import free_port
from tests.deploy.deployfiles import REPO, Instruction, parse_dockerfile

pytestmark = pytest.mark.slow

DOCKERFILE = parse_dockerfile(REPO / "Dockerfile")
BUILD_STAGE = 0
VENV_IN_IMAGE = "/opt/ofc"
START_TIMEOUT = 60.0
GRACE_SECONDS = 2
# What .dockerignore keeps out of the folders the Dockerfile copies.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def build_instructions(keyword: str) -> list[Instruction]:
    return [i for i in DOCKERFILE if i.stage == BUILD_STAGE and i.keyword == keyword]


def test_this_test_runs_the_steps_the_dockerfile_runs() -> None:
    """If the Dockerfile's install changes, this test must change with it."""
    runs = [i.args for i in build_instructions("RUN")]
    assert runs[0] == f"python -m venv {VENV_IN_IMAGE}"
    assert runs[1].startswith(f"{VENV_IN_IMAGE}/bin/pip install --no-cache-dir . &&")
    assert len(runs) == 2
    assert [i.args for i in build_instructions("WORKDIR")] == ["/src"]


@dataclass
class Installed:
    root: Path
    venv: Path
    healthcheck: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("image")
    context = root / "src"  # WORKDIR /src
    context.mkdir()
    for copy in build_instructions("COPY"):
        *sources, destination = copy.args.split()
        for source in sources:  # Docker's rules: a folder's contents go into the destination
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, context / destination, ignore=IGNORED)
            else:
                target = context / destination
                if destination.endswith("/"):
                    target = target / Path(source).name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / source, target)
    env_venv = root / "venv"
    venv.EnvBuilder(with_pip=True).create(env_venv)
    pip = subprocess.run(
        [str(env_venv / "bin" / "pip"), "install", "--disable-pip-version-check", "--quiet", "."],
        cwd=context, capture_output=True, text=True, timeout=600, env=clean_env(),
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # The runtime stage's `COPY deploy/docker/healthcheck.py /opt/ofc/healthcheck.py`.
    healthcheck = env_venv / "healthcheck.py"
    shutil.copy2(REPO / "deploy" / "docker" / "healthcheck.py", healthcheck)
    return Installed(root, env_venv, healthcheck)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that would leak this checkout into the venv."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OFC_", "PYTHON", "VIRTUAL_ENV"))
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    return {**env, **extra}


def test_venv_holds_runtime_dependencies_only(installed: Installed) -> None:
    frozen = subprocess.run(
        [str(installed.bin / "pip"), "freeze", "--disable-pip-version-check"],
        capture_output=True, text=True, check=True, env=clean_env(),
    ).stdout.lower().replace("_", "-")  # fmt: skip
    assert "grpcio==" in frozen and "prometheus-client==" in frozen
    for dev_only in ("pytest", "hypothesis", "mypy", "ruff", "grpcio-tools", "treys", "eval7"):
        assert not re.search(rf"^{dev_only}==", frozen, re.M), f"{dev_only} is a dev dependency"
    site = next((installed.venv / "lib").glob("python3*/site-packages"))
    assert (site / "ofcpoker" / "v1").is_dir(), "the generated protobuf code is installed"
    assert not (site / "tests").exists()


@dataclass
class Running:
    process: subprocess.Popen[str]
    listen: str
    metrics: str
    http: str


@pytest.fixture(scope="module")
def running(installed: Installed) -> Iterator[Running]:
    listen, metrics = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    http = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [str(installed.bin / "ofc"), "serve", "--listen", listen, "--metrics-listen", metrics,
         "--http-listen", http],
        cwd=installed.root, env=clean_env(OFC_GRACE_SECONDS=str(GRACE_SECONDS)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_until_serving(process, listen)
        yield Running(process, listen, metrics, http)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def health_status(target: str, service: str = "", timeout: float = 2.0) -> int:
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        return int(reply.status)


def wait_until_serving(process: subprocess.Popen[str], target: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            pytest.fail(f"ofc serve exited with {process.returncode}:\n{output}")
        try:
            if health_status(target, timeout=0.5) == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"ofc serve did not report SERVING on {target} within {START_TIMEOUT} s")
        time.sleep(0.2)


def test_health_reports_serving_for_the_server_and_its_services(running: Running) -> None:
    serving = health_pb2.HealthCheckResponse.SERVING
    assert health_status(running.listen) == serving
    assert health_status(running.listen, "ofcpoker.v1.RulesService") == serving
    assert health_status(running.listen, "grpc.health.v1.Health") == serving


def test_the_http_port_serves_connect_and_the_packaged_web_table(running: Running) -> None:
    """The bundle is package data: a non-editable install (the image's) serves it at /."""
    with urllib.request.urlopen(f"http://{running.http}/", timeout=5) as page:
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert b'<script type="module" src="app.js"' in page.read()
    with urllib.request.urlopen(f"http://{running.http}/app.js", timeout=5) as script:
        assert script.read() == (REPO / "clients" / "web" / "dist" / "app.js").read_bytes()
    call = urllib.request.Request(
        f"http://{running.http}/ofcpoker.v1.RulesService/ListPresets", data=b"{}",
        headers={"content-type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(call, timeout=5) as answer:
        assert "pineapple" in {p["name"] for p in json.loads(answer.read())["presets"]}
    with urllib.request.urlopen(f"http://{running.http}/healthz", timeout=5) as health:
        assert health.read() == b"SERVING\n"


def test_image_healthcheck_script_passes(installed: Installed, running: Running) -> None:
    probe = subprocess.run(
        [str(installed.bin / "python"), str(installed.healthcheck)],
        env=clean_env(OFC_LISTEN=running.listen), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr


def metric_types(text: str) -> dict[str, str]:
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def test_metrics_endpoint_exports_the_agreed_families(running: Running) -> None:
    health_status(running.listen)  # at least one handled call to count
    with urllib.request.urlopen(f"http://{running.metrics}/metrics", timeout=5) as response:
        assert response.status == 200
        text = response.read().decode()
    types = metric_types(text)
    expected = {
        "grpc_server_started_total": "counter",
        "grpc_server_handled_total": "counter",
        "grpc_server_handling_seconds": "histogram",
        "ofc_hands_settled_total": "counter",
        "ofc_fouls_total": "counter",
    }
    table_metrics = {
        "ofc_moves_total": "counter",
        "ofc_active_tables": "gauge",
        "ofc_settlement_lag_seconds": "histogram",
    }
    # The table metrics belong to TableService: required as soon as this server offers it.
    try:
        health_status(running.listen, "ofcpoker.v1.TableService")
        expected |= table_metrics
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.NOT_FOUND
    normalized = {re.sub(r"_total$", "", name): kind for name, kind in types.items()}
    for name, kind in expected.items():
        assert normalized.get(re.sub(r"_total$", "", name)) == kind, f"{name} ({kind}) not exported"
    handled = [
        dict(re.findall(r'(\w+)="([^"]*)"', labels))
        for labels in re.findall(r"^grpc_server_handled_total\{([^}]*)\}", text, re.M)
    ]
    assert {
        "grpc_service": "grpc.health.v1.Health",
        "grpc_method": "Check",
        "grpc_code": "OK",
        "grpc_type": "unary",
        "protocol": "grpc",
    } in handled, "health checks are counted like every call"


def test_sigterm_stops_gracefully_with_exit_status_zero(running: Running) -> None:
    running.process.send_signal(signal.SIGTERM)
    try:
        status = running.process.wait(timeout=GRACE_SECONDS + 15)
    except subprocess.TimeoutExpired:
        pytest.fail("ofc serve did not exit after SIGTERM")
    output = running.process.stdout.read() if running.process.stdout else ""
    assert status == 0, output
