"""Sizes and percentages for DiskGuard: "20GB" (decimal, like df -H), "20GiB", "5%"."""

from __future__ import annotations

import re
from typing import Union

Size = Union[int, float, str]
# ASCII digits only (a regex \d, float() and int() take other scripts' digits too)
_NUMBER = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
_SIZE = re.compile(rf"^\s*({_NUMBER})\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_PERCENT = re.compile(rf"\s*({_NUMBER})\s*%?\s*")
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(value: Size) -> int:
    """Bytes: 123, "20GB" / "20G" (decimal, like df -H), "20GiB" (binary). No percentages."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"negative size {value!r}")
        return int(value)
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f'bad size {value!r} (use e.g. 500000000, "20GB", "20GiB", "5%")')
    number, prefix, binary, _b = match.groups()
    if binary and not prefix:
        raise ValueError(f"bad size {value!r}")
    base = 1024 if binary else 1000
    return int(float(number) * base ** _POWERS[prefix.lower()])


def parse_percent(value: Size) -> float:
    """5, 5.5, "5%": a percentage of 0 to 100."""
    match = _PERCENT.fullmatch(str(value))
    if match is None:
        raise ValueError(f"bad percentage {value!r} (use e.g. 5 or \"5%\")")
    number = float(match.group(1))
    if not 0 <= number <= 100:
        raise ValueError(f"percentage {value!r} is not within 0..100")
    return number


def format_size(count: float) -> str:
    """Decimal, like df -H: "1.2 GB", "20 GB", "512 B"."""
    value, unit = float(count), "B"
    for next_unit in ("kB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1000:
            break
        value, unit = value / 1000, next_unit
    text = f"{value:.0f}" if abs(value) >= 100 or unit == "B" else f"{value:.1f}"
    return f"{text.removesuffix('.0')} {unit}"
