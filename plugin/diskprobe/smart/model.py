"""What every parsing path produces for one drive read: a typed health record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

ATA_COUNTERS = {
    5: "reallocated_sectors",
    10: "spin_retries",
    184: "end_to_end_errors",
    187: "reported_uncorrectable",
    188: "command_timeouts",
    196: "reallocation_events",
    197: "pending_sectors",
    198: "offline_uncorrectable",
    199: "crc_errors",
}


@dataclass
class Attribute:
    """One ATA SMART attribute row."""

    id: int
    name: str
    value: int
    worst: int
    threshold: int
    raw: Optional[int]
    raw_string: str
    prefailure: bool
    when_failed: str  # "", "FAILING_NOW" or "In_the_past"


@dataclass
class DriveHealth:
    """A drive's health as read once; None / absent keys mean "the drive did not say"."""

    device: str  # tag: "sda", "nvme0", "bus0-megaraid5"
    protocol: str = ""  # "ata" | "nvme" | "scsi"
    media: str = ""  # "hdd" | "ssd" | "nvme"
    model: str = ""
    serial: str = ""
    firmware: str = ""
    exit_status: int = 0
    power_mode: str = "active"  # "standby", "sleep", "idle" when smartctl did not wake it
    health_ok: Optional[bool] = None
    temperature_c: Optional[int] = None
    # The drive's own operating limit: NVMe warning composite temperature threshold, ATA device
    # statistics "Specified Maximum Operating Temperature" or SCT "Temperature Limit", SCSI trip.
    temperature_warning_c: Optional[int] = None
    power_on_hours: Optional[int] = None
    power_cycles: Optional[int] = None
    capacity_bytes: Optional[int] = None
    # Named counters per protocol (schema names: reallocated_sectors, media_errors, ...).
    counters: dict[str, int] = field(default_factory=dict)
    attributes: list[Attribute] = field(default_factory=list)
    # Self-test log (ATA, NVMe): the most recent test's result ("passed", "failed", "aborted",
    # "in_progress", "none" for an empty log), its power-on hours, failed tests in the log.
    self_test_last_status: Optional[str] = None
    self_test_last_hours: Optional[int] = None
    self_test_failed_count: Optional[int] = None
    error_log_count: Optional[int] = None  # ATA SMART error log: errors the drive recorded
    source: str = ""  # "json", "text" or "nvme-cli": where the values came from
    # Values that were no number (NaN, Infinity, 1e400), left out: "temperature.current=NaN".
    unusable: list[str] = field(default_factory=list)

    @property
    def standby(self) -> bool:
        return self.power_mode in ("standby", "sleep")

    def add_attribute(self, attribute: Attribute) -> None:
        """Record an ATA attribute; the ones with a schema name also become counters."""
        self.attributes.append(attribute)
        name = ATA_COUNTERS.get(attribute.id)
        if name is not None and attribute.raw is not None:
            self.counters[name] = attribute.raw
