"""protos/README.md's error table lists every ErrorInfo reason the service can send, each once,
with the status code it travels with: the reasons are read from the code (every error class
of the core and the shell, which is where every ErrorInfo comes from), so a new error cannot
ship undocumented and a documented one cannot silently change its code."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import ofc
import ofc_service
from ofc.errors import OfcError
from ofc_service.api.errors import REASON_CODES, api_error

README = Path(__file__).resolve().parents[2] / "protos" / "README.md"
ROW = re.compile(r"^\| `([A-Z_]+)` \| ([A-Z_]+) \| .+ \|$")


def error_classes() -> Iterator[type[OfcError]]:
    """Every error class the service defines (OfcError itself is only their base: never sent)."""
    for package in (ofc, ofc_service):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    pending = list(OfcError.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in ("ofc", "ofc_service"):  # not a test's own
            yield cls


def documented() -> list[tuple[str, str]]:
    text = README.read_text()
    table = text[text.index("| reason | code | when |") :].split("\n\n", 1)[0]
    rows = [ROW.match(line) for line in table.splitlines()[2:]]
    assert all(rows), [
        line for line, row in zip(table.splitlines()[2:], rows, strict=True) if not row
    ]
    return [(row.group(1), row.group(2)) for row in rows if row]


def test_every_reason_is_documented_once_with_its_code() -> None:
    # The error classes' own reasons, and the reasons the error table gives store, record
    # and credential errors (which are not OfcErrors), each with the code it is sent with.
    classes = {cls.reason: api_error(cls("probe")).code.name for cls in error_classes()}
    table = {reason: code.name for reason, code in REASON_CODES.items()}
    assert all(table[r] == code for r, code in classes.items() if r in table)
    in_code = classes | table
    in_readme = documented()
    reasons = [reason for reason, _ in in_readme]
    assert len(reasons) == len(set(reasons)), "a reason listed twice"
    assert dict(in_readme) == in_code


def test_the_table_is_read_from_the_readme() -> None:
    """The parser finds what a reader sees (a check that reads nothing proves nothing)."""
    rows = dict(documented())
    assert rows["INVALID_CARD"] == "INVALID_ARGUMENT"
    assert rows["CLIENT_SEED_POLICY"] == "FAILED_PRECONDITION"
    assert rows["SERVER_SHUTTING_DOWN"] == "UNAVAILABLE"
    assert len(rows) >= 35
