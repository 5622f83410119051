"""bpftrace's JSON output of sources/bpf/latency.bt, a line at a time, into one-second dumps.

`bpftrace -f json` writes one object per line (bpftrace 0.17):
  {"type": "attached_probes", "data": {"probes": 4}}
  {"type": "map", "data": {"@hist": {"266338304,RA,97": 17, "7340034,WS,60": 2}}}
  {"type": "stats", "data": {"@proc": {"0,266338304,RA,python": {"count": 14,
                                       "average": 38260, "total": 535646}}}}
  {"type": "map", "data": {"@all": 110}}
  {"type": "printf", "data": "tick\\n"}
A map's key is its parts joined by ","; `dev` is the kernel's dev_t (major << 20 | minor).
The comm, the only text a task chooses, is the last part (so its commas stay in it). bpftrace
escapes its quotes, backslashes and newlines, and writes a byte above 0x7f as the
sign-extended "\\uffffffXX": read as JSON, that is U+FFFF and "ffXX", turned back into the
byte here. A line that is no such object, or a key or value of another shape, is counted
and left out: it never ends the reading, nor loses the rest of its dump.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SIGNED_BYTE = re.compile("\uffff[fF]{2}([0-9a-fA-F]{2})")
TICK = "tick\n"


@dataclass
class Dump:
    """What the kernel counted over some seconds (one dump, or a window's sum of them)."""

    hist: Counter[tuple[int, str, int]] = field(default_factory=Counter)  # (dev, rwbs, bucket)
    counts: Counter[tuple[int, str]] = field(default_factory=Counter)  # (dev, rwbs): requests
    sums: Counter[tuple[int, str]] = field(default_factory=Counter)  # summed latency, ns
    maxes: dict[tuple[int, str], int] = field(default_factory=dict)
    # (uid, dev, rwbs, comm): requests, summed latency (ns)
    proc_counts: Counter[tuple[int, int, str, str]] = field(default_factory=Counter)
    proc_sums: Counter[tuple[int, int, str, str]] = field(default_factory=Counter)
    # (cgroup v2 id, dev, rwbs, bucket): requests
    cgroups: Counter[tuple[int, int, str, int]] = field(default_factory=Counter)
    completed: int = 0  # every request the kernel timed (@all), kept in a map or not
    unmatched: int = 0  # completions without a start (begun before the program, merged)

    def add(self, other: Dump) -> None:
        for mine, theirs in ((self.hist, other.hist), (self.counts, other.counts),
                             (self.sums, other.sums), (self.proc_counts, other.proc_counts),
                             (self.proc_sums, other.proc_sums),
                             (self.cgroups, other.cgroups)):  # fmt: skip
            mine.update(theirs)  # type: ignore[arg-type]
        for key, value in other.maxes.items():
            self.maxes[key] = max(self.maxes.get(key, 0), value)
        self.completed += other.completed
        self.unmatched += other.unmatched

    def cap_processes(self, cap: int) -> int:
        """Keep the `cap` submitters with the most summed latency (a window sums several
        dumps, each of up to max_keys); the requests of the others, dropped, are returned."""
        if len(self.proc_counts) <= cap:
            return 0
        kept = {key for key, _ in self.proc_sums.most_common(cap)}
        dropped = sum(n for key, n in self.proc_counts.items() if key not in kept)
        self.proc_counts = Counter({k: n for k, n in self.proc_counts.items() if k in kept})
        self.proc_sums = Counter({k: n for k, n in self.proc_sums.items() if k in kept})
        return dropped

    @property
    def unheld(self) -> int:
        """Requests the kernel timed (@all) less those the map holding the fewest holds: every
        timed request goes into each map, so a map at max_keys lost the difference. Signed:
        @all is printed before the maps, so a request completing between those prints is in
        this dump's maps and the next dump's @all (DropCount evens it out)."""
        held = min(sum(self.hist.values()), sum(self.proc_counts.values()),
                   sum(self.cgroups.values()))  # fmt: skip
        return self.completed - held


class DropCount:
    """Requests the kernel's maps could not hold, counted once, never for a race: the running
    sum of the dumps' `unheld` is at most what was truly lost (a request late for @all's
    print is early in the maps'), so each call reports what that sum gained past the most it
    ever reported."""

    def __init__(self) -> None:
        self.unheld = 0
        self.reported = 0

    def take(self, dump: Dump) -> int:
        self.unheld += dump.unheld
        new = max(0, self.unheld - self.reported)
        self.reported += new
        return new


def restore_bytes(text: str) -> str:
    """bpftrace's escape of a byte above 0x7f back to that byte; valid UTF-8 decoded again,
    any other byte kept as a surrogate (serializers write it %XX)."""
    if "\uffff" not in text:
        return text
    raw = SIGNED_BYTE.sub(lambda match: chr(0xDC00 + int(match.group(1), 16)), text)
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")


def _number(value: Any) -> int:
    if type(value) is not int or not 0 <= value < 2**64:
        raise ValueError(f"not a counter: {str(value)[:40]!r}")
    return value


def _key(text: str, parts: int, numeric: tuple[int, ...]) -> tuple[Any, ...]:
    words = text.split(",", parts - 1)
    if len(words) != parts:
        raise ValueError(f"key of {len(words)} parts: {text[:80]!r}")
    return tuple(int(word) if index in numeric else word for index, word in enumerate(words))


# map name -> (key parts, which are numbers, the Dump attributes: of the value, or of a stats
# value's count and total)
MAPS: dict[str, tuple[int, tuple[int, ...], tuple[str, ...]]] = {
    "@hist": (3, (0, 2), ("hist",)),
    "@dev": (2, (0,), ("counts", "sums")),
    "@max": (2, (0,), ("maxes",)),
    "@proc": (4, (0, 1), ("proc_counts", "proc_sums")),
    "@cgroup": (4, (0, 1, 3), ("cgroups",)),
}
SCALARS = {"@all": "completed", "@unmatched": "unmatched"}


class DumpReader:
    """Fed bpftrace's stdout line by line; hands back each dump a "tick" line ends."""

    def __init__(self) -> None:
        self._dump = Dump()
        self.garbage = 0  # lines or entries left out
        self.attached = False

    def feed(self, line: bytes) -> Dump | None:
        try:
            message = json.loads(line.decode("utf-8", "surrogateescape"))
            kind, data = message["type"], message["data"]
        except (ValueError, TypeError, KeyError):
            self.garbage += bool(line.strip())
            return None
        if kind == "attached_probes":
            self.attached = True
        elif kind == "printf" and data == TICK:
            dump, self._dump = self._dump, Dump()
            return dump
        elif kind in ("map", "stats") and isinstance(data, dict):
            for name, value in data.items():
                self._map(name, value)
        return None

    def _map(self, name: str, value: Any) -> None:
        if name in SCALARS:
            try:
                setattr(self._dump, SCALARS[name], _number(value))
            except ValueError:
                self.garbage += 1
            return
        spec = MAPS.get(name)
        if spec is None or not isinstance(value, dict):
            self.garbage += 1
            return
        parts, numeric, attributes = spec
        for text, item in value.items():
            try:
                key = _key(restore_bytes(text), parts, numeric)
                numbers = _values(item, len(attributes))
            except ValueError:
                self.garbage += 1
                continue
            for attribute, number in zip(attributes, numbers):
                target = getattr(self._dump, attribute)
                target[key] = max(target.get(key, 0), number) if attribute == "maxes" \
                    else target.get(key, 0) + number  # fmt: skip


def _values(item: Any, wanted: int) -> tuple[int, ...]:
    """A map's value, or a stats value's count and total."""
    if wanted == 1:
        return (_number(item),)
    if not isinstance(item, dict):
        raise ValueError(f"not a stats value: {str(item)[:40]!r}")
    return _number(item.get("count")), _number(item.get("total"))
