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


def parser(message_class: type[M]) -> Callable[[bytes], M]:
    """``message_class.FromString`` that refuses a 32-bit field given a wider number."""

    def parse(data: bytes) -> M:
        return checked(message_class.FromString(data), data)

    return parse


def checked(message: M, data: bytes | bytearray) -> M:
    """``message``, parsed from ``data``, unless a 32-bit field of it was given a wider
    number (MalformedRequestError naming the field).

    Its size as parsed equals the bytes' for what a protobuf library writes; otherwise the
    bytes are read again with every 32-bit integer field 64 bits wide (in protobuf's C
    parser), and the two readings differ only where a number was cut. Unknown fields go
    along as they came in both."""
    if message.ByteSize() == len(data):
        return message
    wide = _wide_class(message.DESCRIPTOR).FromString(bytes(data))
    if wide.SerializeToString(deterministic=True) == message.SerializeToString(deterministic=True):
        return message
    # Naming the field walks the two readings in Python: only for a short request.
    found = _cut(message, wide, "") if len(data) <= NAMED_BYTES else None
    if found is None:
        raise MalformedRequestError(
            "the request does not decode: a number is wider than its 32-bit field"
        )
    path, value = found
    raise MalformedRequestError(
        f"the request does not decode: {path} is a 32-bit number, got {value}", field=path
    )


NAMED_BYTES: Final = 64 * 1024
"""A refused request up to this long is walked (in Python) for the field to name."""


def out_of_range(data: bytes, descriptor: Any) -> tuple[str, int] | None:
    """The path and value of the first 32-bit integer field of ``data`` (a ``descriptor``
    message's bytes, which parse) that was given a wider number; None when all fit.

    >>> from ofcpoker.v1 import table_service_pb2 as pb
    >>> out_of_range(b"\\x0a\\x02\\x10\\x05", pb.PlaceCardsRequest.DESCRIPTOR)  # table_id
    >>> placement = b"\\x1a\\x0a\\x0a\\x02Kc\\x10\\x82\\x80\\x80\\x80\\x10"  # row 2**32 + 2
    >>> out_of_range(placement, pb.PlaceCardsRequest.DESCRIPTOR)
    ('placements[0].row', 4294967298)
    """
    narrow = message_factory.GetMessageClass(descriptor).FromString(data)
    return _cut(narrow, _wide_class(descriptor).FromString(data), "")


def _cut(narrow: Any, wide: Any, at: str) -> tuple[str, int] | None:
    """The first field whose 32-bit reading (``narrow``) differs from its 64-bit one."""
    for field, whole in wide.ListFields():
        path, cut = at + field.name, getattr(narrow, field.name)
        if field.is_repeated:
            readings = [
                (f"{path}[{k}]", c, w) for k, (c, w) in enumerate(zip(cut, whole, strict=True))
            ]
        else:
            readings = [(path, cut, whole)]
        for where, cut_one, whole_one in readings:
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                found = _cut(cut_one, whole_one, where + ".")
                if found is not None:
                    return found
            elif cut_one != whole_one:
                return where, whole_one
    return None


_WIDER: Final = {
    FieldDescriptor.TYPE_UINT32: FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32: FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_INT32: FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_ENUM: FieldDescriptor.TYPE_INT64,  # an enum is an int32 on the wire
}
_WIDE_POOL: Final = descriptor_pool.DescriptorPool()
_wide_files: set[str] = set()


@functools.cache
def _wide_class(descriptor: Any) -> Any:
    """The mirror of ``descriptor``'s message type: its 32-bit integer fields 64 bits wide."""
    _add_wide(descriptor.file)
    return message_factory.GetMessageClass(_WIDE_POOL.FindMessageTypeByName(descriptor.full_name))


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


__all__ = ["NAMED_BYTES", "checked", "out_of_range", "parser"]
