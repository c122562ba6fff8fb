"""Request bytes to messages, refusing a number too wide for its field.

Protobuf parsers read a varint of more than 32 bits into a 32-bit field by dropping the high
bits, as C casts: ``seat = 2**32 + 1`` arrives as seat 1, and a request no protobuf library
would write acts on a seat its sender never named. :func:`parser` parses as the message's
``FromString`` does and, when the message's size as parsed differs from the bytes (rare from
a real client: only such numbers, defaults written out or non-minimal varints make it
differ), reads the bytes again with every 32-bit integer field 64 bits wide (in protobuf's
C parser, so a crafted request costs no more than its parse) and, when the two differ,
refuses the request as MALFORMED_REQUEST naming the field. Connect's JSON parser refuses
such numbers already (json_format checks the range).

>>> from ofcpoker.v1 import table_service_pb2 as pb
>>> parse = parser(pb.JoinSeatRequest)
>>> parse(b"\\x10\\x01").seat
1
>>> parse(b"\\x10\\x81\\x80\\x80\\x80\\x10")  # 2**32 + 1
Traceback (most recent call last):
...
ofc_service.api.errors.MalformedRequestError: the request does not decode: seat is a 32-bit \
number, got 4294967297
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final, TypeVar

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from ofc_service.api.errors import MalformedRequestError

M = TypeVar("M", bound=Message)

_UNSIGNED: Final = frozenset({FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_SINT32})
"""Fields whose varint is at most 32 bits wide (sint32's is zigzag-encoded: unsigned too)."""
_SIGNED: Final = frozenset({FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_ENUM})
"""Fields whose varint is a 64-bit two's complement of a 32-bit value (negatives: 10 bytes)."""
_LOW, _HIGH = 2**31, 2**64 - 2**31  # a signed field's varint is below _LOW or at least _HIGH


def parser(message_class: type[M]) -> Callable[[bytes], M]:
    """``message_class.FromString`` that refuses a 32-bit field given a wider number."""

    def parse(data: bytes) -> M:
        return checked(message_class.FromString(data), data)

    return parse


def checked(message: M, data: bytes | bytearray) -> M:
    """``message``, parsed from ``data``, unless a 32-bit field of it was given a wider
    number (MalformedRequestError naming the field)."""
    if message.ByteSize() != len(data) and not _same_wide(message, data):
        found = out_of_range(bytes(data), message.DESCRIPTOR) if len(data) <= NAMED_BYTES else None
        if found is None:  # too long to walk in Python: refused all the same, unnamed
            raise MalformedRequestError(
                "the request does not decode: a number is wider than its 32-bit field"
            )
        path, value = found
        raise MalformedRequestError(
            f"the request does not decode: {path} is a 32-bit number, got {value}", field=path
        )
    return message


NAMED_BYTES: Final = 64 * 1024
"""A refused request up to this long is walked (in Python) for the field to name."""


def _same_wide(message: Message, data: bytes | bytearray) -> bool:
    """Whether ``data`` read with every 32-bit integer field 64 bits wide (a mirror of the
    message's type, in protobuf's C parser) holds what ``message`` holds: it does unless a
    number was cut. Both are serialised deterministically; unknown fields go along as they
    came, in both."""
    wide = _wide_class(message.DESCRIPTOR.full_name, message.DESCRIPTOR.file)
    as_wide: bytes = wide.FromString(bytes(data)).SerializeToString(deterministic=True)
    return as_wide == message.SerializeToString(deterministic=True)


_WIDER: Final = {
    FieldDescriptor.TYPE_UINT32: FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32: FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_INT32: FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_ENUM: FieldDescriptor.TYPE_INT64,  # an enum is an int32 on the wire
}
_WIDE_POOL: Final = descriptor_pool.DescriptorPool()
_wide_files: set[str] = set()


@functools.cache
def _wide_class(full_name: str, file: Any) -> Any:
    _add_wide(file)
    return message_factory.GetMessageClass(_WIDE_POOL.FindMessageTypeByName(full_name))


def _add_wide(file: Any) -> None:
    """``file`` (a FileDescriptor) and what it imports, in the mirror pool, with the 32-bit
    integer fields of its messages 64 bits wide (google.protobuf's own files as they are)."""
    if file.name in _wide_files:
        return
    for dependency in file.dependencies:
        _add_wide(dependency)
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    if not proto.package.startswith("google."):
        _widen(proto.message_type)
    _WIDE_POOL.Add(proto)
    _wide_files.add(file.name)


def _widen(messages: Any) -> None:
    for message in messages:
        for field in message.field:
            if field.type in _WIDER:
                field.type = _WIDER[field.type]
                field.ClearField("type_name")
        _widen(message.nested_type)


def out_of_range(data: bytes, descriptor: Any, at: str = "") -> tuple[str, int] | None:
    """The path and value of the first 32-bit integer field of ``data`` (a ``descriptor``
    message's bytes, which parsed) whose varint does not fit it; None when all fit.

    >>> from ofcpoker.v1 import table_service_pb2 as pb
    >>> out_of_range(b"\\x0a\\x02\\x10\\x05", pb.PlaceCardsRequest.DESCRIPTOR)  # table_id
    >>> placement = b"\\x1a\\x0a\\x0a\\x02Kc\\x10\\x82\\x80\\x80\\x80\\x10"  # row 2**32 + 2
    >>> out_of_range(placement, pb.PlaceCardsRequest.DESCRIPTOR)
    ('placements[0].row', 4294967298)
    """
    fields = descriptor.fields_by_number
    seen: dict[int, int] = {}
    position, end = 0, len(data)
    try:
        while position < end:
            key, position = _varint(data, position)
            number, wire_type = key >> 3, key & 7
            field = fields.get(number)
            if wire_type == 0:
                value, position = _varint(data, position)
                if field is not None and not _fits(field.type, value):
                    return _path(at, field, seen), value
            elif wire_type == 2:
                size, position = _varint(data, position)
                chunk, position = data[position : position + size], position + size
                if field is None:
                    continue
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    inner = out_of_range(chunk, field.message_type, _path(at, field, seen) + ".")
                    if inner is not None:
                        return inner
                elif field.type in _UNSIGNED or field.type in _SIGNED:  # packed: one per value
                    packed = 0
                    while packed < len(chunk):
                        value, packed = _varint(chunk, packed)
                        if not _fits(field.type, value):
                            return _path(at, field, seen), value
                        seen[number] = seen.get(number, 0) + 1
                    continue
            elif wire_type == 1:
                position += 8
            elif wire_type == 5:
                position += 4
            else:  # groups: none in this API, and the parser took the bytes already
                return None
            if field is not None and field.is_repeated:
                seen[number] = seen.get(number, 0) + 1
    except IndexError:
        return None
    return None


def _fits(kind: int, value: int) -> bool:
    if kind in _UNSIGNED:
        return value >> 32 == 0
    if kind in _SIGNED:
        return value < _LOW or value >= _HIGH
    return True


def _path(at: str, field: FieldDescriptor, seen: dict[int, int]) -> str:
    if field.is_repeated:
        return f"{at}{field.name}[{seen.get(field.number, 0)}]"
    return at + field.name


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


__all__ = ["NAMED_BYTES", "checked", "out_of_range", "parser"]
