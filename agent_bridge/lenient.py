"""The slow path of the JSON-RPC parser, for lines the fast parser (orjson) refuses.

- ``loads_standard``: what the JSON standard accepts but orjson does not: lone
  surrogate escapes (``"\\ud800"``). Nesting past ~1000 levels neither takes.
  Non-standard input (NaN, Infinity, numbers out of range, bytes that are not UTF-8) is
  still refused. ``scrub`` makes a value safe for the rest of the server (which encodes
  with orjson): a lone surrogate becomes U+FFFD.
- ``find_id``: the top-level ``"id"`` of a line no parser accepts, and whether that
  line is a call (has a top-level ``"method"``), so a request in it can be answered.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

__all__ = ["BrokenLine", "find_id", "loads_standard", "scrub"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_COLON: Final = re.compile(rb"\s*:\s*")
_ID_VALUE: Final = re.compile(rb'-?(?:0|[1-9][0-9]*)(?![0-9.eE])|"(?:[^"\\\x00-\x1f]|\\.)*"')
_MAX_SCAN: Final = 1 << 20  # bytes of a broken line searched for its id


class _Refused(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Refused(name)  # NaN, Infinity, -Infinity: not JSON


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(text)  # 1e400: in the grammar, out of every double's range
    return value


def scrub(value: Any) -> Any:
    """``value`` with every lone surrogate in a string (key or value) replaced by
    U+FFFD, and integers orjson cannot encode turned into floats. Iterative: depth is
    no limit."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        item = container[key]
        if type(item) is str:
            container[key] = _SURROGATE.sub("\ufffd", item)
        elif type(item) is int and not -(1 << 63) <= item < (1 << 64):
            container[key] = float(item)
        elif type(item) is list:
            stack.extend((item, index) for index in range(len(item)))
        elif type(item) is dict:
            clean = {
                (_SURROGATE.sub("\ufffd", k) if _SURROGATE.search(k) else k): v
                for k, v in item.items()
            }
            container[key] = clean
            stack.extend((clean, k) for k in clean)
    return root[0]


def loads_standard(line: bytes | bytearray) -> Any:
    """Parse standard JSON that orjson refused; raise ValueError when it is not. The
    value may hold lone surrogates and big integers: ``scrub`` it before it travels."""
    try:
        text = bytes(line).decode("utf-8")
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    return value


class BrokenLine:
    """What can be told of a line no parser accepts: its top-level id and keys."""

    __slots__ = ("id", "is_call")

    def __init__(self, id: int | str | None, is_call: bool) -> None:
        self.id = id
        self.is_call = is_call


def find_id(line: bytes | bytearray) -> BrokenLine:
    """Scan a broken object line for its top-level ``"id"`` (an int or a string) and
    ``"method"`` keys; strings are skipped whole, so keys inside params don't count."""
    data = bytes(line[:_MAX_SCAN])
    found: int | str | None = None
    is_call = False
    depth = 0
    index = 0
    size = len(data)
    while index < size:
        char = data[index]
        if char == 0x22:  # a string: a key when a colon follows
            match = _STRING.match(data, index)
            if match is None:
                break  # an unterminated string: nothing further is reliable
            index = match.end()
            if depth != 1:
                continue
            colon = _COLON.match(data, index)
            if colon is None:
                continue
            key = match.group()
            if key == b'"method"':
                is_call = True
            elif key == b'"id"' and found is None:
                value = _ID_VALUE.match(data, colon.end())
                if value is not None:
                    found = _decode_id(value.group())
            continue
        if char in b"{[":
            depth += 1
        elif char in b"}]":
            depth -= 1
        index += 1
    return BrokenLine(found, is_call)


def _decode_id(token: bytes) -> int | str | None:
    try:
        value = json.loads(token.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if type(value) is str:
        return value  # kept exact, lone surrogates too: the answer must echo it
    return value if type(value) is int and -(1 << 63) <= value < (1 << 64) else None
