"""The TableStore contract, run against every store (memory and Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import time
from typing import Any

import pytest
from ofc_service.store import (
    AlreadyAppliedError,
    Commit,
    CommitResult,
    EventsTrimmedError,
    ExtraPage,
    InvalidIdError,
    MemoryTableStore,
    RequestIdReusedError,
    StaleVersionError,
    StoredEvent,
    StoredTable,
    StoreUnavailableError,
    TableExistsError,
    TableNotFoundError,
    TableStore,
    format_event_id,
    parse_event_id,
)
from ofc_service.store.redis_io import text

from .conftest import Backend


async def play(
    store: TableStore,
    table_id: str,
    version: int,
    *,
    request_id: str | None = None,
    events: int = 1,
    deadline_ms: int | None = None,
    ttl_seconds: int = 3600,
    request_ttl_seconds: int = 3600,
    extra: dict[str, bytes] | None = None,
) -> CommitResult:
    """Commit version -> version + 1 with state ``v<n>`` and events ``e<n>.<i>``."""
    new = version + 1
    return await store.commit(
        Commit(
            table_id,
            expected_version=version,
            state=b"v%d" % new,
            events=[b"e%d.%d" % (new, i) for i in range(events)],
            response=b"r%d" % new,
            request_id=request_id or f"req-{new}",
            deadline_ms=deadline_ms,
            extra=extra or {},
            ttl_seconds=ttl_seconds,
            request_ttl_seconds=request_ttl_seconds,
        )
    )


async def hand_begun(store: TableStore, request_id: str) -> tuple[CommitResult, CommitResult]:
    """Table "t" created with two events, then a hand begun that keeps its own log segment
    alone (the two are trimmed): the creation's result and the hand start's."""
    created = await store.create_table("t", b"v1", events=[b"e1.0", b"e1.1"])
    begun = await store.commit(Commit(
        "t", expected_version=1, state=b"v2", events=[b"h.0"], response=b"",
        request_id=request_id, deadline_ms=None, keep_segments=1,
    ))  # fmt: skip
    return created, begun


def payloads(events: list[StoredEvent]) -> list[bytes]:
    return [e.data for e in events]


# --- create and load ------------------------------------------------------------------------------
async def test_create_then_load(backend: Backend) -> None:
    async with backend.open() as h:
        created = await h.store.create_table("t1", b"v1", events=[b"e1.0", b"e1.1"])
        assert (created.version, created.response, created.replayed) == (1, b"", False)
        assert len(created.event_ids) == 2
        table = await h.other.load("t1")
        assert (table.table_id, table.version, table.state) == ("t1", 1, b"v1")
        assert table.deadline_ms is None
        assert table.last_event_id == created.event_ids[-1]

        bare = await h.store.create_table("t2", b"")
        assert bare.event_ids == ()
        assert (await h.store.load("t2")).last_event_id == "0"


async def test_create_twice_is_refused(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        with pytest.raises(TableExistsError):
            await h.other.create_table("t", b"other")
        assert (await h.store.load("t")).state == b"v1"


async def test_missing_table(backend: Backend) -> None:
    async with backend.open() as h:
        with pytest.raises(TableNotFoundError):
            await h.store.load("nope")
        with pytest.raises(TableNotFoundError):
            await play(h.store, "nope", 1)
        with pytest.raises(TableNotFoundError):
            await h.store.read_events("nope")
        with pytest.raises(TableNotFoundError):
            await h.store.wait_events("nope", after="0", timeout_s=0.05)
        assert await h.store.get_extra("nope", "hand:1") is None
        assert await h.store.list_extra("nope", "hand") == ExtraPage((), None, 0)


async def test_bad_arguments_are_refused(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        for table_id in ["", "a{b", "a}b", "with space", "x" * 201, "tab\x00"]:
            with pytest.raises(InvalidIdError):
                await h.store.load(table_id)
        with pytest.raises(InvalidIdError):
            await play(h.store, "t", 1, request_id="two words")
        with pytest.raises(InvalidIdError):
            await h.store.read_events("t", after="not-an-id")
        with pytest.raises(InvalidIdError):
            await h.store.list_extra("t", "a:b")
        with pytest.raises(InvalidIdError):
            await play(h.store, "t", 1, extra={"bad key": b""})
        with pytest.raises(ValueError, match="expected_version"):
            await play(h.store, "t", 0)
        with pytest.raises(ValueError, match="ttl_seconds"):
            await play(h.store, "t", 1, ttl_seconds=0)
        with pytest.raises(ValueError, match="deadline_ms"):
            await play(h.store, "t", 1, deadline_ms=-1)
        with pytest.raises(ValueError, match="bad page"):
            await h.store.list_extra("t", "hand", count=0)
        assert (await h.store.load("t")).version == 1


# --- versions and request ids ---------------------------------------------------------------------
async def test_commit_increments_the_version(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        for version in range(1, 6):
            store = h.store if version % 2 else h.other
            result = await play(store, "t", version)
            assert (result.version, result.response, result.replayed) == (
                version + 1,
                b"r%d" % (version + 1),
                False,
            )
        table = await h.store.load("t")
        assert (table.version, table.state) == (6, b"v6")


async def test_stale_version_is_refused_and_changes_nothing(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        await play(h.store, "t", 1, deadline_ms=5_000)
        before = await h.store.load("t")
        with pytest.raises(StaleVersionError) as caught:
            await play(h.other, "t", 1, request_id="late", deadline_ms=9_000, extra={"x": b""})
        assert (caught.value.current_version, caught.value.expected_version) == (2, 1)
        assert caught.value.reason == "STALE_VERSION"
        assert await h.store.load("t") == before
        assert payloads(await h.store.read_events("t")) == [b"e2.0"]
        assert await h.store.get_response("t", "late") is None
        assert await h.store.get_extra("t", "x") is None


async def test_request_id_replays_the_first_result(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        first = await play(h.store, "t", 1, request_id="move-1", events=2, deadline_ms=5_000)
        await play(h.store, "t", 2)
        before = await h.store.load("t")
        # The retry still carries the old version: it gets the first answer, not ABORTED.
        again = await h.other.commit(
            Commit(
                "t",
                expected_version=1,
                state=b"something else",
                events=[b"other"],
                response=b"other response",
                request_id="move-1",
                deadline_ms=9_000,
                extra={"hand:1": b"h"},
            )
        )
        assert again == CommitResult(first.version, first.response, True, first.event_ids)
        assert await h.store.load("t") == before
        assert payloads(await h.store.read_events("t")) == [b"e2.0", b"e2.1", b"e3.0"]
        assert await h.store.get_extra("t", "hand:1") is None
        assert await h.store.get_response("t", "move-1") == b"r2"
        assert await h.store.get_response("t", "never-sent") is None


async def test_a_request_id_replays_only_the_request_it_recorded(backend: Backend) -> None:
    """The record keeps the request's digest: the same id with another digest is refused
    (RequestIdReusedError) and changes nothing; the same digest replays, through any store
    instance; reading the record checks it the same way."""
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        first = await h.store.commit(Commit(
            "t", expected_version=1, state=b"v2", events=[b"e2"], response=b"r2",
            request_id="move-1", deadline_ms=5_000, request_digest="d1",
        ))  # fmt: skip
        before = await h.store.load("t")
        for digest, version in (("d2", 1), ("", 1), ("d2", 2)):  # another request, any version
            with pytest.raises(RequestIdReusedError) as caught:
                await h.other.commit(Commit(
                    "t", expected_version=version, state=b"x", events=[b"x"], response=b"x",
                    request_id="move-1", deadline_ms=9_000, extra={"hand:1": b"h"},
                    request_digest=digest,
                ))  # fmt: skip
            assert caught.value.reason == "REQUEST_ID_REUSED"
        assert await h.store.load("t") == before
        assert payloads(await h.store.read_events("t")) == [b"e2"]
        assert await h.store.get_extra("t", "hand:1") is None
        again = await h.other.commit(Commit(
            "t", expected_version=1, state=b"x", events=[b"x"], response=b"x",
            request_id="move-1", deadline_ms=None, request_digest="d1",
        ))  # fmt: skip
        assert again == CommitResult(2, b"r2", True, first.event_ids)
        assert await h.store.get_response("t", "move-1", request_digest="d1") == b"r2"
        assert await h.other.get_response("t", "move-1") == b"r2"  # no digest: not checked
        with pytest.raises(RequestIdReusedError):
            await h.other.get_response("t", "move-1", request_digest="d2")
        assert await h.store.get_response("t", "other", request_digest="d1") is None
        # a record written without a digest is a request without one
        await play(h.store, "t", 2, request_id="plain")
        assert (await play(h.other, "t", 2, request_id="plain")).replayed
        with pytest.raises(RequestIdReusedError):
            await h.other.get_response("t", "plain", request_digest="d1")
        with pytest.raises(InvalidIdError):
            await h.store.commit(Commit(
                "t", expected_version=3, state=b"x", events=[], response=b"x",
                request_id="bad-digest", deadline_ms=None, request_digest="two words",
            ))  # fmt: skip


async def test_exactly_one_of_many_racing_commits_wins(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        for version in range(1, 11):
            racers = [
                play(h.store if i % 2 else h.other, "t", version, request_id=f"r{version}.{i}")
                for i in range(12)
            ]
            outcomes = await asyncio.gather(*racers, return_exceptions=True)
            won = [o for o in outcomes if isinstance(o, CommitResult)]
            assert len(won) == 1, outcomes
            assert all(isinstance(o, StaleVersionError) for o in outcomes if o not in won), outcomes
            assert won[0].version == version + 1
        assert (await h.store.load("t")).version == 11
        assert payloads(await h.store.read_events("t")) == [b"e%d.0" % v for v in range(2, 12)]


async def test_cancelled_commits_leave_a_consistent_table(backend: Backend) -> None:
    """Callers cancelled at random points (a crashed request): state, version and events
    still agree, and no version is applied twice."""
    async with backend.open() as h:
        await h.store.create_table("t", b"v1", events=[b"e1.0"])
        rng = random.Random(5)

        stop = asyncio.Event()

        async def mover(store: TableStore) -> None:
            # Python 3.11's wait_for (inside redis-py) can swallow a cancel: stop anyway.
            while not stop.is_set():
                await asyncio.sleep(0)  # the in-memory store never suspends by itself
                table = await store.load("t")
                if table.version >= 2_000:  # stay below the event cap
                    return
                with contextlib.suppress(StaleVersionError):
                    await play(store, "t", table.version, request_id=f"m{rng.random()}")

        for _ in range(30):
            stop.clear()
            movers = [asyncio.create_task(mover(s)) for s in (h.store, h.other, h.store)]
            await asyncio.sleep(rng.random() * 0.01)
            for task in movers:
                task.cancel()
            stop.set()
            await asyncio.gather(*movers, return_exceptions=True)
        table = await h.store.load("t")
        assert table.version > 1
        assert table.state == b"v%d" % table.version
        events = await h.store.read_events("t", limit=10_000)
        assert payloads(events) == [b"e%d.0" % v for v in range(1, table.version + 1)]
        assert table.last_event_id == events[-1].event_id


# --- the event log --------------------------------------------------------------------------------
async def test_events_in_order_and_after_an_id(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1", events=[b"e1.0"])
        for version in range(1, 8):
            await play(h.store, "t", version, events=version % 3)  # 0, 1 or 2 events
        everything = await h.other.read_events("t")
        expected = [b"e1.0"] + [b"e%d.%d" % (v + 1, i) for v in range(1, 8) for i in range(v % 3)]
        assert payloads(everything) == expected
        keys = [parse_event_id(e.event_id) for e in everything]
        assert keys == sorted(set(keys))

        paged: list[StoredEvent] = []
        after = "0"
        while page := await h.store.read_events("t", after=after, limit=3):
            assert len(page) <= 3
            paged += page
            after = page[-1].event_id
        assert paged == everything
        for i, event in enumerate(everything):
            assert await h.store.read_events("t", after=event.event_id) == everything[i + 1 :]
        assert (await h.store.load("t")).last_event_id == everything[-1].event_id


async def test_snapshot_then_events_has_no_gap(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1", events=[b"e1.0"])
        await play(h.store, "t", 1)
        snapshot = await h.store.load("t")
        await play(h.other, "t", 2, events=2)
        missed = await h.store.read_events("t", after=snapshot.last_event_id)
        assert payloads(missed) == [b"e3.0", b"e3.1"]


async def test_trimmed_events_are_reported_not_skipped(backend: Backend) -> None:
    async with backend.open(max_events=5) as h:
        await h.store.create_table("t", b"v1")
        ids: list[str] = []
        for version in range(1, 4):
            ids += (await play(h.store, "t", version, events=50)).event_ids
        with pytest.raises(EventsTrimmedError) as caught:
            await h.store.read_events("t")
        assert caught.value.reason == "EVENTS_TRIMMED"
        with pytest.raises(EventsTrimmedError):
            await h.store.read_events("t", after=ids[0])
        with pytest.raises(EventsTrimmedError):
            await h.store.wait_events("t", after=ids[0], timeout_s=1)
        # At least the last five are kept; reading after a kept one is fine.
        tail = await h.store.read_events("t", after=ids[-5])
        assert payloads(tail) == [b"e4.%d" % i for i in range(46, 50)]
        last = await h.store.load("t")
        assert await h.store.read_events("t", after=last.last_event_id) == []


async def test_a_trim_by_the_cap_judges_a_reader_by_the_first_event_kept(
    backend: Backend,
) -> None:
    # Redis trims the cap by whole stream nodes and cannot name the newest event it dropped:
    # a reader at that event is refused (where a hand's trim serves it), and the memory
    # store, which could tell, refuses it alike, so tests on it judge as production does.
    async with backend.open(max_events=5) as h:
        await h.store.create_table("t", b"v1")
        ids: list[str] = []
        for version in range(1, 4):
            ids += (await play(h.store, "t", version, events=50)).event_ids
        if isinstance(h.store, MemoryTableStore):
            first_kept = format_event_id(*h.store._tables["t"].events[0][0])
        else:
            assert h.admin is not None
            entries: Any = await h.admin.xrange("ofc:{t}:events", count=1)
            first_kept = text(entries[0][0])
        k = ids.index(first_kept)
        assert k > 0
        assert [e.event_id for e in await h.other.read_events("t", after=ids[k])] == ids[k + 1 :]
        with pytest.raises(EventsTrimmedError):
            await h.other.read_events("t", after=ids[k - 1])


async def test_a_new_segment_keeps_the_previous_one_and_drops_the_rest(
    backend: Backend,
) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1", events=[b"e1.0"])
        segments: list[tuple[str, ...]] = []
        version = 1
        for _hand in range(3):  # three hands: a segment of 2 events, then a 3-event move
            started = await h.store.commit(Commit(
                "t", expected_version=version, state=b"s", events=[b"h%d.a" % version, b"x"],
                response=b"", request_id=f"start-{version}", deadline_ms=None, keep_segments=2,
            ))  # fmt: skip
            moved = await play(h.store, "t", version + 1, events=3)
            segments.append(started.event_ids + moved.event_ids)
            version += 2
            if len(segments) == 1:  # what came before the first hand is the segment before it
                assert payloads(await h.other.read_events("t"))[:2] == [b"e1.0", b"h1.a"]
        # Kept: the last two hands, in order; the first hand and the created event are gone.
        kept = await h.other.read_events("t", after=segments[1][0])
        assert [e.event_id for e in kept] == [*segments[1][1:], *segments[2]]
        # Reading after an id older than the newest one dropped is refused: events after it
        # are gone. After the newest one dropped (where a watcher that saw the first hand to
        # its end stands) nothing is missing: the kept log, whole.
        for gone in ("0", segments[0][0], segments[0][-2]):
            with pytest.raises(EventsTrimmedError):
                await h.other.read_events("t", after=gone)
        with pytest.raises(EventsTrimmedError):
            await h.other.wait_events("t", after=segments[0][0], timeout_s=1)
        whole = [*segments[1], *segments[2]]
        dropped_last = segments[0][-1]
        assert [e.event_id for e in await h.other.read_events("t", after=dropped_last)] == whole
        waited = await h.other.wait_events("t", after=dropped_last, timeout_s=1)
        assert [e.event_id for e in waited] == whole
        # A commit without the flag keeps everything (the trim happens at a hand's start).
        last_move = await play(h.store, "t", version, events=1)
        assert len(await h.other.read_events("t", after=segments[1][0])) == 10
        # Keeping one segment: everything before this commit goes.
        one = await h.store.commit(Commit(
            "t", expected_version=version + 1, state=b"s", events=[b"only", b"these"],
            response=b"", request_id="start-last", deadline_ms=None, keep_segments=1,
        ))  # fmt: skip
        assert payloads(await h.other.read_events("t", after=one.event_ids[0])) == [b"these"]
        with pytest.raises(EventsTrimmedError):
            await h.other.read_events("t", after=segments[2][-1])
        # A watcher between hands stands at the last event before the new hand: it has
        # missed nothing (the log is the new hand's), even with one hand kept.
        between = await h.other.read_events("t", after=last_move.event_ids[-1])
        assert payloads(between) == [b"only", b"these"]
        with pytest.raises(ValueError):
            await h.store.commit(Commit(
                "t", expected_version=version + 2, state=b"s", events=[b"x"], response=b"",
                request_id="bad", deadline_ms=None, keep_segments=-1,
            ))  # fmt: skip


@pytest.mark.parametrize(
    ("keep", "log_by_segments"),
    [(2, True), (2, False), (1, True), (3, True)],
    ids=["log of 2 hands", "whole log", "log of 1 hand", "log of 3 hands"],
)
async def test_request_records_live_as_long_as_their_hand_is_kept(
    backend: Backend, keep: int, log_by_segments: bool
) -> None:
    # With segments (hands) kept, a request is answered from its record while its hand is
    # the current or the previous one; older records are gone, so an older retry is judged
    # afresh (and, with its old version, refused as stale). Memory per table stays bounded.
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        await play(h.store, "t", 1, request_id="join")  # before the first hand
        version, hands = 2, []
        for hand in range(1, 5):
            started = await h.store.commit(
                Commit(
                    "t", expected_version=version, state=b"v%d" % (version + 1),
                    events=[b"start"], response=b"started %d" % hand,
                    request_id=f"start-{hand}", deadline_ms=None, keep_segments=keep,
                    log_by_segments=log_by_segments,
                )
            )  # fmt: skip
            moved = await play(h.store, "t", version + 1, request_id=f"move-{hand}")
            hands.append((version, started, moved))
            version += 2
            if hand == 1:  # the hand before the first one counts as one: join is kept
                assert (await play(h.other, "t", 1, request_id="join")).replayed
        for hand in (3, 4):  # the previous and the current hand: replayed from the record
            before, started, moved = hands[hand - 1]
            again = await h.other.commit(
                Commit(
                    "t", expected_version=before, state=b"x", events=[b"start"],
                    response=b"other", request_id=f"start-{hand}", deadline_ms=None,
                    keep_segments=keep, log_by_segments=log_by_segments,
                )
            )  # fmt: skip
            assert (again.replayed, again.response, again.version) == (
                True, b"started %d" % hand, started.version
            )  # fmt: skip
            assert await h.other.get_response("t", f"move-{hand}") == moved.response
        for request_id in ("join", "start-1", "move-1", "start-2", "move-2"):
            assert await h.other.get_response("t", request_id) is None, request_id
        with pytest.raises(StaleVersionError):  # an older retry: judged afresh
            await play(h.other, "t", hands[0][0] + 1, request_id="move-1")
        # Meanwhile the log was trimmed to the last ``keep`` hands, or kept whole (its cap
        # aside): the records followed the current and the previous hand either way.
        if log_by_segments:
            first_kept = hands[4 - keep][1].event_ids[0]
            assert (await h.other.read_events("t", after=first_kept))[-1].data == b"e%d.0" % (
                version
            )
            with pytest.raises(EventsTrimmedError):
                await h.other.read_events("t", after=hands[3 - keep][1].event_ids[0])
        else:
            logged = payloads(await h.other.read_events("t", after="0"))
            assert logged.count(b"start") == 4


async def hand(
    store: TableStore, version: int, name: str, *, compact: bool = True, digest: str = ""
) -> tuple[int, CommitResult]:
    """A hand begins (a segment of the log) with a compactable StartHand-like commit, then
    one move; the version after it and the move's result."""
    await store.commit(
        Commit(
            "t", expected_version=version, state=b"s", events=[b"start"],
            response=b"S" + name.encode(), request_id=f"start-{name}", deadline_ms=None,
            keep_segments=2, compact_response=True,
        )
    )  # fmt: skip
    moved = await store.commit(
        Commit(
            "t", expected_version=version + 1, state=b"m", events=[b"move"],
            response=b"M" + name.encode(), request_id=f"move-{name}", deadline_ms=None,
            compact_response=compact, request_digest=digest,
        )
    )  # fmt: skip
    return version + 2, moved


async def test_the_previous_hand_keeps_markers_of_compactable_records(backend: Backend) -> None:
    # A record committed with compact_response keeps its whole answer while its hand is the
    # current one; once the next hand begins it keeps "applied, version n" (and its digest):
    # a retry is refused as applied (the caller answers from the table now), never applied
    # again; a record without it stays whole for as long as its hand is kept.
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        await h.store.commit(  # before the first hand: never shrunk, whatever it asks
            Commit(
                "t", expected_version=1, state=b"j", events=[b"join"], response=b"joined",
                request_id="join", deadline_ms=None, compact_response=True,
            )
        )  # fmt: skip
        version, first = await hand(h.store, 2, "1", digest="d1")
        same = await h.other.commit(  # the current hand: the first answer, whole
            Commit(
                "t", expected_version=3, state=b"x", events=[b"x"], response=b"other",
                request_id="move-1", deadline_ms=None, request_digest="d1",
            )
        )  # fmt: skip
        assert (same.replayed, same.response, same.version) == (True, b"M1", first.version)
        assert same.event_ids == first.event_ids
        assert await h.other.get_response("t", "start-1") == b"S1"
        # what came before the first hand is the segment before it: whole, and stays whole
        assert await h.other.get_response("t", "join") == b"joined"
        version, second = await hand(h.store, version, "2", compact=False)
        # hand 1 is now the previous hand
        with pytest.raises(AlreadyAppliedError) as applied:
            await h.other.commit(
                Commit(
                    "t", expected_version=3, state=b"x", events=[b"x"], response=b"other",
                    request_id="move-1", deadline_ms=None, request_digest="d1",
                )
            )  # fmt: skip
        assert (applied.value.version, applied.value.table_id) == (first.version, "t")
        with pytest.raises(AlreadyAppliedError):
            await h.other.get_response("t", "move-1", request_digest="d1")
        with pytest.raises(AlreadyAppliedError):
            await h.other.get_response("t", "start-1")
        with pytest.raises(RequestIdReusedError):  # the marker keeps the request's digest
            await h.other.get_response("t", "move-1", request_digest="another")
        with pytest.raises(RequestIdReusedError):
            await play(h.other, "t", 3, request_id="move-1")
        # hand 2 is the current one; what came before hand 1 is older: gone
        assert await h.other.get_response("t", "move-2") == b"M2"
        assert await h.other.get_response("t", "join") is None
        version, _ = await hand(h.store, version, "3")
        # hand 2 is the previous one: its record without compact_response is still whole
        assert await h.other.get_response("t", "move-2") == b"M2"
        assert (await play(h.other, "t", second.version - 1, request_id="move-2")).replayed
        with pytest.raises(AlreadyAppliedError):
            await h.other.get_response("t", "start-2")
        # hand 1 and what came before it are older: no record at all, judged afresh
        for gone in ("join", "start-1", "move-1"):
            assert await h.other.get_response("t", gone) is None
        with pytest.raises(StaleVersionError):
            await play(h.other, "t", 3, request_id="move-1")
        assert (await h.other.load("t")).version == version  # nothing applied twice


async def test_a_lanes_newer_record_supersedes_its_earlier_one(backend: Backend) -> None:
    # A record committed with compact_response and a request_lane (its caller) keeps its
    # whole answer only until the same lane commits a newer such record in the same hand:
    # then it keeps "applied, version n" (and its digest). Other lanes, records without a
    # lane and records without compact_response are untouched.
    def move(version: int, name: str, lane: str, *, compact: bool = True) -> Commit:
        return Commit(
            "t", expected_version=version, state=b"m", events=[b"move"],
            response=b"R" + name.encode(), request_id=name, deadline_ms=None,
            compact_response=compact, request_digest="d-" + name, request_lane=lane,
        )  # fmt: skip

    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        with pytest.raises(InvalidIdError):
            await h.store.commit(move(1, "bad", "two words"))
        version, _ = await hand(h.store, 1, "1")  # versions 2 (start) and 3 (move-1)
        assert version == 3
        await h.store.commit(move(3, "a1", "lane-a"))
        await h.store.commit(move(4, "b1", "lane-b"))
        await h.store.commit(move(5, "kept", "lane-a", compact=False))  # not compact: whole
        await h.other.commit(move(6, "a2", "lane-a"))  # supersedes a1 (another replica)
        await h.store.commit(move(7, "x1", ""))
        await h.store.commit(move(8, "x2", ""))  # no lane: supersedes nothing
        with pytest.raises(AlreadyAppliedError) as applied:
            await h.other.commit(move(3, "a1", "lane-a"))
        assert (applied.value.version, applied.value.table_id) == (4, "t")
        with pytest.raises(AlreadyAppliedError):
            await h.other.get_response("t", "a1", request_digest="d-a1")
        with pytest.raises(RequestIdReusedError):  # the marker keeps the request's digest
            await h.other.get_response("t", "a1", request_digest="another")
        for name, response in [
            ("a2", b"Ra2"), ("b1", b"Rb1"), ("kept", b"Rkept"), ("x1", b"Rx1"),
            ("x2", b"Rx2"), ("move-1", b"M1"), ("start-1", b"S1"),
        ]:  # fmt: skip
            assert await h.other.get_response("t", name) == response, name
        again = await h.other.commit(move(6, "a2", "lane-a"))  # a replay supersedes nothing
        assert (again.replayed, again.response, again.version) == (True, b"Ra2", 7)
        assert await h.other.get_response("t", "a2") == b"Ra2"
        # a new hand: the lane's latest record of the hand before shrinks as the rest do, and
        # the lane begins afresh (its first record of this hand is whole)
        version, _ = await hand(h.store, 9, "2")
        await h.store.commit(move(version, "a3", "lane-a"))
        assert await h.other.get_response("t", "a3") == b"Ra3"
        for gone in ("a2", "b1"):
            with pytest.raises(AlreadyAppliedError):
                await h.other.get_response("t", gone)
        assert await h.other.get_response("t", "kept") == b"Rkept"
        await h.other.commit(move(version + 1, "a4", "lane-a"))
        with pytest.raises(AlreadyAppliedError):
            await h.store.get_response("t", "a3")
        assert await h.store.get_response("t", "a4") == b"Ra4"
        assert (await h.store.load("t")).version == version + 2  # nothing applied twice


WINDOW_S = 3


async def test_a_marker_expires_with_the_retry_window(backend: Backend) -> None:
    # A window of a few seconds: on Redis it is real time, and the checks inside it must
    # not outlive it on a loaded machine.
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        await h.store.commit(
            Commit(
                "t", expected_version=1, state=b"s", events=[b"start"], response=b"S",
                request_id="start", deadline_ms=None, keep_segments=2, compact_response=True,
                request_ttl_seconds=WINDOW_S,
            )
        )  # fmt: skip
        await play(h.store, "t", 2, request_id="move", request_ttl_seconds=WINDOW_S)
        await h.store.commit(
            Commit(
                "t", expected_version=3, state=b"s", events=[b"start"], response=b"S2",
                request_id="start-2", deadline_ms=None, keep_segments=2,
            )
        )  # fmt: skip
        with pytest.raises(AlreadyAppliedError):
            await h.other.get_response("t", "start")
        assert await h.other.get_response("t", "move") == b"r3"
        await h.advance(WINDOW_S + 0.3)
        assert await h.other.get_response("t", "start") is None  # outside its window
        assert await h.other.get_response("t", "move") is None
        with pytest.raises(StaleVersionError):  # judged afresh
            await play(h.other, "t", 2, request_id="move")
        assert await h.other.get_response("t", "start-2") == b"S2"  # 24 hours


async def test_numbered_extras_with_a_ttl_go_at_a_commit_after_it(backend: Backend) -> None:
    # Hand histories may be given their own life (OFC_HISTORY_TTL_SECONDS): a table that
    # plays for weeks then keeps only its recent ones; blob and listing go together.
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")

        async def commit(version: int, extra: dict[str, bytes], ttl: int) -> None:
            await h.store.commit(Commit(
                "t", expected_version=version, state=b"s", events=[], response=b"",
                request_id=f"r{version}", deadline_ms=None, extra=extra, extra_ttl_seconds=ttl,
            ))  # fmt: skip

        await commit(1, {"hand:1": b"h1", "seed": b"s"}, 1)
        await commit(2, {"hand:2": b"h2"}, 0)  # without one: as long as the table
        await commit(3, {"hand:3": b"h3"}, 60)
        await h.advance(1.3)
        # due, but nothing has removed it yet: still there until the table's next commit
        assert await h.other.get_extra("t", "hand:1") == b"h1"
        await commit(4, {}, 60)
        assert await h.other.get_extra("t", "hand:1") is None
        page = await h.other.list_extra("t", "hand")
        assert page == ExtraPage(((2, b"h2"), (3, b"h3")), None, 2)
        assert await h.other.get_extra("t", "seed") == b"s"  # not numbered: no ttl
        with pytest.raises(ValueError, match="extra_ttl_seconds"):
            await commit(4, {}, -1)


async def test_a_commit_can_require_the_state_it_was_computed_from(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        await play(h.store, "t", 1)  # state b"v2"
        with pytest.raises(StaleVersionError) as caught:  # the right version, another state
            await h.other.commit(Commit(
                "t", expected_version=2, state=b"x", events=[], response=b"", request_id="r",
                deadline_ms=None, expected_state_sha1=hashlib.sha1(b"v1").hexdigest(),
            ))  # fmt: skip
        assert caught.value.current_version == 2
        done = await h.other.commit(Commit(
            "t", expected_version=2, state=b"v3", events=[], response=b"", request_id="r",
            deadline_ms=None, expected_state_sha1=hashlib.sha1(b"v2").hexdigest(),
        ))  # fmt: skip
        assert (done.version, (await h.store.load("t")).state) == (3, b"v3")


async def test_wait_events_times_out_cleanly(backend: Backend) -> None:
    async with backend.open() as h:
        created = await h.store.create_table("t", b"v1", events=[b"e1.0"])
        # Pending events come back at once (and the blocking reads' connection is made: the
        # wait timed below is the wait alone).
        ready = await h.store.wait_events("t", after="0", timeout_s=5)
        assert payloads(ready) == [b"e1.0"]
        started = time.monotonic()
        assert await h.store.wait_events("t", after=created.event_ids[0], timeout_s=0.2) == []
        assert 0.15 <= time.monotonic() - started < 2
        # The store still works after a timed-out wait.
        await play(h.store, "t", 1)
        assert payloads(await h.store.wait_events("t", after=created.event_ids[0], timeout_s=1))


async def test_wait_events_wakes_on_a_commit_through_another_replica(backend: Backend) -> None:
    async with backend.open() as h:
        created = await h.store.create_table("t", b"v1", events=[b"e1.0"])
        await h.other.load("t")  # its connections are made: the commit below is quick
        waiters = [
            asyncio.create_task(h.store.wait_events("t", after=created.event_ids[0], timeout_s=30))
            for _ in range(3)
        ]
        await asyncio.sleep(0.1)
        assert not any(w.done() for w in waiters)
        await play(h.other, "t", 1, events=2)
        started = time.monotonic()  # how long the waiters take once the commit is made
        woken = await asyncio.wait_for(asyncio.gather(*waiters), 20)
        assert time.monotonic() - started < 2
        for events in woken:
            assert payloads(events)[:1] == [b"e2.0"]
            assert payloads(await h.store.read_events("t", after=created.event_ids[0])) == [
                b"e2.0",
                b"e2.1",
            ]


async def test_wait_events_brings_the_table_as_stored_after_its_events(backend: Backend) -> None:
    async with backend.open() as h:
        created = await h.store.create_table("t", b"v1", events=[b"e1.0"])
        tables: list[StoredTable] = []
        waiter = asyncio.create_task(
            h.store.wait_events(
                "t", after=created.event_ids[0], timeout_s=10, on_table=tables.append
            )
        )
        await asyncio.sleep(0.1)
        done = await play(h.other, "t", 1, events=2, deadline_ms=1_900_000_000_000)
        events = await asyncio.wait_for(waiter, 5)
        assert payloads(events)[:1] == [b"e2.0"]
        assert tables == [await h.store.load("t")]
        assert (tables[0].version, tables[0].state, tables[0].deadline_ms) == (
            2,
            b"v2",
            1_900_000_000_000,
        )
        assert tables[0].last_event_id == done.event_ids[-1]
        # No events, no table: a wait that timed out, or one without on_table.
        assert (
            await h.store.wait_events(
                "t", after=done.event_ids[-1], timeout_s=0.1, on_table=tables.append
            )
            == []
        )
        assert payloads(await h.store.wait_events("t", after="0", timeout_s=1)) == [
            b"e1.0",
            b"e2.0",
            b"e2.1",
        ]
        assert len(tables) == 1
        # Pending events come back at once, with the table.
        await h.store.wait_events("t", after="0", timeout_s=1, on_table=tables.append)
        assert [t.version for t in tables] == [2, 2]


# --- extra blobs ----------------------------------------------------------------------------------
async def test_extra_blobs_and_their_pages(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        hands = {f"hand:{n}": b"history %d" % n for n in (1, 2, 10, 11)}
        await play(h.store, "t", 1, extra={**hands, "seed": b"s", "summary:2": b"two"})
        await play(h.store, "t", 2, extra={"hand:2": b"history 2 (revised)", "hand:012": b"x"})
        assert await h.other.get_extra("t", "hand:10") == b"history 10"
        assert await h.other.get_extra("t", "hand:2") == b"history 2 (revised)"
        assert await h.other.get_extra("t", "seed") == b"s"
        assert await h.other.get_extra("t", "hand:012") == b"x"  # kept, but not listed
        assert await h.other.get_extra("t", "hand:3") is None

        first = await h.other.list_extra("t", "hand", count=3)
        assert first == ExtraPage(
            items=((1, b"history 1"), (2, b"history 2 (revised)"), (10, b"history 10")),
            next_start=11,
            total=4,
        )
        assert first.next_start is not None
        rest = await h.other.list_extra("t", "hand", start=first.next_start, count=3)
        assert rest == ExtraPage(items=((11, b"history 11"),), next_start=None, total=4)
        assert await h.store.list_extra("t", "hand", start=12) == ExtraPage((), None, 4)
        assert await h.store.list_extra("t", "summary") == ExtraPage(((2, b"two"),), None, 1)
        assert await h.store.list_extra("t", "han") == ExtraPage((), None, 0)
        assert await h.store.list_extra("t", "seed") == ExtraPage((), None, 0)


# --- deadlines ------------------------------------------------------------------------------------
async def test_one_replica_claims_a_due_timeout_until_its_claim_ends(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("a", b"v1")
        # Claims held for a minute: a slow machine cannot let one end between two calls.
        assert await h.store.claim_timeout("a", 1, ttl_ms=60_000)
        assert not await h.other.claim_timeout("a", 1, ttl_ms=60_000)  # every replica sweeps
        assert not await h.store.claim_timeout("a", 1, ttl_ms=60_000)
        assert await h.other.claim_timeout("a", 2, ttl_ms=60_000)  # the next move's is its own
        assert await h.other.claim_timeout("b", 1, ttl_ms=60_000)  # so is another table's
        assert await h.store.claim_timeout("a", 3, ttl_ms=300)
        await h.advance(0.6)  # a claimant that died: once its claim ends, the others take over
        assert await h.other.claim_timeout("a", 3, ttl_ms=300)
        for bad in (0, -1):
            with pytest.raises(ValueError):
                await h.store.claim_timeout("a", 4, ttl_ms=bad)


async def test_due_deadlines(backend: Backend) -> None:
    async with backend.open() as h:
        for table_id in ("a", "b", "c", "d"):
            await h.store.create_table(table_id, b"v1")
        await play(h.store, "a", 1, deadline_ms=1_000)
        await play(h.store, "b", 1, deadline_ms=5_000)
        await play(h.store, "c", 1, deadline_ms=None)
        await play(h.other, "d", 1, deadline_ms=1_000)
        assert (await h.store.load("a")).deadline_ms == 1_000
        assert await h.store.due_deadlines(999, limit=10) == []
        assert await h.store.due_deadlines(2_000, limit=10) == [("a", 1_000), ("d", 1_000)]
        assert await h.other.due_deadlines(9_000, limit=10) == [
            ("a", 1_000),
            ("d", 1_000),
            ("b", 5_000),
        ]
        assert await h.other.due_deadlines(9_000, limit=1) == [("a", 1_000)]

        # The sweeper's timeout move: one replica wins, the other's stale commit is refused.
        await play(h.store, "a", 2, request_id="timeout:1000", deadline_ms=None)
        with pytest.raises(StaleVersionError):
            await play(h.other, "a", 2, request_id="timeout:1000:other", deadline_ms=None)
        await play(h.store, "d", 2, deadline_ms=7_000)
        assert (await h.store.load("a")).deadline_ms is None
        assert await h.store.due_deadlines(6_000, limit=10) == [("b", 5_000)]
        assert await h.store.due_deadlines(9_000, limit=10) == [("b", 5_000), ("d", 7_000)]


async def test_losing_commits_do_not_move_the_deadline(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1")
        await play(h.store, "t", 1, request_id="first", deadline_ms=1_000)
        with pytest.raises(StaleVersionError):  # a later deadline from a stale commit
            await play(h.other, "t", 1, request_id="stale", deadline_ms=9_000)
        replay = await play(h.other, "t", 1, request_id="first", deadline_ms=8_000)
        assert replay.replayed
        assert await h.store.due_deadlines(2_000) == [("t", 1_000)]
        with pytest.raises(StaleVersionError):  # an earlier one: a hint found early
            await play(h.other, "t", 1, request_id="stale-2", deadline_ms=500)
        assert await h.store.due_deadlines(700) == []
        assert await h.store.due_deadlines(1_000) == [("t", 1_000)]
        with pytest.raises(TableNotFoundError):
            await play(h.other, "gone", 1, deadline_ms=100)
        assert await h.store.due_deadlines(1_000) == [("t", 1_000)]


# --- time to live ---------------------------------------------------------------------------------
async def test_every_commit_refreshes_the_ttl(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("t", b"v1", events=[b"e"], ttl_seconds=100)
        assert all(0 < ttl <= 100 for ttl in await h.ttls("t"))
        await play(h.store, "t", 1, ttl_seconds=1_000, extra={"hand:1": b"h"})
        ttls = await h.ttls("t")
        assert ttls and all(900 < ttl <= 1_000 for ttl in ttls)
        await play(h.other, "t", 2, ttl_seconds=50, events=0)
        assert all(0 < ttl <= 50 for ttl in await h.ttls("t"))


async def test_tables_and_request_ids_expire(backend: Backend) -> None:
    async with backend.open() as h:
        await h.store.create_table("short", b"v1")
        await play(h.store, "short", 1, request_id="r", ttl_seconds=1, request_ttl_seconds=1)
        await h.store.create_table("kept", b"v1")
        await play(h.store, "kept", 1, request_id="r", ttl_seconds=1, request_ttl_seconds=60)
        await h.store.create_table("alive", b"v1")
        await play(h.store, "alive", 1, ttl_seconds=60, request_id="r", request_ttl_seconds=1)
        await h.advance(1.3)
        with pytest.raises(TableNotFoundError):
            await h.store.load("short")
        assert await h.store.get_response("short", "r") is None
        with pytest.raises(TableNotFoundError):  # outside the retry window: judged afresh
            await play(h.store, "short", 1, request_id="r")
        # Inside the window a retry is answered even though the table itself expired.
        assert (await play(h.store, "kept", 1, request_id="r")).replayed
        assert await h.store.list_extra("short", "hand") == ExtraPage((), None, 0)
        assert await h.store.due_deadlines(10**13) == []
        # The table outlives its request record: the same request id is now a new request.
        with pytest.raises(StaleVersionError):
            await play(h.store, "alive", 1, request_id="r")
        await h.store.create_table("short", b"again")  # the id is free again
        assert (await h.store.load("short")).version == 1


# --- create claims --------------------------------------------------------------------------------
async def test_a_create_claim_keeps_the_first_table_id_for_its_window(backend: Backend) -> None:
    async with backend.open() as h:
        assert await h.store.claim_table_id("c1", "table-a", ttl_seconds=60) == "table-a"
        # a retry (through any replica) gets the first id, whatever id it brings itself
        assert await h.other.claim_table_id("c1", "table-b", ttl_seconds=60) == "table-a"
        assert await h.store.claim_table_id("c2", "table-c", ttl_seconds=60) == "table-c"
        # the claim is not the table: nothing was created, and a claim never creates one
        with pytest.raises(TableNotFoundError):
            await h.store.load("table-a")
        # (a window of its own: a loaded machine took over 1 s between a claim and its retry)
        assert await h.store.claim_table_id("c3", "table-x", ttl_seconds=1) == "table-x"
        await h.advance(1.3)
        # after the window the claim id is free: the new id wins (and is kept in turn)
        assert await h.other.claim_table_id("c3", "table-d", ttl_seconds=60) == "table-d"
        assert await h.store.claim_table_id("c3", "table-e", ttl_seconds=60) == "table-d"
        assert await h.store.claim_table_id("c2", "table-f", ttl_seconds=60) == "table-c"
        assert await h.other.claim_table_id("c1", "table-g", ttl_seconds=60) == "table-a"


async def test_a_create_claim_keeps_its_request_digest(backend: Backend) -> None:
    """The same claim with another request's digest is refused; the same digest (or a claim
    written without one: a release before digests) gets the first table id."""
    async with backend.open() as h:
        assert await h.store.claim_table_id("c", "t-1", request_digest="d1") == "t-1"
        assert await h.other.claim_table_id("c", "t-2", request_digest="d1") == "t-1"
        with pytest.raises(RequestIdReusedError):
            await h.other.claim_table_id("c", "t-3", request_digest="d2")
        assert await h.store.claim_table_id("c", "t-4") == "t-1"  # no digest: not checked
        assert await h.store.claim_table_id("old", "t-5") == "t-5"  # claimed without one
        assert await h.other.claim_table_id("old", "t-6", request_digest="d3") == "t-5"
        with pytest.raises(InvalidIdError):
            await h.store.claim_table_id("c", "t", request_digest="not a digest")


async def test_racing_create_claims_agree_on_one_table_id(backend: Backend) -> None:
    async def claim(store: TableStore, i: int) -> str:
        # a claim the store could not take (UNAVAILABLE: a fresh cluster client's connections
        # can meet one another at start) is sent again, as a client does
        for _ in range(20):
            try:
                return await store.claim_table_id("race", f"table-{i}")
            except StoreUnavailableError:
                await asyncio.sleep(0.05)
        raise AssertionError("the store stayed unavailable")

    async with backend.open() as h:
        racers = [claim(h.store if i % 2 else h.other, i) for i in range(12)]
        claimed = await asyncio.gather(*racers)
        assert len(set(claimed)) == 1 and claimed[0] in {f"table-{i}" for i in range(12)}


async def test_create_claim_arguments_are_checked(backend: Backend) -> None:
    async with backend.open() as h:
        for claim_id, table_id in (("a{b}", "t"), ("", "t"), ("c", "has space"), ("c", "")):
            with pytest.raises(InvalidIdError):
                await h.store.claim_table_id(claim_id, table_id)
        with pytest.raises(ValueError):
            await h.store.claim_table_id("c", "t", ttl_seconds=0)
        assert await h.store.claim_table_id("c", "t") == "t"  # nothing was claimed before
