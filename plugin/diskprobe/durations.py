"""Go/Telegraf-style durations: "500ms", "10s", "30m", "1h", "1h30m"; a bare number is seconds."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# ASCII digits only, as Go's time.ParseDuration: a regex \d would take Arabic-Indic digits too
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in `text`; ValueError with the accepted forms otherwise."""
    spec = text.strip()
    position, total = 0, 0.0
    while position < len(spec):
        match = _PART.match(spec, position)
        if match is None:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not spec or position != len(spec):
        raise ValueError(f'bad duration {text!r} (use e.g. "500ms", "10s", "30m", "1h")')
    return total


def format_duration(seconds: float) -> str:
    """The shortest exact spelling parse_duration() reads back."""
    for unit, scale in (("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3)):
        count = seconds / scale
        if count >= 1 and abs(count - round(count)) < 1e-9:
            return f"{round(count)}{unit}"
    return f"{seconds}s"
