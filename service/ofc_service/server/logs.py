"""JSON log lines: one object per line, with the record's ``fields`` merged in."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


class JsonFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "msg": ..., **fields}``.

    >>> record = logging.LogRecord("ofc.access", logging.INFO, "", 0, "rpc", None, None)
    >>> record.fields = {"code": "OK"}
    >>> line = json.loads(JsonFormatter().format(record))
    >>> line["msg"], line["code"], line["level"]
    ('rpc', 'OK', 'info')
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging(level: str) -> None:
    """JSON lines on stderr at ``level`` for the ``ofc`` loggers (others at warning)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("ofc").setLevel(_LEVELS[level])
    # One line per failed call is always written, whatever the level; successes at debug.
    logging.getLogger("ofc.access").setLevel(min(_LEVELS[level], logging.WARNING))
