"""Sizes, percentages and times for DiskGuard: "20GB" (decimal, like df -H), "20GiB", "5%",
"30s", hours."""

from __future__ import annotations

import math
import re
from typing import Union

from diskprobe.durations import parse_duration

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


def parse_seconds(value: Union[int, float, str], name: str) -> float:
    """Seconds from 10, 2.5 or "30s": finite and above 0 (an infinite check_every would never
    measure again, a NaN one neither; 0 would measure at every call of a training loop's
    callbacks), else a ValueError naming the argument."""
    try:
        seconds = parse_duration(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: {error}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{name} must be a finite number of seconds above 0: {value!r}")
    return seconds


def parse_hours(value: Union[int, float, None], name: str) -> float | None:
    """None, or hours: a finite number, 0 or more; else a ValueError naming the argument."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value) or value < 0:  # fmt: skip
        raise ValueError(f"{name} must be a finite number of hours, 0 or more: {value!r}")
    return float(value)
