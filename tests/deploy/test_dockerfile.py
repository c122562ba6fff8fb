"""The Dockerfile's promises, read from the file (no Docker engine runs here or in CI).

hadolint lints it for the general rules (scripts/check_deploy.sh); these are ours: multi-stage,
a pinned slim Python 3.11 base, a non-root user, runtime dependencies only, ``ofc serve`` as
the entry point, SIGTERM as the stop signal, a health check, and a build context that holds
what the Dockerfile copies. tests/deploy/test_image_steps.py runs the same install steps.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
from types import ModuleType

import pytest

from tests.deploy.deployfiles import REPO, Instruction, parse_dockerfile

DOCKERFILE = parse_dockerfile(REPO / "Dockerfile")
FINAL_STAGE = max(i.stage for i in DOCKERFILE)


def final(keyword: str) -> list[Instruction]:
    return [i for i in DOCKERFILE if i.keyword == keyword and i.stage == FINAL_STAGE]


def build_args() -> dict[str, str]:
    pairs = (i.args.split("=", 1) for i in DOCKERFILE if i.keyword == "ARG" and "=" in i.args)
    return {name: value for name, value in pairs}


def test_multi_stage_from_one_pinned_slim_python_311_base() -> None:
    froms = [i.args for i in DOCKERFILE if i.keyword == "FROM"]
    assert len(froms) >= 2
    images = {re.sub(r"\s+AS\s+\S+$", "", f, flags=re.IGNORECASE) for f in froms}
    assert images == {"${PYTHON_IMAGE}"}, "every stage starts from the same base"
    base = build_args()["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", base), base


def test_runtime_runs_as_a_non_root_user() -> None:
    users = final("USER")
    assert users, "the runtime stage sets USER"
    user = users[-1].args.split(":")[0]
    assert user not in ("root", "0")
    assert user.isdigit(), "numeric, so Kubernetes runAsNonRoot can verify it"
    assert any(f"--uid {user}" in i.args for i in final("RUN")), "the user exists in the image"


def test_only_runtime_dependencies_are_installed() -> None:
    runs = " ".join(i.args for i in DOCKERFILE if i.keyword == "RUN")
    assert "pip install" in runs
    assert "[dev]" not in runs and "-e " not in runs and "--editable" not in runs
    assert not final("RUN") or "pip install" not in " ".join(i.args for i in final("RUN")), (
        "the runtime stage installs nothing; it copies the built venv"
    )
    assert any(i.args.startswith("--from=") for i in final("COPY"))


def test_entrypoint_is_ofc_serve_and_stops_on_sigterm() -> None:
    assert json.loads(final("ENTRYPOINT")[-1].args) == ["ofc", "serve"]
    assert [i.args for i in final("STOPSIGNAL")] == ["SIGTERM"]
    assert not final("CMD"), "flags come from the environment, not a CMD"


def test_container_listens_on_all_interfaces_on_the_exposed_ports() -> None:
    env = " ".join(i.args for i in final("ENV"))
    assert "OFC_LISTEN=0.0.0.0:50051" in env
    assert "OFC_HTTP_LISTEN=0.0.0.0:8080" in env
    assert "OFC_METRICS_LISTEN=0.0.0.0:9464" in env
    assert final("EXPOSE")[-1].args.split() == ["50051", "8080", "9464"]


def test_healthcheck_runs_the_copied_probe() -> None:
    (check,) = final("HEALTHCHECK")
    command = json.loads(check.args.split(" CMD ", 1)[1])
    assert command[0] == "python"
    probe = command[1]
    assert any(i.args.endswith(f" {probe}") for i in final("COPY")), "the probe is copied in"


def dockerignore_allows(path: str) -> bool:
    """Whether the build context includes ``path`` (last matching .dockerignore rule wins)."""
    allowed = True
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        rule = raw.strip()
        if not rule or rule.startswith("#"):
            continue
        negate = rule.startswith("!")
        pattern = rule.removeprefix("!").rstrip("/")
        matches = (
            pattern == "**" or fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/")
        )
        matches = (
            matches
            or fnmatch.fnmatch(path, pattern.replace("**/", "*/"))
            or fnmatch.fnmatch(path, pattern.removeprefix("**/"))
        )
        if matches:
            allowed = negate
    return allowed


def test_build_context_holds_what_the_dockerfile_copies_and_not_the_rest() -> None:
    copies = [i for i in DOCKERFILE if i.keyword == "COPY" and not i.args.startswith("--from=")]
    sources = [source for i in copies for source in i.args.split()[:-1]]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert dockerignore_allows(source.rstrip("/")), f".dockerignore drops {source}"
    for excluded in (".venv", ".git", "tests/conftest.py", ".tools", "service/ofc/__pycache__"):
        assert not dockerignore_allows(excluded), excluded


def load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "ofc_healthcheck", REPO / "deploy/docker/healthcheck.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("listen", "target"),
    [
        ("0.0.0.0:50051", "127.0.0.1:50051"),
        ("[::]:50051", "[::1]:50051"),
        ("127.0.0.1:7000", "127.0.0.1:7000"),
        (":9000", "127.0.0.1:9000"),
    ],
)
def test_health_probe_dials_loopback_for_wildcard_listen_addresses(
    listen: str, target: str
) -> None:
    assert load_healthcheck().probe_target(listen) == target


def test_health_probe_reports_an_unreachable_server_as_unhealthy() -> None:
    from tests.conftest import free_port

    status = load_healthcheck().check({"OFC_LISTEN": f"127.0.0.1:{free_port()}"})
    assert status == 1
