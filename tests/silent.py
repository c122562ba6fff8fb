"""A presenter that encodes nothing: for tests of the table pipeline that read tables, not
events or responses."""

from __future__ import annotations

from ofc_service.application.commands import Command, Outcome
from ofc_service.application.records import TableEvent, TableRecord


class SilentPresenter:
    def event(self, event: TableEvent, version: int, record: TableRecord) -> bytes:
        return b""

    def response(self, outcome: Outcome) -> bytes:
        return b""

    def answers(self, command: Command, response: bytes, table_id: str, actor: int | None) -> bool:
        return False
