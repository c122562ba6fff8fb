"""JSON values as a verifier reads and compares them: strictly parsed, compared by type."""

from __future__ import annotations

import json
import sys
from typing import Any, NamedTuple

from ofc.verify.codes import Code, Discrepancy


class Found(Exception):
    """Raised inside a check with the discrepancy that ends it."""

    def __init__(self, discrepancy: Discrepancy) -> None:
        super().__init__(str(discrepancy))
        self.discrepancy = discrepancy


def found(code: Code, location: str, message: str) -> Found:
    return Found(Discrepancy(code, location, message))


def malformed(location: str, message: str) -> Found:
    return found(Code.MALFORMED_HISTORY, location, message)


MAX_DEPTH = 500
"""Arrays and objects one inside another, at most, in a verifier's JSON (a history nests a
few). A fixed number, where Python's own limit moves with its call stack (about 990 at the
top); the Node verifier keeps the same one."""


def loads(text: str | bytes) -> Any:
    """Parse JSON strictly (UTF-8; no key twice in an object; no ``NaN``/``Infinity``; at
    most :data:`MAX_DEPTH` arrays and objects deep, integers of at most 4300 digits);
    :class:`Found` ``MALFORMED_HISTORY`` otherwise.

    >>> loads("[" * 500 + "]" * 500) == loads("[" * 500 + "]" * 500)
    True
    >>> loads("[" * 501 + "]" * 501)
    Traceback (most recent call last):
    ...
    ofc.verify.values.Found: MALFORMED_HISTORY: not JSON: nested too deeply
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")  # strictly: JSON travels as UTF-8 (RFC 8259)
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        raise malformed("", f"not JSON: {not_json_reason(exc)}") from None
    # No deeper than its opening brackets: most histories hold fewer than MAX_DEPTH in all
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise malformed("", "not JSON: nested too deeply")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` lists and dicts one inside another (a
    walk of its own stack: the value may be nearly as deep as Python's recursion limit)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth == limit:
                return True
            stack.extend(
                (x, depth + 1) for x in (item.values() if isinstance(item, dict) else item)
            )
    return False


def not_json_reason(exc: ValueError | RecursionError) -> str:
    """Why ``json.loads`` refused a text, for people: its own message, but for the two
    refusals that are Python's limits rather than JSON's.

    >>> import json
    >>> try:
    ...     json.loads("[" * 100_000 + "]" * 100_000)
    ... except RecursionError as exc:
    ...     not_json_reason(exc)
    'nested too deeply'
    >>> try:
    ...     json.loads("1" * 5000)
    ... except ValueError as exc:
    ...     not_json_reason(exc)
    'a number of more than 4300 digits'
    """
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    message = str(exc.args[0]) if exc.args else type(exc).__name__
    if message.startswith("Exceeds the limit") and "integer string conversion" in message:
        return f"a number of more than {sys.get_int_max_str_digits()} digits"
    return message


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise malformed("", f"not JSON: the key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise malformed("", f"not JSON: {name} is not a JSON number")


RESPONSE_KEYS = ("historyJson", "history_json")


def unwrap(data: Any) -> Any:
    """The history inside a ``GetHandHistoryResponse`` in protobuf JSON (``historyJson``, or
    ``history_json`` with the original field names); anything else as it is."""
    if isinstance(data, dict) and "format_version" not in data:
        for key in RESPONSE_KEYS:
            inner = data.get(key)
            if isinstance(inner, str):
                return loads(inner)
    return data


class _Missing:
    def __repr__(self) -> str:
        return "nothing"


MISSING: Any = _Missing()


class Difference(NamedTuple):
    path: str
    expected: Any
    actual: Any


def difference(expected: Any, actual: Any, path: str) -> Difference | None:
    """The first place (document order of ``expected``) where ``actual`` differs; a value of
    another JSON type differs (``1`` is not ``true``, ``1`` is not ``1.0``)."""
    if _same(expected, actual):  # the common case, in C: equal JSON texts, equal values
        return None
    return _walk(expected, actual, path)


def _same(expected: Any, actual: Any) -> bool:
    try:
        return json.dumps(expected, sort_keys=True) == json.dumps(actual, sort_keys=True)
    except (TypeError, ValueError):  # not JSON data (a value only a caller made)
        return False


def _walk(expected: Any, actual: Any, path: str) -> Difference | None:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return Difference(path, expected, actual)
        for key, value in expected.items():
            differs = _walk(value, actual.get(key, MISSING), join(path, key))
            if differs is not None:
                return differs
        extra = [key for key in actual if key not in expected]
        return Difference(join(path, extra[0]), MISSING, actual[extra[0]]) if extra else None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return Difference(path, expected, actual)
        for i in range(max(len(expected), len(actual))):
            differs = _walk(
                expected[i] if i < len(expected) else MISSING,
                actual[i] if i < len(actual) else MISSING,
                f"{path}[{i}]",
            )
            if differs is not None:
                return differs
        return None
    if type(expected) is not type(actual) or expected != actual:
        return Difference(path, expected, actual)
    return None


def compare(expected: Any, actual: Any, path: str, code: Code, source: str) -> None:
    """:class:`Found` ``code`` at the first difference: "recorded X, <source> Y"."""
    differs = difference(expected, actual, path)
    if differs is not None:
        raise found(
            code,
            differs.path,
            f"recorded {show(differs.actual)}, {source} {show(differs.expected)}",
        )


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


__all__ = [
    "MISSING",
    "RESPONSE_KEYS",
    "Difference",
    "Found",
    "compare",
    "difference",
    "found",
    "join",
    "loads",
    "malformed",
    "not_json_reason",
    "show",
    "unwrap",
]
