"""SettleHand over Connect (JSON and binary, the HTTP port) next to native gRPC, in one run.

    .venv/bin/python -m bench.connect                  # starts `ofc serve`, both ports
    .venv/bin/python -m bench.connect --seconds 6 --in-flight 1,16

One ``ofc serve`` (in-memory store) serves gRPC and HTTP. For each number of calls in
flight, the rows alternate in rounds (so a shared machine's load hits them alike): gRPC
(grpc.aio, pre-serialized bytes, one channel), Connect binary (``application/proto``) and
Connect JSON (``application/json``), each an HTTP/1.1 keep-alive connection per call in
flight sending a pre-encoded request (worked example 1) with a minimal client, so the
client's cost stays small and alike. Prints calls/s, p50/p99 latency, and the server
process's CPU time per call (from /proc: what each protocol costs the service, independent
of the client), with each Connect row's ratio to gRPC's.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import json_format
from ofcpoker.v1 import rules_service_pb2 as pb

from bench.grpc_load import SETTLE, _free_port, percentile, settle_request

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Row:
    protocol: str
    in_flight: int
    calls: int
    calls_per_second: float
    p50_ms: float
    p99_ms: float
    server_cpu_us_per_call: float


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/<pid>/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class HttpCall:
    """One keep-alive HTTP/1.1 connection POSTing one pre-encoded request, again and again."""

    def __init__(self, host: str, port: int, content_type: str, body: bytes) -> None:
        self.host, self.port = host, port
        self.request = (
            f"POST {SETTLE} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: {content_type}\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode() + body
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __call__(self) -> bytes:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head[9:12]
        headers = dict(
            line.split(b":", 1) for line in head.lower().split(b"\r\n")[1:] if b":" in line
        )
        if b"content-length" in headers:
            body = await self.reader.readexactly(int(headers[b"content-length"]))
        else:  # chunked
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n"))[:-2], 16):
                parts.append(await self.reader.readexactly(size + 2))
            await self.reader.readuntil(b"\r\n")
            body = b"".join(p[:-2] for p in parts)
        if status != b"200":
            raise RuntimeError(f"HTTP {status.decode()}: {body[:200]!r}")
        if headers.get(b"connection", b"").strip() == b"close":  # Hypercorn: 1000 a connection
            self.close()
        return body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def _timed(calls: Sequence[object], seconds: float) -> tuple[list[float], float]:
    latencies: list[float] = []
    loop = asyncio.get_running_loop()

    async def worker(call: object, until: float) -> None:
        while loop.time() < until:
            start = time.perf_counter()
            await call()  # type: ignore[operator]
            latencies.append(time.perf_counter() - start)

    started = time.perf_counter()
    until = loop.time() + seconds
    await asyncio.gather(*(worker(c, until) for c in calls))
    return latencies, time.perf_counter() - started


async def run(
    grpc_target: str, http: tuple[str, int], pid: int, seconds: float, in_flight: Sequence[int],
    rounds: int = 3,
) -> list[Row]:  # fmt: skip
    request = pb.SettleHandRequest.FromString(settle_request())
    bodies = {
        "connect-binary": ("application/proto", request.SerializeToString()),
        "connect-json": ("application/json", json_format.MessageToJson(request).encode()),
    }
    gc.collect()
    gc.freeze()
    rows: list[Row] = []
    async with grpc.aio.insecure_channel(grpc_target) as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=20)
        settle = channel.unary_unary(SETTLE)
        grpc_body = settle_request()
        answer = pb.SettleHandResponse.FromString(await settle(grpc_body))
        assert [p.points for p in answer.settlement.players] == [8, -8]
        for n in in_flight:
            clients: dict[str, list[object]] = {"grpc": [lambda: settle(grpc_body)] * n}
            for name, (kind, body) in bodies.items():
                clients[name] = [HttpCall(*http, kind, body) for _ in range(n)]
            check = await clients["connect-json"][0]()  # type: ignore[operator]
            points = [p["points"] for p in json.loads(check)["settlement"]["players"]]
            assert points == [8, -8], points
            for calls in clients.values():  # warm-up
                await _timed(calls, min(0.5, seconds / 4))
            samples: dict[str, tuple[list[float], float, float]] = {
                name: ([], 0.0, 0.0) for name in clients
            }
            for _ in range(rounds):
                for name, calls in clients.items():
                    cpu = server_cpu_seconds(pid)
                    latencies, elapsed = await _timed(calls, seconds / rounds)
                    used = server_cpu_seconds(pid) - cpu
                    total, wall, cpu_total = samples[name]
                    samples[name] = (total + latencies, wall + elapsed, cpu_total + used)
            for name, (latencies, wall, cpu_total) in samples.items():
                latencies.sort()
                rows.append(Row(
                    protocol=name, in_flight=n, calls=len(latencies),
                    calls_per_second=round(len(latencies) / wall, 1),
                    p50_ms=round(percentile(latencies, 0.5) * 1000, 3),
                    p99_ms=round(percentile(latencies, 0.99) * 1000, 3),
                    server_cpu_us_per_call=round(cpu_total / len(latencies) * 1e6, 1),
                ))  # fmt: skip
            for calls in clients.values():
                for call in calls:
                    if isinstance(call, HttpCall):
                        call.close()
    return rows


def start_server() -> tuple[subprocess.Popen[bytes], str, tuple[str, int]]:
    grpc_address, http_port = f"127.0.0.1:{_free_port()}", _free_port()
    command = [
        str(Path(sys.executable).with_name("ofc")), "serve", "--listen", grpc_address,
        "--http-listen", f"127.0.0.1:{http_port}", "--metrics-listen", "",
        "--log-level", "error",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=os.environ.copy())
    return process, grpc_address, ("127.0.0.1", http_port)


def report(rows: Sequence[Row]) -> str:
    lines = [
        f"{'protocol':<15}{'in flight':>10}{'calls/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'server CPU/call':>17}{'vs gRPC':>9}"
    ]
    native = {r.in_flight: r for r in rows if r.protocol == "grpc"}
    for r in rows:
        ratio = r.calls_per_second / native[r.in_flight].calls_per_second
        lines.append(
            f"{r.protocol:<15}{r.in_flight:>10}{r.calls_per_second:>10.0f}{r.p50_ms:>9.2f}"
            f"{r.p99_ms:>9.2f}{r.server_cpu_us_per_call:>14.0f} us{ratio:>8.0%}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0, help="per row (default 3)")
    parser.add_argument("--in-flight", default="1,16", help="comma list (default 1,16)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.in_flight.split(",")]
    process, grpc_address, http = start_server()
    try:
        deadline = time.monotonic() + 20
        while True:  # the HTTP port listens once the server has started
            try:
                with __import__("socket").create_connection(http, timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("ofc serve did not start") from None
                time.sleep(0.1)
        rows = asyncio.run(run(grpc_address, http, process.pid, args.seconds, levels))
    finally:
        process.terminate()
        process.wait(timeout=15)
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=2))
    else:
        print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
