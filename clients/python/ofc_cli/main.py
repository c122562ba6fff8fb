"""The ``ofc`` command line: one module per subcommand, each with ``register(subparsers)``.

Exit status: 0 ok, 2 bad input (one line on stderr naming the reason and the place: bad
arguments too, as ``error: USAGE: ...``), 1 anything else (a server that cannot be reached,
a discrepancy found by ``verify``; ``error: INTERNAL: ...`` for a bug, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from ofc.errors import OfcError

from ofc_cli import cmd_export, cmd_play, cmd_rules, cmd_serve, cmd_solve, cmd_verify

SUBCOMMAND_MODULES = (cmd_rules, cmd_solve, cmd_play, cmd_serve, cmd_verify, cmd_export)


class Parser(argparse.ArgumentParser):
    """argparse, with a bad argument said in one line (``ofc CMD -h`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: USAGE: {self.prog}: {message} (see {self.prog} -h)\n")


def version() -> str:
    """The installed distribution's version (``ofc --version``)."""
    try:
        return metadata.version("ofc")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="ofc", description="Open-Face Chinese Poker rules and service")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.handler(args)
    except OfcError as error:
        print(format_error(error), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as error:  # a bug: one line that says so, not a traceback
        print(f"error: INTERNAL: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return status


def format_error(error: OfcError) -> str:
    where = f" at {error.field}" if error.field else ""
    return f"error: {error.reason}{where}: {error.message}"


if __name__ == "__main__":
    sys.exit(main())
