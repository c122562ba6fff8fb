"""The command line and the server: ``ofc --version``, ``ofc serve --help`` naming every
service it serves, and how the remote commands reach a server: ``--tls`` and ``--ca-file``
against a real TLS ``ofc serve`` (a plaintext attempt is told the server speaks TLS), and
``--api-key``/``OFC_API_KEY`` sent with every call."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofc_cli.main import main
from ofcpoker.v1 import rules_service_pb2, settlement_feed_pb2, table_service_pb2

from tests.conftest import self_signed_certificate
from tests.e2e import test_table_affinity
from tests.e2e.test_cli_remote import EXAMPLE, run
from tests.e2e.test_serve_process import OFC, _serve

proxy = test_table_affinity.proxy  # the fixture: a recording proxy in front of a live server


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A real ``ofc serve`` with TLS: its port and the certificate (its own CA)."""
    cert, key = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    process, address = _serve("--tls-cert", str(cert), "--tls-key", str(key))
    port = address.rsplit(":", 1)[1]
    try:
        trusted = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(f"localhost:{port}", trusted) as channel:
            health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True
            )
        yield port, cert
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_version_is_the_installed_distributions() -> None:
    result = subprocess.run(
        [str(OFC), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    assert (result.returncode, result.stdout) == (0, f"ofc {metadata.version('ofc')}\n")


def test_serve_help_names_every_service_served(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the description
    for module in (rules_service_pb2, table_service_pb2, settlement_feed_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            assert service.full_name in text
    assert "grpc.health.v1.Health" in text and "reflection" in text and "metrics" in text


def test_a_plaintext_command_at_a_tls_server_is_told_to_use_tls(
    tls_server: tuple[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    port, _ = tls_server
    status, out, err = run(["score", "--server", f"127.0.0.1:{port}", str(EXAMPLE)], capsys)
    assert (status, out) == (1, "")
    assert err == (
        f"error: UNAVAILABLE: the server at 127.0.0.1:{port} speaks TLS and this client "
        "connected in plaintext: add --tls (and --ca-file PEM when a private CA signed its "
        "certificate)\n"
    )
    table = "A" * 22
    out_dir = str(tmp_path / "out")
    status, _, err = run(["export-match", "--server", f"127.0.0.1:{port}", table, out_dir], capsys)
    assert status == 1 and "speaks TLS" in err and "add --tls" in err


def test_tls_with_the_servers_ca_gives_the_local_answer(
    tls_server: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    port, cert = tls_server
    local = run(["score", str(EXAMPLE)], capsys)
    remote = run(
        ["score", "--server", f"localhost:{port}", "--ca-file", str(cert), str(EXAMPLE)], capsys
    )
    assert remote == local
    assert [p["points"] for p in json.loads(remote[1])["players"]] == [8, -8]


def test_tls_without_trusting_the_certificate_says_to_pass_its_ca(
    tls_server: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    port, _ = tls_server
    status, _, err = run(["score", "--server", f"localhost:{port}", "--tls", str(EXAMPLE)], capsys)
    assert status == 1
    assert err.startswith("error: UNAVAILABLE: ") and "CERTIFICATE_VERIFY_FAILED" in err
    assert err.endswith(
        "(the server's TLS certificate is not trusted: pass its CA with --ca-file)\n"
    )


def test_tls_at_a_plaintext_server_says_it_may_be_plaintext(
    proxy: test_table_affinity.RecordingProxy,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    out_dir = str(tmp_path / "out")
    status, _, err = run(
        ["export-match", "--server", proxy.address, "--tls", "A" * 22, out_dir], capsys
    )
    assert status == 1
    assert err.endswith("(the TLS handshake failed: the server may be plaintext; drop --tls)\n")


def test_an_unreadable_ca_file_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(
        ["score", "--server", "localhost:1", "--ca-file", "/no/such/ca.pem", str(EXAMPLE)], capsys
    )
    assert status == 2
    assert err == (
        "error: INVALID_INPUT at ca_file: cannot read /no/such/ca.pem: No such file or directory\n"
    )


@pytest.mark.parametrize(
    "content", [b"not a certificate\n", b"\x00\xff binary", EXAMPLE.read_bytes()]
)
def test_a_ca_file_without_a_certificate_is_bad_input(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before connecting, with exit 2, rather than gRPC's core logging its own
    lines and the call failing UNAVAILABLE (exit 1)."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(content)
    status, out, err = run(
        ["score", "--server", "localhost:1", "--ca-file", str(ca), str(EXAMPLE)], capsys
    )
    assert (status, out) == (2, "")
    assert err == f"error: INVALID_INPUT at ca_file: {ca} holds no PEM certificate\n"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_api_key_goes_with_every_call(
    how: str,
    proxy: test_table_affinity.RecordingProxy,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ofc_client import TableClient

    with TableClient(proxy.address, api_key=test_table_affinity.API_KEY) as host:
        table_id = host.create_table(seats=2).table_id
    proxy.calls.clear()
    on_the_command_line, from_the_environment = test_table_affinity.MORE_API_KEYS
    key = ["--api-key", on_the_command_line] if how == "flag" else []
    if how == "env":
        monkeypatch.setenv("OFC_API_KEY", from_the_environment)
    status = main(["export-match", "--server", proxy.address, *key, "--", table_id, str(tmp_path)])
    assert status == 0, capsys.readouterr().err
    sent = {call.metadata.get("x-ofc-api-key") for call in proxy.calls}
    expected = on_the_command_line if how == "flag" else from_the_environment
    assert proxy.calls and sent == {expected}
