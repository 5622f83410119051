"""Shape checks for the state file's sections: each consumer declares what one entry looks
like, and the store drops what does not match before the consumer ever sees it.

A file written by another version, edited by hand or damaged must never make a collector
fail on every read (an int where a dict of counters was expected did exactly that).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from diskprobe.log import Logger

EntryCheck = Callable[[Any], bool]  # is this entry's value well-formed?


def any_entry(_value: Any) -> bool:
    return True


def finite_number(value: Any) -> bool:
    # json.load reads NaN and Infinity; a NaN time would never age out of a window.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def dict_of(check: EntryCheck) -> EntryCheck:
    """An entry that is an object whose every value passes `check`."""
    return lambda value: isinstance(value, dict) and all(map(check, value.values()))


def checked_section(name: str, value: Any, check: EntryCheck, log: Logger) -> dict[str, Any]:
    """`value` as a section: an object keeping only the entries that pass `check`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        log.warn(f"state: section {name} is a {type(value).__name__}, not an object; rebuilt")
        return {}
    bad = [key for key, entry in value.items() if not _passes(check, entry)]
    if bad:
        log.warn(
            f"state: section {name}: dropped {len(bad)} malformed entr"
            f"{'y' if len(bad) == 1 else 'ies'} (e.g. {bad[0][:80]!r}); rebuilt as data comes"
        )
    dropped = set(bad)
    return {key: entry for key, entry in value.items() if key not in dropped} if bad else value


def _passes(check: EntryCheck, entry: Any) -> bool:
    try:
        return bool(check(entry))
    except (RecursionError, TypeError, ValueError):  # a check written for sane shapes
        return False
