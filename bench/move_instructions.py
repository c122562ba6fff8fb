"""Instructions per move, under callgrind: ``.venv/bin/python -m bench.move_instructions``.

    .venv/bin/python -m bench.move_instructions                # 8 hands, private redis-server
    .venv/bin/python -m bench.move_instructions --hands 4 --keep /tmp/ofc-callgrind

CPU time per call on a shared machine moves by a third from run to run; the number of
instructions a call executes hardly moves. This bench runs a TableService in one process
under ``valgrind --tool=callgrind`` on a private ``redis-server`` and counts the
instructions of

- **PlaceCards**: ``TableHandlers.PlaceCards`` called in process (request checks, the
  manager's pipeline, the presenter, redis-py, the commit's round trip), two seats playing
  ``--hands`` hands one move after another on one table, so that every move meets the
  record this process wrote (the hit path); the hand-ending move, with its history and
  settlement, is among them;
- **floor move**: what ``bench.move_floor``'s stored empty move does on Redis (one pipelined
  ZADD and a script that appends two events), through the same redis-py client.

Only the calls themselves are counted: each runs inside ``sys.call_tracing`` and callgrind
collects inside that C function alone (``--toggle-collect=sys_call_tracing``); the moves'
seeds and clock are fixed, so two runs deal the same cards. Neither count has the gRPC
transport or the watchers' reads (``bench.move_path`` measures the whole move by CPU time).
``--keep DIR`` keeps the callgrind files, for ``callgrind_annotate --inclusive=yes``.

Where a PlaceCards' instructions go: ``--stages`` adds a run per stage of the pipeline
(:data:`STAGES`), and ``--stage MODULE:QUALNAME`` one for any plain function, that counts
only that function's calls made inside the counted PlaceCards calls (the calls themselves
are then not counted): the instructions per PlaceCards each stage takes, inclusive (a stage
inside another is counted in both). C code that copies memory counts an instruction a byte
copied (``rep movsb``), so a stage of large copies (a zlib compressor's) counts more than
its share of the time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import importlib
import inspect
import itertools
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ofc import engine
from ofc_service.api.tables import ProtobufPresenter, TableHandlers
from ofc_service.application.manager import TableManager
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import RedisTableStore
from ofcpoker.v1 import table_service_pb2 as pb
from redis.asyncio import Redis

from bench.move_floor import APPEND_TWO_EVENTS, EVENT
from bench.tables import API_KEY, LONG_TURN_MS, Seat, fantasyland_request, placements

T = TypeVar("T")
KINDS = ("place", "floor")
STAGES = (
    "ofc_service.api.tables:request_digest",
    "ofc_service.application.manager:TableManager.decide",
    "ofc.engine:apply",
    "ofc_service.application.manager:TableManager.encode",
    "ofc_service.api.tables:ProtobufPresenter.response",
    "ofc_service.api.tables:ProtobufPresenter.event",
    "ofc_service.application.records:TableRecord.write",
    "ofc_service.application.manager:_history_extra",
    "ofc_service.store.redis:pack_event",
)
"""The pipeline's stages (``--stages``): the request's digest, decide (authorise and the
engine step: ``engine.apply`` and the record's bookkeeping), encode (the events, the
response view, the record, the hand's history when it ends), and the events' packing in the
store."""
_TOTALS = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)


class _Run:
    """Runs coroutines to completion one by one on a loop of its own; ``counted`` ones
    inside ``sys.call_tracing``, the only code callgrind collects (with a stage: only that
    stage's calls inside them, see :func:`_count_stage`)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.calls = 0
        self.in_counted = False  # a counted call is running (its stage's calls count)
        self.whole = True  # counted calls are counted whole (no stage)

    def __call__(self, work: Awaitable[T], *, counted: bool = False) -> T:
        if not counted:
            return self.loop.run_until_complete(work)
        self.calls += 1
        if not self.whole:
            self.in_counted = True
            try:
                return self.loop.run_until_complete(work)
            finally:
                self.in_counted = False
        result: T = sys.call_tracing(self.loop.run_until_complete, (work,))
        return result


def _resolve(stage: str) -> tuple[Any, str, Any, bool]:
    """``module:qualname``'s owner (the module or class its callers look it up in), name,
    function and whether it is a static method; SystemExit for anything else."""
    module_name, _, qualname = stage.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
        *path, name = qualname.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = inspect.getattr_static(owner, name)
    except (ImportError, AttributeError, ValueError) as missing:
        raise SystemExit(f"--stage {stage}: no such function ({missing})") from None
    is_static = isinstance(original, staticmethod)
    function = original.__func__ if is_static else original
    if not inspect.isfunction(function) or inspect.iscoroutinefunction(function):
        raise SystemExit(f"--stage {stage}: not a plain function (a coroutine's calls run later)")
    return owner, name, function, is_static


@contextlib.contextmanager
def _count_stage(run: _Run, stage: str | None) -> Iterator[None]:
    """Within: only ``stage``'s calls (``module:qualname``, a plain function or method)
    made inside ``run``'s counted calls are counted (None: the counted calls whole). The
    function is replaced by one that calls it inside ``sys.call_tracing`` then, and as it
    is otherwise; put back on the way out."""
    if stage is None:
        yield
        return
    owner, name, function, is_static = _resolve(stage)

    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        if not run.in_counted:
            return function(*args, **kwargs)
        run.in_counted = False  # a recursive call is inside this one already
        try:
            return sys.call_tracing(lambda: function(*args, **kwargs), ())
        finally:
            run.in_counted = True

    original = inspect.getattr_static(owner, name)
    setattr(owner, name, staticmethod(counted) if is_static else counted)
    run.whole = False
    try:
        yield
    finally:
        setattr(owner, name, original)
        run.whole = True


def _seeds() -> Any:
    counter = itertools.count()
    return lambda: hashlib.sha256(b"bench-seed-%d" % next(counter)).digest()


def _clock() -> Any:
    counter = itertools.count(1_800_000_000_000, 1000)
    return lambda: next(counter)


def play(redis_url: str, kind: str, hands: int, stage: str | None = None) -> int:
    """Make the counted calls of ``kind``; how many were counted. ``stage``: count only
    that function's calls inside the PlaceCards calls (:func:`_count_stage`)."""
    run = _Run()
    with _count_stage(run, stage):
        return _play(run, redis_url, kind, hands)


def _play(run: _Run, redis_url: str, kind: str, hands: int) -> int:
    client = Redis.from_url(redis_url)
    if kind == "floor":
        sha = run(client.script_load(APPEND_TWO_EVENTS))

        async def stored_move(table_id: bytes) -> None:
            async with client.pipeline(transaction=False) as pipe:
                pipe.zadd("floor:deadlines", {table_id: 1})
                pipe.evalsha(sha, 1, b"floor:events:" + table_id, EVENT)
                await pipe.execute()

        for k in range(10 * (hands + 1)):
            run(stored_move(b"t%d" % (k % 7)), counted=k >= 10)
        run(client.aclose())
        return run.calls
    store = RedisTableStore(client, key_prefix=f"instr{uuid.uuid4().hex[:8]}", owns_clients=True)
    manager = TableManager(
        store,
        Authenticator([API_KEY]),
        ProtobufPresenter(),
        clock_ms=_clock(),
        server_seed=_seeds(),
    )
    handlers = TableHandlers(manager)
    operator = Credentials(api_key=API_KEY)
    ids = (f"r{k}" for k in itertools.count())
    created = run(
        handlers.CreateTable(
            pb.CreateTableRequest(seats=2, request_id=next(ids), turn_time_limit_ms=LONG_TURN_MS),
            operator,
        )
    )
    table_id, version = created.table_id, created.table.version
    seats: list[Seat] = []
    for s in range(2):
        joined = run(
            handlers.JoinSeat(
                pb.JoinSeatRequest(
                    table_id=table_id, seat=s, player_id=f"p{s}",
                    expected_version=version, request_id=next(ids),
                ),
                operator,
            )
        )  # fmt: skip
        version = joined.table.version
        seats.append(Seat(joined.seat_token))
    for hand_number in range(hands + 1):  # the first hand warms up
        for seat in seats:
            seat.counts = [0, 0, 0]
        creds = [Credentials(seat_token=s.token) for s in seats]
        run(
            handlers.StartHand(
                pb.StartHandRequest(
                    table_id=table_id, expected_version=version, request_id=next(ids)
                ),
                creds[0],
            )
        )
        while True:
            record, version, _ = run(manager.load(table_id))
            match = record.match
            to_act = engine.seats_to_act(match)
            if not to_act:
                break
            waiting = to_act[0]
            assert match.hand is not None
            own = match.hand.seat(waiting)
            pending = [str(c) for c in own.pending]
            if own.in_fantasyland:
                request: Any = fantasyland_request(table_id, waiting, pending)
                request.expected_version, request.request_id = version, next(ids)
                run(handlers.SetFantasyland(request, creds[waiting]))
            else:
                request = pb.PlaceCardsRequest(
                    table_id=table_id, seat=waiting, placements=placements(seats[waiting], pending),
                    expected_version=version, request_id=next(ids),
                )  # fmt: skip
                run(handlers.PlaceCards(request, creds[waiting]), counted=hand_number > 0)
    run(store.close())
    return run.calls


def measure(
    redis_url: str, kind: str, hands: int, *, keep: Path | None = None, stage: str | None = None
) -> tuple[int, int]:
    """(instructions, calls) of ``kind``'s counted calls (with ``stage``: that stage's
    part of them), run under callgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RuntimeError("valgrind is not on PATH (apt-get install valgrind)")
    out_dir = keep or Path(tempfile.mkdtemp(prefix="ofc-callgrind-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    name = kind if stage is None else f"{kind}.{stage.replace(':', '.')}"
    out = out_dir / f"callgrind.{name}.out"
    inside = ["--inside", redis_url, kind, str(hands)] + ([] if stage is None else [stage])
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--toggle-collect=sys_call_tracing",
         f"--callgrind-out-file={out}", sys.executable, "-m", "bench.move_instructions",
         *inside],
        capture_output=True,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(
            f"the {kind} run under callgrind failed:\n{done.stderr.decode()[-3000:]}"
        )
    calls = int(done.stdout.split()[-1])
    found = _TOTALS.search(out.read_bytes())
    assert found is not None, f"no totals in {out}"
    if keep is None:
        shutil.rmtree(out_dir)
    return int(found.group(1)), calls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.move_instructions", description=__doc__)
    parser.add_argument("--hands", type=int, default=8, help="counted hands (one more warms up)")
    parser.add_argument("--redis-url", help="an existing Redis (default: a private one)")
    parser.add_argument("--keep", type=Path, help="keep the callgrind files in this directory")
    parser.add_argument(
        "--stages", action="store_true", help="also each stage of the pipeline (STAGES)"
    )
    parser.add_argument(
        "--stage",
        action="append",
        default=[],
        metavar="MODULE:QUALNAME",
        help="also this function's part of a PlaceCards (repeatable)",
    )
    parser.add_argument("--inside", nargs="+", help=argparse.SUPPRESS)  # URL KIND HANDS [STAGE]
    args = parser.parse_args(argv)
    if args.inside:
        url, kind, hands, *stage = args.inside
        print(play(url, kind, int(hands), *stage))
        return 0
    stages = [*(STAGES if args.stages else ()), *args.stage]
    for stage in stages:  # before any run: a misspelt stage ends the bench at once
        _resolve(stage)
    from bench.tables import redis_for

    per_call: dict[str, float] = {}
    with redis_for(args.redis_url) as url:
        for kind in KINDS:
            instructions, calls = measure(url, kind, max(1, args.hands), keep=args.keep)
            per_call[kind] = instructions / calls
            name = "PlaceCards" if kind == "place" else "floor move"
            print(f"{name:<11} {per_call[kind] / 1e6:7.3f} M instructions/call ({calls} calls)")
        for stage in stages:
            instructions, calls = measure(
                url, "place", max(1, args.hands), keep=args.keep, stage=stage
            )
            print(f"  {stage:<55} {instructions / calls / 1e3:8.1f} k instructions/PlaceCards")
    print(f"PlaceCards / floor move: {per_call['place'] / per_call['floor']:.2f}x (instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
