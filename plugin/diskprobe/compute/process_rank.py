"""Which processes diskprobe_process_io reports: the top by bytes and the top by waiting.

Ranked per process, busiest (or longest waiting) first, each ranking keeping up to `top`
distinct (name, user) series; a series chosen by either ranking gets every candidate of its
name and user added up. A process doing slow random 4 KiB reads waits most and moves few
bytes: the wait ranking is what shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Sequence, TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass
class Candidate:
    pid: int
    started: int
    read_rate: float  # B/s
    write_rate: float  # B/s
    wait: float | None  # seconds blocked on block I/O per second; None: not measured

    @property
    def bytes_rate(self) -> float:
        return self.read_rate + self.write_rate

    def by_bytes(self, min_bytes: float) -> float | None:
        """Its rank by bytes: its rate above min_bytes, else None (not ranked)."""
        return self.bytes_rate if self.bytes_rate > min_bytes else None

    def by_wait(self, min_wait: float) -> float | None:
        """Its rank by waiting: its wait at least min_wait, else None (or not measured)."""
        return self.wait if self.wait is not None and self.wait >= min_wait else None

    def ranked(self, min_bytes: float, min_wait: float) -> bool:
        """Passes either threshold: a candidate for the report."""
        return self.by_bytes(min_bytes) is not None or self.by_wait(min_wait) is not None


def chosen_series(
    ranked: Sequence[tuple[Candidate, Key]], top: int, min_bytes: float, min_wait: float
) -> set[Key]:
    """The series keys of the top `top` by bytes (above min_bytes) and of the top `top` by
    wait (at least min_wait)."""
    by_bytes = _top_keys(ranked, top, lambda candidate: candidate.by_bytes(min_bytes))
    by_wait = _top_keys(ranked, top, lambda candidate: candidate.by_wait(min_wait))
    return by_bytes | by_wait


def _top_keys(
    ranked: Sequence[tuple[Candidate, Key]], top: int, score: Callable[[Candidate], float | None]
) -> set[Key]:
    scored = [(value, key) for candidate, key in ranked
              if (value := score(candidate)) is not None]  # fmt: skip
    scored.sort(key=lambda pair: pair[0], reverse=True)
    keys: set[Key] = set()
    for _, key in scored:
        if len(keys) >= top:
            break
        keys.add(key)
    return keys
