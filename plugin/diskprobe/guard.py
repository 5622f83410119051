"""DiskGuard: "is there still room to write?" for training jobs and batch scripts.

    guard = DiskGuard(["/data/checkpoints"], min_free_bytes="20GB", min_hours_to_full=2)
    status = guard.check()  # cached for check_every seconds: cheap enough for every batch
    if not status.ok: print(status.reasons)
    cache = "/data/cache" if guard.allows("the disk cache") else None  # one call, logs changes

Same numbers as the plugin's diskprobe_fs (df's Avail and Use%, hang-proof statfs, the
upper-envelope fill-rate forecast) from an in-process FilesystemsCollector; the forecast
window lives in memory, or in `state_file` to survive restarts. Imports no ML framework.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.filesystems import MEASUREMENT, FilesystemsCollector
from diskprobe.compute.mount_selection import MountTarget, select_mounts
from diskprobe.config import FilesystemsConfig
from diskprobe.durations import parse_duration
from diskprobe.guard_units import (
    Size,
    format_size,
    parse_hours,
    parse_percent,
    parse_seconds,
    parse_size,
)
from diskprobe.log import Logger
from diskprobe.roots import HostRoots
from diskprobe.sources.mountinfo import Mount, parse_mountinfo
from diskprobe.sources.statfs import StatfsProber
from diskprobe.state import StateStore

__all__ = ["DiskGuard", "GuardStatus", "PathStatus", "format_size", "parse_size"]
logger = logging.getLogger(__name__)  # "diskprobe.guard": allows() and the callbacks log here

Duration = Union[int, float, str]
PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


@dataclass(frozen=True)
class PathStatus:
    path: str  # as given
    mount_point: str  # the mount holding it ("" if it could not be resolved)
    ok: bool
    avail_bytes: int | None  # free space an ordinary user can still write (df's Avail)
    total_bytes: int | None
    used_percent: float | None  # df's Use%: used / (used + avail) * 100
    fill_rate_bytes_per_sec: float | None  # None until the window holds enough samples
    time_to_full_sec: float | None  # None: not filling, or no trustworthy trend yet
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class GuardStatus:
    ok: bool
    paths: tuple[PathStatus, ...]
    reasons: tuple[str, ...]  # every path's reasons, e.g. "/data: 1.2 GB free, below 20 GB"
    checked_at: float  # wall-clock time of the statfs this status comes from

    def __bool__(self) -> bool:
        return self.ok


def _mount_of(real: str, mounts: Sequence[Mount]) -> Mount | None:
    """The top mount whose mount point is the longest prefix of the resolved path."""
    best: Mount | None = None
    for mount in mounts:  # in mount order: a later mount on the same point covers earlier ones
        point = mount.mount_point
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best.mount_point)):
            best = mount
    return best


class DiskGuard:
    """Thresholds on the filesystems holding `paths`; any threshold crossed makes ok False."""

    def __init__(
        self,
        paths: PathArg | Sequence[PathArg],
        min_free_bytes: Size | None = None,
        min_free_percent: Size | None = None,
        min_hours_to_full: float | None = None,
        check_every: Duration = 10.0,
        *,
        state_file: str | None = None,
        forecast_window: Duration = "1h",
        forecast_min_samples: int = 6,
        stat_timeout: Duration = 5.0,
        prober: StatfsProber | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        log: Logger | None = None,
    ) -> None:
        items = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
        if not items:
            raise ValueError("DiskGuard needs at least one path")
        self.paths = [os.fsdecode(item) for item in items]  # bytes as os decodes them
        self.min_free_bytes: int | None = None
        percents = [] if min_free_percent is None else [parse_percent(min_free_percent)]
        if isinstance(min_free_bytes, str) and min_free_bytes.strip().endswith("%"):
            percents.append(parse_percent(min_free_bytes))  # "5%" given as min_free_bytes
        elif min_free_bytes is not None:
            self.min_free_bytes = parse_size(min_free_bytes)
        self.min_free_percent: float | None = max(percents) if percents else None
        self.min_hours_to_full = parse_hours(min_hours_to_full, "min_hours_to_full")
        self.check_every = parse_seconds(check_every, "check_every")
        self._clock = clock
        self._last: tuple[float, GuardStatus] | None = None
        self._state: StateStore = (
            StateStore.in_memory(log or Logger())
            if state_file is None
            else StateStore(state_file, log or Logger())
        )
        config = FilesystemsConfig(
            mount_points=[], ignore_fs=[], stat_timeout=_seconds(stat_timeout),
            forecast_window=_seconds(forecast_window), forecast_min_samples=forecast_min_samples,
        )  # fmt: skip
        self._targets: list[MountTarget] = []  # the guard's mounts, set before each collect()
        wall_clock = Clock(wall_ns=lambda: round(wall() * 1e9))  # the forecast runs on `wall`
        self._collector = FilesystemsCollector(
            config, CollectorContext(HostRoots(), log or Logger(), self._state, wall_clock),
            prober=prober, targets=lambda: self._targets,
        )  # fmt: skip
        self._wall = wall
        self._low: dict[str, bool] = {}  # allows(what): whether space was low at its last call
        self._resolved: dict[str, str] = {}  # path -> the mount point it was first found on

    def check(self, force: bool = False) -> GuardStatus:
        """The status, measured afresh at most once per check_every seconds."""
        now = self._clock()
        if not force and self._last is not None and now - self._last[0] < self.check_every:
            return self._last[1]
        status = self._measure()
        self._last = (now, status)
        return status

    def allows(self, what: str) -> bool:
        """check().ok in one call for a plain loop that writes `what` only while there is room;
        logs (logger "diskprobe.guard") once when space runs low and once when it recovers:

            cache = "/data/cache" if guard.allows("the disk cache") else None  # None: in memory
        """
        low = note_transition(self.check(), self._low.get(what, False), ", ".join(self.paths),
                              f"pausing {what}", f"resuming {what}")  # fmt: skip
        self._low[what] = low
        return not low

    def close(self) -> None:
        """Save the forecast window (with state_file) and stop the statfs helper."""
        self._state.save(force=True)
        self._collector.close()

    def __enter__(self) -> DiskGuard:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _measure(self) -> GuardStatus:
        # Our own mount namespace: the paths were given as this process sees them.
        mountinfo = "/proc/self/mountinfo"
        with open(mountinfo, encoding="utf-8", errors="surrogateescape", newline="") as f:
            mounts = parse_mountinfo(f.read())
        points: dict[str, str] = {}
        chosen: dict[str, Mount] = {}
        for path in self.paths:
            mount = _mount_of(os.path.realpath(path), mounts)
            if mount is not None:
                points[path] = mount.mount_point
                chosen[mount.mount_point] = mount
                self._resolved.setdefault(path, mount.mount_point)
        self._targets = select_mounts(list(chosen.values()), ignore_fs=[], report_bind_mounts=True)
        fields = {m.tags["path"]: m.fields for m in self._collector.collect().metrics
                  if m.measurement == MEASUREMENT}  # fmt: skip
        self._state.save()
        mounted = {mount.mount_point for mount in mounts}
        statuses = tuple(
            self._judge(path, points.get(path, ""), fields, self._mount_problem(
                path, chosen.get(points.get(path, "")), mounted))
            for path in self.paths
        )  # fmt: skip
        reasons = tuple(reason for status in statuses for reason in status.reasons)
        return GuardStatus(not reasons, statuses, reasons, self._wall())

    def _mount_problem(self, path: str, mount: Mount | None, mounted: set[str]) -> str:
        """Why a write to `path` would fail whatever the free space: its mount is read-only
        (a filesystem remounted so after errors), or the mount it was first found on is gone
        (the path then falls through to the mount below, often "/", where no checkpoint is
        meant to go). An automounted path stays on its mount point: a check's own lookup
        mounts it again (docs/training-job.md)."""
        first = self._resolved.get(path)
        if first is not None and first not in mounted:
            now = mount.mount_point if mount is not None else "nothing"
            return f"{path}: {first} is no longer mounted (the path is now on {now})"
        if mount is not None and mount.read_only:
            return f"{path}: {mount.mount_point} is mounted read-only"
        return ""

    def _judge(
        self, path: str, point: str, all_fields: dict[str, Any], mount_problem: str = ""
    ) -> PathStatus:
        got: dict[str, Any] = all_fields.get(point, {}) if point else {}
        avail, used_percent = got.get("avail_bytes"), got.get("used_percent")
        rate, ttf = got.get("fill_rate_bytes_per_sec"), got.get("time_to_full_sec")
        reasons: list[str] = [mount_problem] if mount_problem else []
        if not point:
            reasons.append(f"{path}: no mount found for it")
        elif avail is None:
            reasons.append(f"{path}: statfs on {point} failed or did not answer")
        if avail is not None and self.min_free_bytes is not None and avail < self.min_free_bytes:
            limit = format_size(self.min_free_bytes)
            reasons.append(f"{path}: {format_size(avail)} free, below {limit}")
        free_percent = None if used_percent is None else 100.0 - used_percent
        if free_percent is not None and free_percent < (self.min_free_percent or -1.0):
            reasons.append(f"{path}: {free_percent:.1f}% free, below {self.min_free_percent:g}%")
        hours = self.min_hours_to_full
        if ttf is not None and hours is not None and ttf < hours * 3600:
            speed = format_size(rate or 0)
            reasons.append(f"{path}: full in {ttf / 3600:.2f} h at {speed}/s, below {hours:g} h")
        return PathStatus(path, point, not reasons, avail, got.get("total_bytes"), used_percent,
                          rate, ttf, tuple(reasons))  # fmt: skip


def note_transition(status: GuardStatus, low: bool, where: str, doing: str, resuming: str) -> bool:
    """Logs when space runs low (with the reasons) or recovers; returns whether it is low now."""
    if not status.ok and not low:
        logger.warning("diskprobe: low disk space at %s (%s); %s",
                       where, "; ".join(status.reasons), doing)  # fmt: skip
    elif status.ok and low:
        logger.warning("diskprobe: disk space is sufficient again at %s%s",
                       where, f"; {resuming}" if resuming else "")  # fmt: skip
    return not status.ok


def _seconds(value: Duration) -> float:
    return parse_duration(value) if isinstance(value, str) else float(value)

