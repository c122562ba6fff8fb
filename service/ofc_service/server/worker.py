"""One worker process of ``ofc serve --workers N``: ``python -m ofc_service.server.worker K``.

Started by :mod:`.supervisor`, never by hand. The configuration comes as one JSON line on
stdin (so API keys never show in ``ps``); the pipe then stays open, and its end means the
supervisor is gone: the worker stops as on SIGTERM rather than serve on unsupervised. When
the server is bound and serving the worker writes ``ready`` on stdout. Metrics go to the
supervisor's ``PROMETHEUS_MULTIPROC_DIR`` (set in the environment), which serves them all.
"""

from __future__ import annotations

import json
import os
import sys

from ofc_service.server.config import ServerConfig

READY = b"ready\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    index = int(args[0])
    # One line, read byte by byte: nothing past it may sit in a buffer (see stop_on_eof).
    line = bytearray()
    while (byte := os.read(0, 1)) not in (b"", b"\n"):
        line += byte
    config = ServerConfig(**json.loads(line))
    from ofc_service.server.main import serve  # after the config: gRPC loads here

    def ready() -> None:
        os.write(sys.stdout.fileno(), READY)

    return serve(config, worker=index, on_ready=ready, stop_on_eof=0)


if __name__ == "__main__":
    sys.exit(main())
