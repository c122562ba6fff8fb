"""A table record in format 4 (what the release before format 5 wrote), for the tests that
derive the older formats from it by taking fields away."""

from __future__ import annotations

import json
from typing import Any

from ofc.codec import action_to_dict, state_to_dict
from ofc_service.application.records import TableRecord


def format_4(record: TableRecord) -> dict[str, Any]:
    """``record`` as a format-4 record's JSON object: the head's fields at the top, the
    match and the hand's start whole (ruleset and deck included), the actions in a list."""
    head = json.loads(record.parts_bytes())["head"]
    start = record.hand_start
    return {
        "format": 4,
        **head,
        "match": state_to_dict(record.match),
        "hand_start": None if start is None else state_to_dict(start),
        "hand_actions": [action_to_dict(a) for a in record.hand_actions],
    }
