"""clients/python/README.md's example runs as written against a live server and prints what
the README says it prints."""

from __future__ import annotations

import re
from pathlib import Path

from ofc_service.server.background import BackgroundServer

from tests.e2e.tablekit import run_example

README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"


def block(kind: str) -> str:
    found = re.search(rf"```{kind}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert found, f"no {kind} block in {README}"
    return found.group(1)


def test_the_example_prints_what_the_readme_says(server: BackgroundServer, tmp_path: Path) -> None:
    example = tmp_path / "example.py"
    example.write_text(block("python"), encoding="utf-8")
    assert run_example(example, server.address) == block("text")
