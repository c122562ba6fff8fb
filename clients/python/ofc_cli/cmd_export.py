"""``ofc export-match --server ADDR TABLE DIR``: a table's finished hands, one history a file.

Lists the table's hands (``ListHands``, oldest first) and writes each one's history
(``GetHandHistory``'s ``history_json``) to ``DIR/hand-NNNNN.json``, ready for ``ofc verify
--match DIR``: the document as served, then a newline (the bytes ``jq -r .historyJson``
writes), so that a digest of the file is the digest of what the service sent. Anyone may
read a finished hand: no key is needed. Exit status: 0 written, 2 bad input or no such table
(the server's reason on stderr), 1 when the server cannot be reached or fails. ``--tls``,
``--ca-file`` and ``--api-key`` as for every remote command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ofc.errors import InvalidInputError

from ofc_cli import remote

PAGE_SIZE = 100  # ListHands' largest page


def register(subparsers: Any) -> None:
    export = subparsers.add_parser(
        "export-match",
        help="write a live table's finished hands, a history per file, for ofc verify --match",
    )
    remote.add_connection_arguments(export, required=True)
    export.add_argument("table_id", metavar="TABLE", help="the table's id")
    export.add_argument("directory", metavar="DIR", help="where to write hand-NNNNN.json")
    export.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    remote.quiet_grpc()
    from ofc_client import InvalidRequestError
    from ofc_client.errors import NotFoundError, OfcClientError
    from ofc_service.api.parse import table_id

    table_id(args.table_id)  # refused here, before connecting, as the server would
    out = Path(args.directory)
    # the folders this makes, deepest first: removed again if nothing could be written
    made = [folder for folder in (out, *out.parents) if not folder.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(
            f"cannot write to {args.directory}: {exc.strerror}", field="directory"
        ) from None
    written = 0
    client = remote.table_client(args)
    try:
        token = ""
        while True:
            page = client.list_hands(args.table_id, page_size=PAGE_SIZE, page_token=token)
            for summary in page.hands:
                hand = client.hand_history(args.table_id, summary.hand_number)
                path = out / f"hand-{summary.hand_number:05d}.json"
                path.write_bytes(hand.history_json.encode() + b"\n")
                written += 1
            token = page.next_page_token
            if not token:
                break
    except OfcClientError as error:
        print(remote.describe(error, args), file=sys.stderr)
        for folder in made if not written else ():
            try:
                folder.rmdir()
            except OSError:  # not empty after all (another writer): left as it is
                break
        return 2 if isinstance(error, InvalidRequestError | NotFoundError) else 1
    finally:
        client.close()
    print(f"{written} hands of table {args.table_id} written to {out}")
    return 0
