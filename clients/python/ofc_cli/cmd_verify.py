"""``ofc verify HISTORY.json``: check a hand history as an auditor would (see :mod:`ofc.verify`).

Prints ``OK``, or the first discrepancy as ``CODE at LOCATION: message``. With several files,
each line starts with the file's name. Exit status: 0 every history verified, 1 a
discrepancy, 2 a file that cannot be read or is not a hand history (``MALFORMED_HISTORY``,
one line on stderr) or a bad ``--expect-ruleset``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ofc.errors import InvalidRulesetError
from ofc.rulesets import Ruleset, resolve_ruleset
from ofc.verify import Code, verify_history_json


def register(subparsers: Any) -> None:
    verify = subparsers.add_parser(
        "verify",
        help="check hand histories: commitment, deck, deals, actions, boards, settlement",
    )
    verify.add_argument(
        "histories",
        nargs="+",
        metavar="HISTORY.json",
        help="a hand history as `ofc play` prints it or GetHandHistory returns it (- for stdin)",
    )
    verify.add_argument(
        "--expect-ruleset",
        metavar="RULESET",
        help="also require these ruleset parameters: a preset name, or a JSON object of "
        'overrides on a preset such as \'{"preset": "classic", "loss_cap": 30}\'',
    )
    verify.set_defaults(handler=run_verify)


def _expected_ruleset(spec: str | None) -> Ruleset | None:
    if spec is None:
        return None
    if not spec.lstrip().startswith("{"):
        return resolve_ruleset(spec)
    try:
        return resolve_ruleset(json.loads(spec))
    except json.JSONDecodeError as exc:
        raise InvalidRulesetError(f"--expect-ruleset is not JSON: {exc}", field="ruleset") from None


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as stream:
        return stream.read()


def run_verify(args: argparse.Namespace) -> int:
    expected = _expected_ruleset(args.expect_ruleset)
    several = len(args.histories) > 1
    status = 0
    for path in args.histories:
        prefix = f"{path}: " if several else ""
        try:
            text = _read(path)
        except OSError as exc:
            print(
                f"error: {prefix}INVALID_INPUT: cannot read {path}: {exc.strerror}",
                file=sys.stderr,
            )
            status = 2
            continue
        found = verify_history_json(text, expected_ruleset=expected)
        if found is None:
            print(f"{prefix}OK")
        elif found.code is Code.MALFORMED_HISTORY:
            print(f"error: {prefix}{found}", file=sys.stderr)
            status = 2
        else:
            print(f"{prefix}{found}")
            status = max(status, 1)
    return status
