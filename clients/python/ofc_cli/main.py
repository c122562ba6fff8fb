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


# Options whose value is a table id. An id drawn before ids avoided a leading "-" (URL-safe
# base64: one in 64) may start with one, which argparse would take for an option.
TABLE_OPTIONS = ("--table",)


class Parser(argparse.ArgumentParser):
    """argparse, with a bad argument said in one line (``ofc CMD -h`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        if "unrecognized arguments: -" in message or "expected one argument" in message:
            # the likeliest cause: a table id (or another value) that starts with "-"
            message += '; a value that starts with "-" goes as --option=VALUE, or after "--"'
        self.exit(2, f"error: USAGE: {self.prog}: {message} (see {self.prog} -h)\n")


def table_values_joined(argv: Sequence[str]) -> list[str]:
    """``argv`` with each table-id option and its value as one argument (``--table=ID``), so
    that an id starting with "-" is read as the option's value; a value that starts with
    "--" is taken for the next option (write ``--table=ID`` for such an id).

    >>> table_values_joined(["verify", "--table", "-a04JyBQ3bceGma4kVabhw", "--api-key", "k"])
    ['verify', '--table=-a04JyBQ3bceGma4kVabhw', '--api-key', 'k']
    >>> table_values_joined(["verify", "--table", "--api-key", "k"])
    ['verify', '--table', '--api-key', 'k']
    """
    joined: list[str] = []
    for arg in argv:
        if joined and joined[-1] in TABLE_OPTIONS and not arg.startswith("--"):
            joined[-1] = f"{joined[-1]}={arg}"
        else:
            joined.append(arg)
    return joined


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
    args = build_parser().parse_args(table_values_joined(sys.argv[1:] if argv is None else argv))
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
