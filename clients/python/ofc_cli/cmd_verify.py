"""``ofc verify HISTORY...``: check hand histories as an auditor would (see :mod:`ofc.verify`).

Prints ``OK``, or the first discrepancy as ``CODE at LOCATION: message``. A file may hold the
bare history or ``GetHandHistory``'s response as protobuf JSON; a directory stands for every
``*.json`` under it. With several files, each line starts with the file's name, the files are
verified by ``-j`` processes (default: every core) with a progress bar on a terminal, and
the last line is ``N verified, M failed``. ``--match`` checks the files as one table's hands
(``--feed``: with the settlement feed's records from a file; ``--feed-from ADDR --table T``:
read from a running service, never acknowledged, :mod:`ofc_cli.feed_remote`). Exit status:
0 every history verified (notes do not fail it), 1 a discrepancy, 2 a file that cannot be
read or is not a hand history (``MALFORMED_HISTORY``), one newer than this verifier reads
(``NEWER_FORMAT_VERSION``), both on stderr, or a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ofc.errors import InvalidInputError, InvalidRulesetError
from ofc.rulesets import Ruleset, resolve_ruleset
from ofc.verify import UNREADABLE, check_history_json, verify_match
from ofc.verify.values import Found, loads
from tqdm import tqdm

from ofc_cli.args import integer
from ofc_cli.feed_remote import CONSUMER, GROUP
from ofc_cli.remote import (
    add_tls_arguments,
    channel_credentials,
    check_target,
    quiet_grpc,
    uses_tls,
)

if TYPE_CHECKING:
    import grpc

Line = tuple[bool, str]  # (to stderr, text)


def register(subparsers: Any) -> None:
    verify = subparsers.add_parser(
        "verify",
        help="check hand histories (one by one, or a table's as one chain): commitment, deck, "
        "deals, actions, deadlines, boards, settlement",
    )
    verify.add_argument(
        "histories",
        nargs="+",
        metavar="HISTORY",
        help="a hand history as `ofc play` prints it or GetHandHistory returns it (its "
        "protobuf JSON, or the bare history_json); a directory: every *.json in it; - for stdin",
    )
    verify.add_argument(
        "--expect-ruleset",
        metavar="RULESET",
        help="also require these ruleset parameters: a preset name, or a JSON object of "
        'overrides on a preset such as \'{"preset": "classic", "loss_cap": 30}\'',
    )
    verify.add_argument(
        "--check-policy",
        action="store_true",
        help="also re-run each timeout's named policy when this release ships it "
        "(others: a note, not a failure)",
    )
    verify.add_argument(
        "-j",
        "--jobs",
        type=integer,
        default=os.cpu_count() or 1,
        metavar="N",
        help="verify in N processes (default: every core)",
    )
    verify.add_argument(
        "-q", "--quiet", action="store_true", help="print only failures, notes and the summary"
    )
    verify.add_argument(
        "--match",
        action="store_true",
        help="the histories are one table's hands: also check them as one chain (hand "
        "numbers, states, money, commitments)",
    )
    verify.add_argument(
        "--feed",
        metavar="FEED.jsonl",
        help="with --match: the settlement feed's records (JSON Lines) to check against the hands",
    )
    verify.add_argument(
        "--feed-from",
        metavar="ADDR",
        help="with --match and --table: read the table's settlement-feed records from the "
        "server at HOST:PORT (SettlementFeedService.Subscribe as consumer "
        f"{CONSUMER!r} of group --feed-group; nothing is acknowledged)",
    )
    verify.add_argument(
        "--table", metavar="TABLE", help="with --feed-from: the table whose records to read"
    )
    verify.add_argument(
        "--feed-group",
        metavar="GROUP",
        default=GROUP,
        help=f"with --feed-from: the consumer group to read as (default {GROUP!r}; every "
        "group gets every record, so other consumers are not affected)",
    )
    verify.add_argument(
        "--api-key",
        metavar="KEY",
        default=os.environ.get("OFC_API_KEY") or None,
        help="with --feed-from: the operator key, when the server has keys [env OFC_API_KEY]",
    )
    add_tls_arguments(verify, when="with --feed-from: ")
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


def _paths(arguments: Sequence[str]) -> list[str]:
    paths: list[str] = []
    for argument in arguments:
        if argument != "-" and Path(argument).is_dir():
            # the files: not a folder named *.json, nor a link that leads nowhere
            found = sorted(p for p in Path(argument).rglob("*.json") if p.is_file())
            paths.extend(str(p) for p in found)
        else:
            paths.append(argument)
    return paths


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as stream:
        return stream.read()


# --- one history per file --------------------------------------------------------------------
_OPTIONS: tuple[Ruleset | None, bool] = (None, False)  # a worker's --expect-ruleset, --check-policy


def _init_worker(options: tuple[Ruleset | None, bool]) -> None:
    global _OPTIONS
    _OPTIONS = options


def _verify_one(path: str, prefix: str) -> tuple[int, list[Line]]:
    """The exit status of one file and the lines it prints."""
    expected, check_policy = _OPTIONS
    try:
        text = _read(path)
    except OSError as exc:
        return 2, [(True, f"error: {prefix}INVALID_INPUT: cannot read {path}: {exc.strerror}")]
    verdict = check_history_json(text, expected_ruleset=expected, check_policy=check_policy)
    found = verdict.discrepancy
    notes = [(False, f"{prefix}note: {note}") for note in verdict.notes]
    if found is None:
        return 0, [(False, f"{prefix}OK"), *notes]
    if found.code in UNREADABLE:
        return 2, [(True, f"error: {prefix}{found}")]
    return 1, [(False, f"{prefix}{found}")]


def _verify_named(path: str) -> tuple[int, list[Line]]:
    return _verify_one(path, f"{path}: ")


def _results(paths: list[str], jobs: int) -> Iterator[tuple[int, list[Line]]]:
    if jobs <= 1 or len(paths) < 2 * jobs:
        yield from map(_verify_named, paths)
        return
    with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(_OPTIONS,)) as pool:
        yield from pool.map(
            _verify_named, paths, chunksize=max(1, min(64, len(paths) // jobs // 8))
        )


def _emit(lines: list[Line], quiet: bool, bar: tqdm[Any] | None = None) -> None:
    for to_stderr, text in lines:
        if quiet and not to_stderr and text.endswith(": OK"):
            continue
        stream = sys.stderr if to_stderr else sys.stdout
        if bar is not None:
            bar.write(text, file=stream)
        else:
            print(text, file=stream)


def run_verify(args: argparse.Namespace) -> int:
    global _OPTIONS
    _OPTIONS = (_expected_ruleset(args.expect_ruleset), args.check_policy)
    if args.jobs < 1:
        raise InvalidInputError("-j must be at least 1", field="jobs")
    if args.feed is not None and not args.match:
        raise InvalidInputError("--feed needs --match", field="feed")
    if args.feed_from is not None:
        if not args.match or args.table is None or args.feed is not None:
            raise InvalidInputError(
                "--feed-from needs --match and --table, and no --feed", field="feed_from"
            )
        from ofc_service.api.parse import table_id

        table_id(args.table)  # refused here, before connecting, as the server would
    elif args.table is not None:
        raise InvalidInputError("--table needs --feed-from", field="table")
    if uses_tls(args) and args.feed_from is None:
        raise InvalidInputError("--tls and --ca-file need --feed-from", field="feed_from")
    paths = _paths(args.histories)
    if args.match:
        return _run_match(paths, args.feed, _FeedSource.of(args))
    if len(paths) == 1:
        status, lines = _verify_one(paths[0], "")
        _emit(lines, quiet=False)
        return status
    status = verified = 0
    interactive = sys.stderr.isatty()
    with tqdm(total=len(paths), unit="hand", disable=not interactive, file=sys.stderr) as bar:
        for result, lines in _results(paths, args.jobs):
            status = max(status, result)
            verified += result == 0
            _emit(lines, args.quiet, bar if interactive else None)
            bar.update()
    print(f"{verified} verified, {len(paths) - verified} failed")
    return status


# --- a table's hands as one chain ------------------------------------------------------------
class _FeedSource(NamedTuple):
    """``--feed-from``: where and as whom to read the settlement feed."""

    address: str
    table_id: str
    group: str
    api_key: str | None
    credentials: grpc.ChannelCredentials | None

    @classmethod
    def of(cls, args: argparse.Namespace) -> _FeedSource | None:
        if args.feed_from is None:
            return None
        target = check_target(args.feed_from, "feed_from")
        quiet_grpc()  # before gRPC loads (channel_credentials loads it)
        credentials = channel_credentials(args)
        return cls(target, args.table, args.feed_group, args.api_key, credentials)

    def read(self) -> list[tuple[str, Any]] | int:
        """The table's records, or the exit status after printing why they cannot be read."""
        import grpc

        from ofc_cli.feed_remote import fetch_feed

        try:
            return list(
                fetch_feed(
                    self.address,
                    self.table_id,
                    api_key=self.api_key,
                    credentials=self.credentials,
                    group=self.group,
                )
            )
        except grpc.RpcError as error:
            code = error.code()
            print(
                f"error: {code.name if code else 'UNKNOWN'}: cannot read the settlement feed "
                f"of {self.address}: {error.details()}",
                file=sys.stderr,
            )
            refused = (
                grpc.StatusCode.INVALID_ARGUMENT,
                grpc.StatusCode.UNAUTHENTICATED,
                grpc.StatusCode.PERMISSION_DENIED,
            )
            return 2 if code in refused else 1


def _run_match(paths: list[str], feed_path: str | None, source: _FeedSource | None) -> int:
    """Every finding of a match is printed (``--quiet`` changes nothing here)."""
    expected, check_policy = _OPTIONS
    histories: list[tuple[str, Any]] = []
    status = 0
    for path in paths:
        try:
            histories.append((path, _read(path)))
        except OSError as exc:
            print(f"error: INVALID_INPUT: cannot read {path}: {exc.strerror}", file=sys.stderr)
            status = 2
    feed = None
    if feed_path is not None:
        try:
            feed = read_feed(feed_path)
        except (OSError, ValueError) as exc:
            print(f"error: INVALID_INPUT: cannot read the feed {feed_path}: {exc}", file=sys.stderr)
            return 2
    if source is not None:
        fetched = source.read()
        if isinstance(fetched, int):
            return fetched
        feed = fetched
    report = verify_match(histories, feed, expected_ruleset=expected, check_policy=check_policy)
    for found in report.discrepancies:
        unreadable = found.code in UNREADABLE
        status = max(status, 2 if unreadable else 1)
        if unreadable:
            print(f"error: {found}", file=sys.stderr)
        else:
            print(found)
    for note in report.notes:
        print(f"note: {note}")
    chained = len(report.discrepancies) - (report.hands - report.verified)
    print(
        f"{report.verified} verified, {report.hands - report.verified} failed; "
        f"the match of {report.hands} hands: {chained} chain discrepancies"
    )
    return status


_STREAM_END_KEYS = frozenset(("error", "metadata"))


def read_feed(path: str) -> list[tuple[str, Any]]:
    """A feed file's records, ``(source, record)``: JSON Lines of records as the feed stream
    holds them, or of ``Subscribe`` responses / records in protobuf JSON. A Connect stream's
    end message (an object of ``error`` and ``metadata`` only, what a ``curl`` of Subscribe
    ends with) is no record: it is skipped."""
    records: list[tuple[str, Any]] = []
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    # JSON Lines end at "\n" (and "\r\n") only: str.splitlines would break a line at a
    # U+2028 or \x1c inside a string too. Each line is JSON as strict as a history's (no
    # NaN, no key twice), as the Node verifier reads it.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = loads(line.removesuffix("\r"))
        except Found as refused:
            message = refused.discrepancy.message.removeprefix("not JSON: ")
            raise ValueError(f"line {number} is not JSON: {message}") from None
        if isinstance(data, dict) and data and data.keys() <= _STREAM_END_KEYS:
            continue
        records.append((f"{path}:{number}", _feed_record(data)))
    return records


def _feed_record(data: Any) -> Any:
    """A record in the feed stream's form, from any of the forms a feed file may hold:
    protobuf JSON is told by a Subscribe response's ``record``, a camelCase name, or (with
    the .proto's names) ``hand_number`` written as a string, as protobuf JSON writes a
    64-bit number and the stream never does."""
    if isinstance(data, dict) and (
        "settlementId" in data or "record" in data or isinstance(data.get("hand_number"), str)
    ):
        from ofc_service.api.settlement_feed import record_from_proto_json

        return record_from_proto_json(data.get("record", data))
    return data
