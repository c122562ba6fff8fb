"""Where a Connect JSON request fails to decode, as the path every other error names.

protobuf's JSON reader reports a wrong value as a chain ("Failed to parse players field:
Failed to parse board field: ... expected string or bytes-like object, got 'int'") that
names the fields as the JSON gave them (``fantasylandStreak``), leaves out a oneof's member
and, for most mistakes, which element of a list: clients got ``hand.players.board.top``
where the contract (protos/README.md) promises ``hand.players[1].board.top``, in proto names.
Here the member at fault is found by reading the request's members one at a time, then its
members, and so on down (each level reads its part of the request once more: an error's
cost only, linear in the request's size times its depth); the message says the path and
what was wrong there, in at most :data:`MAX_REASON_CHARS` characters.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

MAX_REASON_CHARS = 200
_UNKNOWN_FIELD = re.compile(r'has no field named "([^"]+)" at "([^"]*)"')
_FAILED_FIELD = re.compile(r"Failed to parse (\w+) field: ")
_LOCATION = re.compile(r'"?\w+(?:\.[\w\[\]]+)*"?\.*')
_NOT_TEXT = re.compile(r"expected string or bytes-like object, got '(\w+)'")
_NOT_INTEGER = re.compile(r"invalid literal for int\(\) with base 10: (.*)", re.DOTALL)
_NOT_LIST = re.compile(r"repeated field \w+ must be in \[\] which is .*", re.DOTALL)
_KINDS = {"int": "a number", "float": "a number with a fraction", "bool": "a boolean",
          "list": "an array", "dict": "an object", "NoneType": "null"}  # fmt: skip


def json_error_field(message: str) -> str:
    """The request field a JSON parse error names, as given ("" when it names none); see
    :func:`located` for the path in proto names with list indexes.

    >>> json_error_field('Message type "ofcpoker.v1.Board" has no field named "midle" at '
    ...                  '"ValidateBoardRequest.board".')
    'board.midle'
    >>> json_error_field("Failed to parse board field: Failed to parse top field: repeated "
    ...                  "field top must be in [] which is 3 at ValidateBoardRequest.board..")
    'board.top'
    >>> json_error_field("Failed to load JSON: Expecting value: line 1 column 1 (char 0).")
    ''
    >>> json_error_field("Couldn't parse integer: 1.5 at GetTableRequest.asSeat")
    'asSeat'
    """
    unknown = _UNKNOWN_FIELD.search(message)
    if unknown is not None:
        name, at = unknown.groups()
        return ".".join([*at.split(".")[1:], name])  # (the first is the request's type)
    chain = [m.group(1) for m in _FAILED_FIELD.finditer(message)]
    if chain:
        return ".".join(name for name in chain if not name.isdigit())
    if message.startswith("Couldn't parse "):
        tail = message.rpartition(" at ")[2].rstrip(".")
        return tail.partition(".")[2] if _LOCATION.fullmatch(tail) else ""
    return ""


def located(loaded: Any, descriptor: Descriptor, error: json_format.ParseError) -> tuple[str, str]:
    """The path (proto names, list indexes) of what ``error`` found wrong in ``loaded`` (the
    request's JSON, read as ``descriptor``), and a message that starts with it.

    >>> from ofcpoker.v1 import table_service_pb2 as pb
    >>> request = {"placements": [{"card": "As", "row": 1}, {"card": 5}]}
    >>> try:
    ...     json_format.ParseDict(request, pb.PlaceCardsRequest())
    ... except json_format.ParseError as error:
    ...     located(request, pb.PlaceCardsRequest.DESCRIPTOR, error)
    ('placements[1].card', 'placements[1].card: a string is expected, not a number')
    """
    found = _at_fault(loaded, descriptor) if isinstance(loaded, dict) else None
    if found is None:  # (each member reads alone: the error is not one member's)
        where, reason = json_error_field(str(error)), _reason(error)
    else:
        where, reason = ".".join(found[0]), found[1]
    return where, f"{where}: {reason}" if where else reason


def _at_fault(value: dict[str, Any], descriptor: Descriptor) -> tuple[list[str], str] | None:
    """The path to the first member of ``value`` that does not read, and why, or None when
    each member reads alone."""
    cls = message_factory.GetMessageClass(descriptor)
    fields = {n: f for f in descriptor.fields for n in (f.json_name, f.name)}
    for key, item in value.items():
        error = _refusal(cls, {key: item})
        if error is None:
            continue
        field = fields.get(key)
        if field is None:  # unknown: its name as given
            return [key], _reason(error)
        at = field.name
        if field.is_repeated and isinstance(item, list) and item:
            # the first element that does not read, halving: item[low:high] does not
            low, high = 0, len(item)
            while high - low > 1:
                middle = (low + high) // 2
                if _refusal(cls, {key: item[low:middle]}) is not None:
                    high = middle
                else:
                    low = middle
            element_error = _refusal(cls, {key: [item[low]]})
            if element_error is not None:
                at, item, error = f"{at}[{low}]", item[low], element_error
        below = _message(field)
        if below is not None and isinstance(item, dict):
            inner = _at_fault(item, below)
            if inner is not None:
                return [at, *inner[0]], inner[1]
        return [at], _reason(error)
    return None


def _refusal(cls: Any, member: dict[str, Any]) -> json_format.ParseError | None:
    try:
        json_format.ParseDict(member, cls(), ignore_unknown_fields=False)
    except json_format.ParseError as error:
        return error
    except Exception as error:  # (protobuf's reader lets a few others out)
        return json_format.ParseError(f"{type(error).__name__}: {error}")
    return None


def _message(field: FieldDescriptor) -> Descriptor | None:
    """The message a field holds, when its JSON is that message's members (not a map's
    entries, not a well-known type's own form)."""
    below = field.message_type
    if field.type != FieldDescriptor.TYPE_MESSAGE or below is None:
        return None
    if below.GetOptions().map_entry or below.full_name.startswith("google.protobuf."):
        return None
    return below


def _reason(error: json_format.ParseError) -> str:
    """What was wrong, without the chain of fields and the location the path now says, in
    at most MAX_REASON_CHARS characters (the reader quotes the value, whatever its size)."""
    text = str(error)
    if _UNKNOWN_FIELD.search(text) is not None:
        fields = re.search(r'Available Fields\(except extensions\): "\[(.*?)\]"', text)
        named = "" if fields is None else fields.group(1).replace("'", "")
        return f"no such field (the message has {named})" if named else "no such field"
    reason = _FAILED_FIELD.split(text)[-1].strip()
    head, at, tail = reason.rpartition(" at ")
    if at and _LOCATION.fullmatch(tail):
        reason = head
    reason = reason.rstrip(".")
    if (kind := _NOT_TEXT.fullmatch(reason)) is not None:
        reason = f"a string is expected, not {_KINDS.get(kind.group(1), kind.group(1))}"
    elif _NOT_LIST.fullmatch(reason):
        reason = "an array is expected"
    elif (literal := _NOT_INTEGER.fullmatch(reason)) is not None:
        reason = f"an integer is expected, not {literal.group(1)}"
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    return reason
