"""Filesystem alerts: a volume forecast to fill, one nearly full, a mount not answering."""

from __future__ import annotations

from dashgen.build import last_value
from dashgen.model import CRIT, WARN, Alert, Level
from dashgen.query import Select
from dashgen.refs import FS

STUCK_AFTER_SEC = 300  # a mount not answering this long is an incident, not a blip
GROUP, EVERY = "diskprobe-filesystems", "1m"


def _fs_last(field: str) -> Select:
    """The last value of `field` per mount (host, path): what each filesystem alert judges."""
    return last_value(FS, FS.f(field), ("host", "path"))


def _fill_forecast_alert() -> Alert:
    """A volume whose net growth fills it within a day (4 h: critical)."""
    return Alert(
        uid="diskprobe-fs-fill-forecast",
        group=GROUP,
        title="Volume forecast to fill",
        query=_fs_last("time_to_full_sec"),
        window="15m",
        levels=(Level(CRIT, "lt", (4 * 3600,)),
                Level(WARN, "within_range", (4 * 3600, 24 * 3600))),
        pending="5m",
        every=EVERY,
        measure="last time_to_full_sec per volume (host, path) in 15 min",
        summary="{host}: {path} fills in {value} s at its current net growth",
        why="diskprobe's time_to_full_sec is a trend over forecast_window (6 h) that ignores "
        "the teeth of checkpoint rotation; it is only sent for a steady trend.",
        runbook="Find what grows (du -xh --max-depth=2 on the path, the fill rate panel), "
        "rotate or move old checkpoints and logs, or grow the volume.",
    )


def _used_alert() -> Alert:
    """A volume above 95 % used, whatever its trend."""
    return Alert(
        uid="diskprobe-fs-used",
        group=GROUP,
        title="Volume above 95 % used",
        query=_fs_last("used_percent"),
        window="15m",
        levels=(Level(CRIT, "gt", (95,)),),
        pending="5m",
        every=EVERY,
        measure="last used_percent per volume in 15 min",
        summary="{host}: {path} is {value} % full",
        why="Past 95 % most filesystems fragment and slow down, and writers start failing "
        "with ENOSPC soon after (used_percent is df's Use%).",
        runbook="Free space now (old checkpoints, logs, caches: du -xh --max-depth=2), then "
        "look at the forecast panel to see whether it refills.",
    )


def _stuck_alert() -> Alert:
    """A mount that has not answered statfs for STUCK_AFTER_SEC."""
    return Alert(
        uid="diskprobe-fs-stuck",
        group=GROUP,
        title="Mount not answering",
        # A sparse field, only on the points of mounts not answering: at 1,000 hosts
        # (11,796 mounts) 0.2 s where counting every mount's points took 1.2 to 1.5 s.
        query=_fs_last("unresponsive_sec"),
        # Holds a point at a filesystems interval up to 1 min; a mount that answers again
        # stops sending the field, so the alert clears within this window.
        window="2m",
        levels=(Level(CRIT, "gt", (STUCK_AFTER_SEC - 0.5,)),),
        pending="0s",
        every=EVERY,
        measure=f"last unresponsive_sec per mount in 2 min (diskprobe counts the seconds "
        f"since the mount first did not answer), at least {STUCK_AFTER_SEC}",
        summary="{host}: {path} has not answered statfs for {value} s",
        why="A hung NFS server or FUSE daemon blocks every process that touches the mount; "
        "diskprobe reports it with responsive=false and how long it has not answered.",
        runbook="Check the server or FUSE daemon (mount | grep path, dmesg for 'not "
        "responding'); if it is gone for good, umount -f -l the path.",
    )


def fs_alerts() -> list[Alert]:
    return [_fill_forecast_alert(), _used_alert(), _stuck_alert()]
