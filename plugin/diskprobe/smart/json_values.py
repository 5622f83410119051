"""Values out of a smartctl JSON document that may be damaged or hostile.

Every key is optional and any value may have the wrong type; a number may be no value at all
(NaN, Infinity, 1e400, a 5000-digit integer). json_parser.load reads numbers through the
hooks here, so such a number arrives as an Unusable and reads as absent.
"""

from __future__ import annotations

import math
from typing import Any

from diskprobe.smart.rawvalues import bounded_int, parse_raw


class Unusable(str):
    """A JSON number that is no value (NaN, Infinity, 1e400, a 5000-digit integer): json
    accepts them, a counter cannot be one. It reads as absent; the drive keeps the rest."""


def unusable(token: str) -> Unusable:
    """json.loads' parse_constant hook (NaN, Infinity), and the fallback of the other two."""
    return Unusable(token[:40])


def json_int(token: str) -> int | Unusable:
    """json.loads' parse_int hook: bounded, so a huge integer costs no time."""
    number = bounded_int(token)
    return unusable(token) if number is None else number


def json_float(token: str) -> float | Unusable:
    """json.loads' parse_float hook: 1e400 is no value, not infinity."""
    number = float(token)
    return number if math.isfinite(number) else unusable(token)


def as_int(value: Any) -> int | None:
    """An int from whatever the document holds there (bool, int, float, "0x1f"), else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str) and not isinstance(value, Unusable):
        return parse_raw(value)
    return None


def dig(data: Any, *keys: str) -> Any:
    """data[key1][key2]...; None as soon as a level is missing or is not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def as_list(value: Any) -> list[Any]:
    """A JSON array where one is expected; anything else (a damaged document) is empty."""
    return value if isinstance(value, list) else []


def unusable_values(data: Any, limit: int = 5) -> list[str]:
    """Where the document has Unusable numbers ("temperature.current=NaN"), the first few.
    Iterative: a hostile document may nest as deep as json.loads allows."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack and len(found) < limit:
        path, value = stack.pop()
        if isinstance(value, Unusable):
            found.append(f"{path or '.'}={value}")
        elif isinstance(value, dict):
            stack.extend((f"{path}.{key}".lstrip("."), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return found
