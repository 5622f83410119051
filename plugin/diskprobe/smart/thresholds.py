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
    # What a drive states about lost or unreadable data warns, on every media; nothing here
    # fails by count alone (fail is for hard facts: docs/smart.md). On hard drives the
    # failure-rate estimate (smart/afr.py) adds its own warn and fail on top of these counts.
    "reallocated_sectors": Threshold(warn=1),
    "reported_uncorrectable": Threshold(warn=1),
    "pending_sectors": Threshold(warn=1),
    "offline_uncorrectable": Threshold(warn=1),
    "end_to_end_errors": Threshold(warn=1),
    # Wear: the drive's own estimate. 10 % left warns; worn out (0 % left, 100 % used) fails.
    "ssd_life_left_percent": Threshold(warn=10, fail=0, below=True),
    "percentage_used": Threshold(warn=90, fail=100),
    # NVMe and SCSI/SAS: unrecovered errors and grown defects, as the drive counts them.
    "media_errors": Threshold(warn=1),
    "grown_defects": Threshold(warn=1),
    "read_uncorrected_errors": Threshold(warn=1),
    "write_uncorrected_errors": Threshold(warn=1),
    "verify_uncorrected_errors": Threshold(warn=1),
    # No default limit, kept for overrides: up to 100 command timeouts fail no more often than
    # none in Backblaze's fleet (afr_table.toml); above that the estimate warns on hard drives.
    "command_timeouts": Threshold(),
}
