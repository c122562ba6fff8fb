"""``ofc serve --workers N``: N server processes on one port, their metrics on one endpoint.

One Python process serves gRPC on one core; on a machine with more, N worker processes
(:mod:`.worker`, each a whole server: every service, health, its own Redis connections)
bind the same address with SO_REUSEPORT, and the kernel spreads new connections over them.
A connection stays with the worker that accepted it. Every worker shares the one Redis
store, so it does not matter which worker a call reaches; the in-memory store cannot be
shared and is refused with N > 1 (:mod:`.config`).

This process, the supervisor, serves no gRPC and imports none. It:

- serves ``/metrics`` on ``--metrics-listen``, every worker's metrics summed
  (prometheus-client's multiprocess mode: the workers write their values to files in a
  private temporary directory, ``PROMETHEUS_MULTIPROC_DIR``, that this process creates and
  removes on exit). Counters and histograms are summed over the workers (a dead worker's
  counts stay in the sums, so rates do not dip when one is replaced); the
  ``ofc_active_tables`` gauge is the maximum over the live workers;
- on SIGTERM or SIGINT sends SIGTERM to every worker: each stops as a single server does
  (health NOT_SERVING, streams end at once, calls in flight get ``--grace-seconds``), and a
  worker still running after the grace period and a margin is killed; a second SIGTERM or
  SIGINT is passed on to every worker, which then exits at once (:mod:`.stopping`);
- restarts a worker that dies, after a second; a worker whose first start ends before it
  served (a port in use, a bad certificate) will not do better the next time, so then, or
  after :data:`MAX_RESTARTS` restarts within :data:`RESTART_WINDOW_S`, it stops all the
  others and exits 1 for the orchestrator to see. A replacement that dies before it served
  (killed for memory as it started, say) is restarted like any other: its place served
  with this configuration already, and the restart bound still ends a loop. Every exit is
  logged with the worker's number, pid and exit status.

Port 0 (tests) is resolved here once, by binding a SO_REUSEPORT socket that holds the port
until the end, so that every worker binds the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from ofc_service.server.config import ServerConfig, split_address
from ofc_service.server.logs import configure_logging
from ofc_service.server.stopping import EXIT_MARGIN_S

log = logging.getLogger("ofc.workers")

READY = b"ready\n"  # what a worker writes on stdout once it serves (worker.READY)
RESTART_DELAY_S = 1.0
MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0
# Past the grace period, a worker that has not exited is killed: after its own exit deadline
# (stopping.EXIT_MARGIN_S), which logs the step it was stuck on.
KILL_MARGIN_S = EXIT_MARGIN_S + 2.0


def exit_status(code: int) -> str:
    """A child's return code as the log says it.

    >>> exit_status(0), exit_status(3), exit_status(-9)
    ('exit 0', 'exit 3', 'signal SIGKILL')
    """
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit {code}"


def reserve_port(listen: str) -> tuple[str, socket.socket | None]:
    """``listen`` with port 0 replaced by a free port, and the socket that holds it (bound
    with SO_REUSEPORT, never listening: the workers' sockets join it); other addresses as
    they are, with no socket."""
    host, port = split_address(listen, what="listen")
    if port:
        return listen, None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind((host, 0))
    port = holder.getsockname()[1]
    return (f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"), holder


class Supervisor:
    """Starts, watches, restarts and stops the workers (see the module)."""

    def __init__(
        self, config: ServerConfig, metrics_dir: str, *, metrics_port: int | None = None
    ) -> None:
        self.config = config
        self.metrics_dir = metrics_dir
        self.metrics_port = metrics_port
        # Workers serve no metrics of their own: this process serves them all.
        self.worker_config = config.replace(metrics_listen="")
        self.stopping = asyncio.Event()
        self.processes: dict[int, asyncio.subprocess.Process] = {}  # worker number -> live
        self.ready = [asyncio.Event() for _ in range(config.workers)]
        self.failure = ""
        self.unclean_exits = 0  # workers that did not stop cleanly when told to
        self._restarts: list[float] = []

    async def _spawn(self, index: int) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ofc_service.server.worker", str(index),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": self.metrics_dir},
        )  # fmt: skip
        assert process.stdin is not None
        process.stdin.write(json.dumps(dataclasses.asdict(self.worker_config)).encode() + b"\n")
        await process.stdin.drain()  # the pipe stays open: its end tells the worker we are gone
        return process

    async def _keep(self, index: int) -> None:
        """Worker ``index`` from start to stop, restarted when it dies (see the module)."""
        while not self.stopping.is_set():
            process = await self._spawn(index)
            self.processes[index] = process
            if self.stopping.is_set():  # stopping began while it started: it missed the signal
                process.send_signal(signal.SIGTERM)
            fields: dict[str, object] = {"worker": index, "pid": process.pid}
            assert process.stdout is not None
            served = await process.stdout.readline() == READY
            if served:
                log.info("worker serving", extra={"fields": fields})
                self.ready[index].set()
                drain = asyncio.create_task(self._drain(process.stdout, fields))
            code = await process.wait()
            if served:
                await drain
            del self.processes[index]
            # Its live gauges go; its counters stay in the sums.
            mark_process_dead(process.pid, self.metrics_dir)  # type: ignore[no-untyped-call]
            fields["status"] = exit_status(code)
            if self.stopping.is_set():
                clean = code in (0, -signal.SIGTERM)
                self.unclean_exits += not clean
                log.log(logging.INFO if clean else logging.ERROR, "worker stopped",
                        extra={"fields": fields})  # fmt: skip
                return
            if not served and not self.ready[index].is_set():  # its first start failed
                log.error("worker exited before it served", extra={"fields": fields})
                self._fail(f"worker {index} exited before it served ({fields['status']})")
                return
            fields["served"] = served  # False: a replacement that died as it started
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < RESTART_WINDOW_S] + [now]
            if len(self._restarts) > MAX_RESTARTS:
                log.error("worker exited", extra={"fields": {**fields, "restart": False}})
                self._fail(f"more than {MAX_RESTARTS} worker restarts in {RESTART_WINDOW_S:g} s")
                return
            log.error("worker exited", extra={"fields": {**fields, "restart": True}})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), RESTART_DELAY_S)

    async def _drain(self, stdout: asyncio.StreamReader, fields: dict[str, object]) -> None:
        """Anything else a worker writes on stdout is logged (and never fills the pipe)."""
        while line := await stdout.readline():
            text = line.decode(errors="replace").rstrip()
            log.info("worker output", extra={"fields": {**fields, "output": text}})

    def _on_signal(self, signum: int) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            return
        # A second signal: "now". Each worker, told a second time, exits at once.
        fields = {"signal": signal.Signals(signum).name,
                  "pids": sorted(p.pid for p in self.processes.values())}  # fmt: skip
        log.warning("second signal: workers told to exit at once", extra={"fields": fields})
        for process in list(self.processes.values()):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)

    def _fail(self, reason: str) -> None:
        if not self.failure:
            self.failure = reason
        self.stopping.set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._on_signal, signum)
        tasks = [asyncio.create_task(self._keep(i)) for i in range(self.config.workers)]
        all_ready: asyncio.Future[list[bool]] = asyncio.ensure_future(
            asyncio.gather(*(r.wait() for r in self.ready))
        )
        stop: asyncio.Future[bool] = asyncio.ensure_future(self.stopping.wait())
        await asyncio.wait((all_ready, stop), return_when=asyncio.FIRST_COMPLETED)
        if all_ready.done() and not self.stopping.is_set():
            log.info("serving", extra={"fields": {
                "listen": self.config.listen, "metrics_port": self.metrics_port,
                "http_listen": self.config.http_listen,
                "workers": self.config.workers,
                "pids": sorted(p.pid for p in self.processes.values()),
                "store": "redis", "tls": bool(self.config.tls_cert),
                "metrics_dir": self.metrics_dir,
            }})  # fmt: skip
        await stop
        all_ready.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await all_ready
        if self.failure:
            served = all(r.is_set() for r in self.ready)
            message = "stopping all workers" if served else "cannot start"
            log.error(message, extra={"fields": {"error": self.failure}})
        else:
            grace = self.config.grace_seconds
            log.info("shutting down", extra={"fields": {"grace_seconds": grace}})
        for process in list(self.processes.values()):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        _, pending = await asyncio.wait(tasks, timeout=self.config.grace_seconds + KILL_MARGIN_S)
        if pending:
            for index, process in list(self.processes.items()):
                log.error("worker did not stop in time: killed",
                          extra={"fields": {"worker": index, "pid": process.pid}})  # fmt: skip
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await asyncio.wait(pending)
        log.info("stopped")
        return 1 if self.failure or self.unclean_exits else 0


def supervise(config: ServerConfig) -> int:
    """The ``ofc serve`` entry point with ``workers > 1``; the exit status (0 after a
    graceful stop of every worker)."""
    configure_logging(config.log_level)
    metrics_dir = tempfile.mkdtemp(prefix="ofc-metrics-")
    holder: socket.socket | None = None
    http_holder: socket.socket | None = None
    httpd = None
    try:
        listen, holder = reserve_port(config.listen)
        http_listen = config.http_listen
        if http_listen:
            http_listen, http_holder = reserve_port(http_listen)
        if config.metrics_listen:
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=metrics_dir)  # type: ignore[no-untyped-call]
            host, port = split_address(config.metrics_listen, what="metrics_listen")
            httpd, _ = start_http_server(port, host, registry=registry)
        supervisor = Supervisor(
            config.replace(listen=listen, http_listen=http_listen),
            metrics_dir,
            metrics_port=None if httpd is None else httpd.server_port,
        )
        return asyncio.run(supervisor.run())
    except OSError as exc:  # the metrics address or the port in use
        log.error("cannot start", extra={"fields": {"error": str(exc)}})
        return 1
    finally:
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        for held in (holder, http_holder):
            if held is not None:
                held.close()
        shutil.rmtree(metrics_dir, ignore_errors=True)


__all__: Sequence[str] = ["Supervisor", "exit_status", "reserve_port", "supervise"]
