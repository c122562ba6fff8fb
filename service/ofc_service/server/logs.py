"""JSON log lines: one object per line, with the record's ``fields`` merged in."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from typing import IO, Any

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


class JsonFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "msg": ..., **fields}``; ``process_fields``
    go on every line (a worker process of ``ofc serve --workers N`` names itself).

    >>> record = logging.LogRecord("ofc.access", logging.INFO, "", 0, "rpc", None, None)
    >>> record.fields = {"code": "OK"}
    >>> line = json.loads(JsonFormatter().format(record))
    >>> line["msg"], line["code"], line["level"]
    ('rpc', 'OK', 'info')
    """

    def __init__(self, process_fields: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.process_fields = dict(process_fields or {})

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **self.process_fields,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging(
    level: str, stream: IO[str] | None = None, *, fields: dict[str, Any] | None = None
) -> None:
    """JSON lines on ``stream`` (stderr) at ``level`` for the ``ofc`` loggers (others at
    warning), each with ``fields`` too."""
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter(fields))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("ofc").setLevel(_LEVELS[level])
    # One line per failed call is always written, whatever the level; successes at debug.
    logging.getLogger("ofc.access").setLevel(min(_LEVELS[level], logging.WARNING))
    grpc_log = logging.getLogger("grpc._cython.cygrpc")
    if not any(isinstance(f, ClientGoneFilter) for f in grpc_log.filters):
        grpc_log.addFilter(ClientGoneFilter())


class ClientGoneFilter(logging.Filter):
    """grpcio's asyncio server logs ``ExecuteBatchError raised in core by servicer method``
    at error level, with a traceback, when a call's answer cannot be sent because its client
    cancelled or its deadline passed just then (before grpcio saw the call closed, when it
    says nothing): the batch failed in core (``Failed "execute_batch": ...``). Nothing failed
    on the server's side: such a record is made an info line without the traceback (written
    only where that logger logs info), so that error-level alerts are not set off by clients
    leaving. A batch the server could not even start (``Failed grpc_call_start_batch``) stays
    an error.

    >>> def logged(why: str) -> logging.LogRecord:
    ...     failed = Exception(why)
    ...     return logging.LogRecord("grpc._cython.cygrpc", logging.ERROR, "", 0,
    ...         "ExecuteBatchError raised in core by servicer method [%s]", ("/a/B",),
    ...         (Exception, failed, None))
    >>> grpc_log = logging.getLogger("grpc._cython.cygrpc")
    >>> grpc_log.setLevel(logging.INFO)
    >>> record = logged('Failed "execute_batch": (<SendMessageOperation>,)')
    >>> ClientGoneFilter().filter(record), record.levelname, record.getMessage()
    (True, 'INFO', "a call's answer was not sent: its client had gone (cancelled, or past its deadline) [/a/B]")
    >>> record.exc_info is None
    True
    >>> grpc_log.setLevel(logging.WARNING)
    >>> ClientGoneFilter().filter(logged('Failed "execute_batch": (<SendMessageOperation>,)'))
    False
    >>> record = logged("Failed grpc_call_start_batch: 8 with grpc_call_error value: 'x'")
    >>> ClientGoneFilter().filter(record), record.levelname
    (True, 'ERROR')
    >>> grpc_log.setLevel(logging.NOTSET)
    """  # noqa: E501

    def filter(self, record: logging.LogRecord) -> bool:
        failed = record.exc_info[1] if record.exc_info else None
        if not (
            str(record.msg).startswith("ExecuteBatchError raised in core")
            and str(failed).startswith('Failed "execute_batch"')
        ):
            return True
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg = (
            "a call's answer was not sent: its client had gone (cancelled, or past its "
            "deadline) [%s]"
        )
        record.exc_info = record.exc_text = None
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


# gRPC core logs through absl straight to file descriptor 2: "E1201 21:13:47.152353   29861
# add_port.cc:83] Failed to add port ...". Such lines become JSON lines with these levels.
_NATIVE_LINE = re.compile(r"([DIWEF])\d{4} [\d:.]+\s+\d+ ([^\]\s]+)\] ?(.*)")
_NATIVE_LEVELS = {
    "D": logging.DEBUG,
    "I": logging.INFO,
    "W": logging.WARNING,
    "E": logging.ERROR,
    "F": logging.CRITICAL,
}
native_log = logging.getLogger("ofc.native")


def log_native_line(line: str) -> None:
    """One line that native code (or anything else) wrote to stderr, as a log record:
    gRPC core's with its level and source, anything else (a traceback) at error level.

    >>> import io
    >>> handler = logging.StreamHandler(io.StringIO())
    >>> handler.setFormatter(JsonFormatter())
    >>> native_log.addHandler(handler)
    >>> log_native_line("E1201 21:13:47.152353   29861 add_port.cc:83] Failed to add port")
    >>> line = json.loads(handler.stream.getvalue())
    >>> line["level"], line["logger"], line["source"], line["msg"]
    ('error', 'ofc.native', 'add_port.cc:83', 'Failed to add port')
    >>> native_log.removeHandler(handler)
    """
    match = _NATIVE_LINE.fullmatch(line)
    if match is None:
        native_log.error(line, extra={"fields": {"source": "stderr"}})
        return
    level, source, message = match.groups()
    native_log.log(_NATIVE_LEVELS[level], message, extra={"fields": {"source": source}})


class NativeStderr:
    """File descriptor 2 as a pipe read by a thread that logs each line as JSON, while the
    JSON handler writes to the real stderr: so native code (gRPC core), Python's own
    tracebacks and warnings all come out as JSON lines. :meth:`close` puts fd 2 back and
    logs what is still in the pipe."""

    def __init__(self) -> None:
        self.real = os.dup(2)
        read_fd, write_fd = os.pipe()
        sys.stderr.flush()
        os.dup2(write_fd, 2)
        os.close(write_fd)
        self.stream = open(self.real, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
        self._reader = open(read_fd, encoding="utf-8", errors="replace")  # noqa: SIM115
        self._thread = threading.Thread(target=self._pump, name="native-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        for line in self._reader:
            if line.strip():
                log_native_line(line.rstrip("\n"))
        self._reader.close()

    def close(self) -> None:
        """Put fd 2 back and log what is left in the pipe; again is a no-op."""
        if not self._thread.is_alive() and self._reader.closed:
            return
        sys.stderr.flush()
        os.dup2(self.real, 2)  # the pipe's last writer goes: the reader sees its end
        self._thread.join(timeout=5)
        self.stream.flush()
