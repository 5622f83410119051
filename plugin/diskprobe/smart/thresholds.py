"""The verdict's limits as data: which value warns or fails at which count.

Configuration vocabulary as much as a rule: [smart.thresholds] overrides are checked against
these names at load (config/checks.py), and the verdict (verdict.py) applies them.
"""

from __future__ import annotations

from dataclasses import dataclass

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Threshold:
    """warn/fail when the value reaches the limit (>=), or for `below` drops to it (<=).

    A limit of None never triggers.
    """

    warn: int | None = None
    fail: int | None = None
    below: bool = False

    def level(self, value: int) -> str:
        def hit(limit: int | None) -> bool:
            return limit is not None and (value <= limit if self.below else value >= limit)

        return FAIL if hit(self.fail) else WARN if hit(self.warn) else OK


DEFAULT_THRESHOLDS: dict[str, Threshold] = {
    # ATA, Backblaze's five: any count warns; double-digit uncorrectables fail.
    "reallocated_sectors": Threshold(warn=1),
    "reported_uncorrectable": Threshold(warn=1, fail=10),
    "command_timeouts": Threshold(warn=1),
    "pending_sectors": Threshold(warn=1, fail=10),
    "offline_uncorrectable": Threshold(warn=1, fail=10),
    "end_to_end_errors": Threshold(warn=1),
    "ssd_life_left_percent": Threshold(warn=10, fail=0, below=True),
    # NVMe: the drive's own wear estimate and its unrecovered data errors.
    "percentage_used": Threshold(warn=80, fail=100),
    "media_errors": Threshold(fail=1),
    # SCSI/SAS: grown defects accumulate slowly; an uncorrected error is lost data.
    "grown_defects": Threshold(warn=1, fail=100),
    "read_uncorrected_errors": Threshold(fail=1),
    "write_uncorrected_errors": Threshold(fail=1),
    "verify_uncorrected_errors": Threshold(fail=1),
}
