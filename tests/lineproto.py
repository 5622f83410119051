"""A strict line-protocol reader for tests: escapes per the InfluxDB spec, typed values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

Value = Union[float, int, bool, str]


@dataclass
class Point:
    measurement: str
    tags: dict[str, str]
    fields: dict[str, Value]
    time_ns: int


def _split(text: str, separators: str) -> tuple[str, str, str]:
    """Up to the first unescaped separator; returns (unescaped part, separator, rest)."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in ",= \\":
            out.append(text[i + 1])
            i += 2
            continue
        if char in separators:
            return "".join(out), char, text[i + 1 :]
        out.append(char)
        i += 1
    return "".join(out), "", ""


def _value(text: str) -> tuple[Value, str]:
    if text.startswith('"'):
        out, i = [], 1
        while text[i] != '"':
            if text[i] == "\\" and text[i + 1] in '"\\':
                i += 1
            out.append(text[i])
            i += 1
        return "".join(out), text[i + 1 :]
    end = min((text.find(c) for c in ", " if c in text), default=len(text))
    raw, rest = text[:end], text[end:]
    if raw in ("true", "false"):
        return raw == "true", rest
    if raw.endswith("i"):
        return int(raw[:-1]), rest
    return float(raw), rest


def parse_line(line: str) -> Point:
    measurement, sep, rest = _split(line, ", ")
    tags: dict[str, str] = {}
    while sep == ",":
        key, _, rest = _split(rest, "=")
        value, sep, rest = _split(rest, ", ")
        tags[key] = value
    if list(tags) != sorted(tags):
        raise ValueError(f"tags not sorted: {line}")
    fields: dict[str, Value] = {}
    while True:
        key, _, rest = _split(rest, "=")
        fields[key], rest = _value(rest)
        if rest.startswith(","):
            rest = rest[1:]
            continue
        break
    if not rest.startswith(" "):
        raise ValueError(f"no timestamp: {line}")
    return Point(measurement, tags, fields, int(rest[1:]))


def parse_lines(text: str) -> list[Point]:
    return [parse_line(line) for line in text.splitlines() if line and not line.startswith("#")]
