"""Integer sums per key over a sliding time window, kept as a ring of time slots.

The fail-slow detector needs "how much of X in the last 30 minutes" for a few keys per
device, every interval, for hundreds of devices. Keeping every sample would cost memory in
proportion to window / interval; a ring of slots costs one small dict per slot, and the
running totals make a query one dict lookup. The window is exact to one slot (a sixth of it
by default): the oldest slot leaves whole.

Slot numbers come from the wall clock, so a ring saved in the state file still lines up
after a restart. Slots ahead of the clock (it stepped back, or a state file says so) are
dropped: a slot in the future would otherwise never leave the window.
"""

from __future__ import annotations

import operator
from collections import deque
from typing import Any, Hashable, Sequence

MAX_KEYS_PER_SLOT = 512  # a state file cannot make one device's ring grow without bound
MAX_VALUE = 2**53  # exact in a float, so JSON round trips cannot change it


class SlidingSums:
    """Per key, element-wise sums of non-negative int vectors added within the window."""

    __slots__ = ("_ring", "_slot_sec", "_slots", "totals")

    def __init__(self, window_sec: float, slots: int) -> None:
        self._slot_sec = window_sec / slots
        self._slots = slots
        self._ring: deque[tuple[int, dict[Hashable, list[int]]]] = deque()
        self.totals: dict[Hashable, list[int]] = {}

    def add(self, now: float, key: Hashable, values: Sequence[int]) -> None:
        number = int(now // self._slot_sec)
        ring = self._ring
        # Called per device and direction every interval: the common case (same slot, a key
        # already there) is two dict lookups and two in-place sums, allocating nothing.
        slot = ring[-1][1] if ring and ring[-1][0] == number else self._slot_at(number)
        entry = slot.get(key)
        if entry is None:
            if len(slot) >= MAX_KEYS_PER_SLOT:
                return
            slot[key] = list(values)
        else:
            for index, value in enumerate(values):
                entry[index] += value
        total = self.totals.get(key)
        if total is None:
            self.totals[key] = list(values)
        else:
            for index, value in enumerate(values):
                total[index] += value

    def _slot_at(self, number: int) -> dict[Hashable, list[int]]:
        self._expire(number)
        ring = self._ring
        while ring and ring[-1][0] > number:
            self._subtract(ring.pop()[1])
        if not ring or ring[-1][0] < number:
            ring.append((number, {}))
        return ring[-1][1]

    def _expire(self, number: int) -> None:
        ring = self._ring
        while ring and ring[0][0] <= number - self._slots:
            self._subtract(ring.popleft()[1])

    def _subtract(self, slot: dict[Hashable, list[int]]) -> None:
        totals = self.totals
        for key, values in slot.items():
            total = list(map(operator.sub, totals[key], values))
            if any(total):
                totals[key] = total
            else:
                del totals[key]

    def is_empty(self) -> bool:
        return not self._ring

    def to_json(self, key_text: Any) -> list[Any]:
        """The ring as JSON: [[slot number, {key text: [ints]}], ...]."""
        return [
            [number, {key_text(key): values for key, values in slot.items()}]
            for number, slot in self._ring
        ]

    @classmethod
    def from_json(
        cls, window_sec: float, slots: int, data: Any, key_of: Any, width: int
    ) -> SlidingSums:
        """A ring read back from the state file; what does not fit the shape is left out."""
        sums = cls(window_sec, slots)
        if not isinstance(data, list):
            return sums
        last = None
        for item in data[-slots:]:
            number, slot = _slot_entry(item, key_of, width)
            if slot is None or (last is not None and number <= last):
                continue
            last = number
            sums._ring.append((number, slot))
            for key, values in slot.items():
                total = sums.totals.setdefault(key, [0] * width)
                for index, value in enumerate(values):
                    total[index] += value
        return sums


def _slot_entry(item: Any, key_of: Any, width: int) -> tuple[int, dict[Hashable, list[int]] | None]:
    if not (isinstance(item, list) and len(item) == 2 and _plain_int(item[0])):
        return 0, None
    number, entries = item
    if not isinstance(entries, dict) or len(entries) > MAX_KEYS_PER_SLOT:
        return 0, None
    slot: dict[Hashable, list[int]] = {}
    for text, values in entries.items():
        key = key_of(text)
        if key is None or not _int_vector(values, width):
            return 0, None
        slot[key] = list(values)
    return number, slot


def _plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_vector(values: Any, width: int) -> bool:
    return (
        isinstance(values, list)
        and len(values) == width
        and all(_plain_int(value) and 0 <= value < MAX_VALUE for value in values)
    )
