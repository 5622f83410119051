"""The on-disk spool: one file per batch (`<seq>.lp`), oldest first, bounded in bytes.

Every file is written to a temp name, fsynced and renamed, so a reader (or a restart after
kill -9) sees whole batches only. Sequence numbers only grow, so name order is write order.
When the bound is exceeded the oldest files are deleted and their points (lines) counted.
One process owns a spool directory at a time (flock on `.lock`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import threading
from dataclasses import dataclass

from diskprobe import files
from diskprobe.log import Logger
from diskprobe.outputs.ledger import DropLedger

_NAME = re.compile(r"^(\d{20})\.lp$")


class SpoolLocked(Exception):
    """Another diskprobe is using this spool directory."""


@dataclass(frozen=True)
class Entry:
    seq: int
    size: int
    points: int


def count_points(data: bytes) -> int:
    return sum(1 for line in data.splitlines() if line.strip() and not line.startswith(b"#"))


class Spool:
    def __init__(self, directory: str, max_bytes: int, log: Logger) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self._log = log
        self._lock = threading.Lock()
        self._entries: dict[int, Entry] = {}  # insertion order == seq order
        self._busy: set[int] = set()  # being sent: never dropped under the sender's feet
        self._full: tuple[int, int] | None = None  # (batches, points) dropped since it filled
        os.makedirs(directory, mode=0o700, exist_ok=True)
        problem = files.private_dir_problem(directory)
        if problem is not None:  # another user could plant batches (or links) there
            raise files.UnsafeFile(directory, problem)
        # Held open: the flock lives as long as the descriptor.
        self._lockfile: int | None = files.open_lock(os.path.join(directory, ".lock"))
        try:
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lockfile)
            raise SpoolLocked(f"{directory} is in use by another diskprobe") from None
        self._scan()
        self._ledger = DropLedger(directory, log, self._entries)

    def _path(self, seq: int) -> str:
        return os.path.join(self.directory, f"{seq:020d}.lp")

    def _scan(self) -> None:
        """Pick up what a previous run left; remove half-written temp files."""
        found: list[Entry] = []
        for name in os.listdir(self.directory):
            path = os.path.join(self.directory, name)
            match = _NAME.match(name)
            if name.startswith(".spool.") and name.endswith(".tmp"):
                os.unlink(path)  # a write that never got renamed: never acknowledged to anyone
                continue
            if match is None:
                continue
            try:
                data = files.read_regular(path)  # a planted link is never followed, never sent
            except OSError as error:
                self._log.warn(f"output spool: {name} skipped: {error.strerror}")
                continue
            found.append(Entry(int(match.group(1)), len(data), count_points(data)))
        for entry in sorted(found, key=lambda item: item.seq):
            self._entries[entry.seq] = entry
        self._next = (found and max(entry.seq for entry in found) + 1) or 1
        if found:
            self._log.info(
                f"output spool: {len(found)} batches ({self.points()} points) left by a "
                f"previous run in {self.directory}; replaying them"
            )

    def append(self, data: bytes) -> None:
        """Store one batch durably, then enforce the size bound (dropping the oldest)."""
        with self._lock:
            seq = self._next
            self._next += 1
        files.atomic_write(self._path(seq), data, 0o600, fsync=True, prefix=".spool.")
        with self._lock:
            self._entries[seq] = Entry(seq, len(data), count_points(data))
            self._ledger.stored(seq)  # under the lock: the sender cannot deliver it before
            self._enforce_bound()

    def _enforce_bound(self) -> None:
        """Drop the oldest batches past max_bytes. Logged as other repeated errors are: one E!
        when the spool fills, one I! with the count once a batch fits again (every dropped
        point is in dropped_points meanwhile), not a line per batch (66 in 33 s, before)."""
        total = sum(entry.size for entry in self._entries.values())
        dropped = 0
        for entry in list(self._entries.values()):
            if total <= self.max_bytes:
                break
            if entry.seq in self._busy or len(self._entries) == 1:
                continue  # in flight, or the newest batch alone is larger than the bound
            self._ledger.dropped(entry.seq, entry.points)  # recorded first: never undercounted
            self._remove(entry.seq)
            total -= entry.size
            dropped += 1
            self._note_full(entry)
        if not dropped and self._full is not None:
            batches, points = self._full
            self._full = None
            self._log.info(f"output spool: room again; {batches} batches ({points} points) "
                           "were dropped while it was full")  # fmt: skip

    def _note_full(self, entry: Entry) -> None:
        if self._full is None:
            self._full = (0, 0)
            self._log.error(
                f"output spool: full ({self.max_bytes} bytes); dropping the oldest batches "
                f"from #{entry.seq} on while it stays full (counted in dropped_points; one "
                "line when it has room again)"
            )
        batches, points = self._full
        self._full = (batches + 1, points + entry.points)

    def _remove(self, seq: int) -> None:
        self._entries.pop(seq, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(seq))

    def take(self, max_bytes: int) -> list[tuple[int, bytes]]:
        """The oldest batches, up to max_bytes together (at least one), marked in flight."""
        with self._lock:
            chosen: list[int] = []
            size = 0
            for entry in self._entries.values():
                if chosen and size + entry.size > max_bytes:
                    break
                chosen.append(entry.seq)
                size += entry.size
            self._busy.update(chosen)
        batches: list[tuple[int, bytes]] = []
        for seq in chosen:
            try:
                batches.append((seq, files.read_regular(self._path(seq))))
            except OSError as error:
                self._log.error(f"output spool: batch #{seq} unreadable ({error}); dropped")
                self.done([seq], delivered=False)
        return batches

    def done(self, seqs: list[int], delivered: bool) -> None:
        """After a send: delete the files (delivered, or rejected for good) or release them."""
        with self._lock:
            self._busy.difference_update(seqs)
            for seq in seqs:
                entry = self._entries.get(seq)
                if entry is None:
                    continue
                if not delivered:
                    self._ledger.dropped(seq, entry.points)
                self._remove(seq)
            if delivered:
                self._ledger.delivered(seqs)

    def release(self, seqs: list[int]) -> None:
        """A send failed and will be retried: the batches stay, droppable again."""
        with self._lock:
            self._busy.difference_update(seqs)
            self._enforce_bound()

    def points(self) -> int:
        with self._lock:
            return sum(entry.points for entry in self._entries.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def lost(self, data: bytes) -> int:
        """Count a batch that could not be stored at all (and the count it carried) as dropped."""
        points = count_points(data)
        with self._lock:
            self._ledger.lost(points)
        return points

    def take_dropped(self) -> int:
        """The dropped points the next batch reports; counted until that batch is delivered."""
        with self._lock:
            return self._ledger.offer()

    def unreported_drops(self) -> int:
        """Dropped points not yet in a delivered batch (pending, offered or carried)."""
        with self._lock:
            return self._ledger.unreported()

    def close(self) -> None:
        if self._lockfile is not None:
            os.close(self._lockfile)  # releases the flock
            self._lockfile = None
