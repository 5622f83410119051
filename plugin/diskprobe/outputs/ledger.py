"""Dropped-point accounting of the spool: every lost point is reported exactly once.

The count of lost points reaches the server as `dropped_points` inside a batch, and that batch
may itself be lost. So a count is never forgotten when it is handed out: it is *offered* to the
batch being built, *carried* by that batch once it is stored (keyed by its sequence number),
and forgotten only when that batch is delivered. A carried count whose batch is dropped (spool
bound, refused by the server, unreadable) goes back to *pending* together with that batch's own
points; so does an offered count whose batch could not be stored at all.

The ledger is kept in `.dropped.json` in the spool directory (rewritten only when it changes,
so never while nothing is lost), so counts survive a restart alongside the batches carrying
them. If it cannot be written (a full disk) the memory copy stays exact for this run.
"""

from __future__ import annotations

import json
import os
from typing import Any, Collection

from diskprobe import files
from diskprobe.log import Logger

LEDGER_NAME = ".dropped.json"
# One entry (~12 bytes) per spooled batch at most: 16 MiB is far beyond any real spool's.
_MAX_BYTES = 16 << 20


class DropLedger:
    """Not thread-safe: the spool calls it under its own lock."""

    def __init__(self, directory: str, log: Logger, stored: Collection[int]) -> None:
        self._path = os.path.join(directory, LEDGER_NAME)
        self._log = log
        self.pending = 0  # lost, not yet offered to a batch
        self._offered = 0  # in the batch being built, which is not stored yet
        self._carried: dict[int, int] = {}  # seq of a stored batch -> the count it carries
        self._saved: tuple[int, dict[int, int]] = (0, {})
        self._load(stored)

    def offer(self) -> int:
        """The count the next batch must carry (again, if the last offer was never stored)."""
        self._offered += self.pending
        self.pending = 0
        return self._offered

    def stored(self, seq: int) -> None:
        """The batch built since the last offer() is in the spool as `seq`."""
        if self._offered:
            self._carried[seq] = self._offered
            self._offered = 0
            self._save()

    def lost(self, points: int) -> None:
        """The batch being built could not be stored: its points and its offer are pending."""
        self.pending += points + self._offered
        self._offered = 0
        self._save()

    def dropped(self, seq: int, points: int) -> None:
        self.pending += points + self._carried.pop(seq, 0)
        self._save()

    def delivered(self, seqs: Collection[int]) -> None:
        forgotten = [self._carried.pop(seq, 0) for seq in seqs]  # every one: no short-circuit
        if any(forgotten):
            self._save()

    def unreported(self) -> int:
        return self.pending + self._offered + sum(self._carried.values())

    def _state(self) -> tuple[int, dict[int, int]]:
        # An offer not yet stored belongs to no batch on disk: after a restart it is pending.
        return self.pending + self._offered, dict(self._carried)

    def _save(self) -> None:
        state = self._state()
        if state == self._saved:
            return
        carried = {str(seq): count for seq, count in state[1].items()}
        text = json.dumps({"pending": state[0], "carried": carried}, separators=(",", ":"))
        try:  # the spool's prefix: its start-up scan removes a temp file a crash left
            files.atomic_write(self._path, text.encode(), 0o600, fsync=True, prefix=".spool.")
        except OSError as error:
            self._log.warn_once(
                "spool-ledger",
                f"output spool: cannot record dropped-point counts in {self._path} "
                f"({error.strerror or error}); they are kept in memory for this run",
            )
            return
        self._log.forget("spool-ledger")
        self._saved = state

    def _load(self, stored: Collection[int]) -> None:
        try:
            raw = files.read_regular(self._path, _MAX_BYTES)  # never a planted link
        except FileNotFoundError:
            return
        except OSError as error:
            self._log.warn(
                f"output spool: cannot read {self._path} ({error.strerror}); "
                "earlier dropped-point counts are lost"
            )
            return
        parsed = _parse(raw)
        if parsed is None:
            self._log.warn(f"output spool: {self._path} is not a dropped-point ledger; "
                           "earlier dropped-point counts are lost")  # fmt: skip
            return
        self.pending, carried = parsed
        # A carried count whose batch is gone was delivered (drops are recorded as pending).
        self._carried = {seq: count for seq, count in carried.items() if seq in stored}
        self._saved = self._state()


def _parse(raw: bytes) -> tuple[int, dict[int, int]] | None:
    try:
        data: Any = json.loads(raw)
        pending, carried = data["pending"], data["carried"]
        counts = {int(seq): count for seq, count in carried.items()}
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    values = [pending, *counts.values()]
    if not all(type(value) is int and value >= 0 for value in values):
        return None
    return pending, counts
