"""The presenter port: how the application's values become the bytes clients read.

The pipeline encodes every event once, per audience, and the response once, before the
commit (so a retry gets the same bytes back); it does not know the wire format. The API
layer implements this Protocol (protobuf) and hands one instance to the
:class:`~.manager.TableManager` when the server starts; nothing is passed per call.
"""

from __future__ import annotations

from typing import Protocol

from ofc_service.application.commands import Command, Outcome
from ofc_service.application.records import TableEvent, TableRecord


class Presenter(Protocol):
    def event(self, event: TableEvent, version: int, record: TableRecord) -> bytes:
        """The stored form of ``event`` (produced at ``version``, ``record`` after it): every
        audience's copy (the owner's full view and everyone else's redacted one), so that a
        watcher's copy is a lookup, never a redaction at read time."""
        ...

    def response(self, outcome: Outcome) -> bytes:
        """The response of the command ``outcome`` committed, serialised."""
        ...

    def answers(self, command: Command, response: bytes, table_id: str, actor: int | None) -> bool:
        """Whether ``response``, a stored answer that names neither its caller nor its request
        (a request record of a release before records did), is an answer to a command of
        ``command``'s kind at table ``table_id`` made for seat ``actor`` (None: for no seat):
        the answer's view must be that seat's, so that a request id alone never shows one
        seat another's cards."""
        ...


__all__ = ["Presenter"]
