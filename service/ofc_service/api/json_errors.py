"""Where a Connect JSON request fails to decode, as the path every other error names.

protobuf's JSON reader reports a wrong value as a chain ("Failed to parse players field:
Failed to parse board field: ... expected string or bytes-like object, got 'int'") that
names the fields as the JSON gave them (``fantasylandStreak``) and, for most mistakes, not
which element of a list: clients got ``hand.players.board.top`` where the contract
(protos/README.md) promises ``hand.players[1].board.top``, in proto names. Here the chain is
followed through the request's JSON, the element that fails is found by reading each one
alone (an error's cost only), and the message says the path and what was wrong with it.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

_UNKNOWN_FIELD = re.compile(r'has no field named "([^"]+)" at "([^"]*)"')
_FAILED_FIELD = re.compile(r"Failed to parse (\w+) field: ")
_AT_FIELD = re.compile(r"^Couldn't parse [^:]*: .* at \w+\.(\w+)\.*$", re.DOTALL)
_SEGMENT = re.compile(r"(\w+)(?:\[(\d+)\])?")
_LOCATION = re.compile(r"\s+at \"?\w+(?:\.[\w\[\]]+)*\"?\.*$")
_NOT_TEXT = re.compile(r"expected string or bytes-like object, got '(\w+)'")
_NOT_INTEGER = re.compile(r"invalid literal for int\(\) with base 10: (.*)")
_NOT_LIST = re.compile(r"repeated field \w+ must be in \[\] which is .*", re.DOTALL)
_KINDS = {"int": "a number", "float": "a number with a fraction", "bool": "a boolean",
          "list": "an array", "dict": "an object", "NoneType": "null"}  # fmt: skip


def json_error_field(message: str) -> str:
    """The request field a JSON parse error names, as given ("" when it names none); see
    :func:`located` for the path with list indexes in proto names.

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
    return ".".join(f"{name}[{k}]" if k is not None else name for name, k in _segments(message))


def _segments(message: str) -> list[tuple[str, int | None]]:
    """The fields a parse error names, outermost first, each with its list index when the
    error gives one."""
    unknown = _UNKNOWN_FIELD.search(message)
    if unknown is not None:
        name, at = unknown.groups()
        parts = [(m[1], None if m[2] is None else int(m[2])) for m in _SEGMENT.finditer(at)]
        return [*parts[1:], (name, None)]  # (the first is the request's type)
    chain = [m.group(1) for m in _FAILED_FIELD.finditer(message)]
    if chain:
        return [(name, None) for name in chain if not name.isdigit()]
    at = _AT_FIELD.search(message)
    return [] if at is None else [(at.group(1), None)]


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
    text = str(error)
    segments = _segments(text)
    message: Descriptor | None = descriptor
    path: list[str] = []
    value: Any = loaded
    unknown = _UNKNOWN_FIELD.search(text) is not None
    for depth, (name, index) in enumerate(segments):
        parent = message
        field = None if parent is None else _fields(parent).get(name)
        if parent is None or field is None:  # (an unknown field: its name as given)
            path.append(name if index is None else f"{name}[{index}]")
            message, value = None, None
            continue
        item = value.get(name) if isinstance(value, dict) else None
        at = field.name
        if field.is_repeated and isinstance(item, list):  # (a map's JSON is an object)
            last = depth == len(segments) - 1
            if index is None and not (last and unknown):
                index = _failing_element(parent, name, item)
            if index is not None and index < len(item):
                at, item = f"{at}[{index}]", item[index]
        path.append(at)
        value = item
        message = field.message_type if field.type == FieldDescriptor.TYPE_MESSAGE else None
    where = ".".join(path)
    return where, f"{where}: {_reason(text, unknown)}" if where else text


def _fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    return {n: f for f in descriptor.fields for n in (f.json_name, f.name)}


def _failing_element(parent: Descriptor, name: str, items: list[Any]) -> int | None:
    """The first element of the list ``name`` of a ``parent`` message that does not read."""
    cls = message_factory.GetMessageClass(parent)
    for k, element in enumerate(items):
        try:
            json_format.ParseDict({name: [element]}, cls(), ignore_unknown_fields=False)
        except Exception:
            return k
    return None


def _reason(text: str, unknown: bool) -> str:
    """What was wrong, without the chain of fields and the location the path now says."""
    if unknown:
        fields = re.search(r"Available Fields\(except extensions\): \"\[(.*)\]\"", text)
        named = "" if fields is None else fields.group(1).replace("'", "")
        return f"no such field (the message has {named})" if named else "no such field"
    reason = _FAILED_FIELD.split(text)[-1] if _FAILED_FIELD.search(text) else text
    reason = _LOCATION.sub("", reason.strip()).rstrip(".")
    if (kind := _NOT_TEXT.fullmatch(reason)) is not None:
        return f"a string is expected, not {_KINDS.get(kind.group(1), kind.group(1))}"
    if _NOT_LIST.fullmatch(reason):
        return "an array is expected"
    if (literal := _NOT_INTEGER.fullmatch(reason)) is not None:
        return f"an integer is expected, not {literal.group(1)}"
    return reason
