"""diskprobe_fs: df-exact usage per mount, hang-proof statfs, fill rate and time to full."""

from __future__ import annotations

import errno
import os
from typing import Any, Callable

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.compute.forecast import ForecastWindow
from diskprobe.compute.forecast_fit import FitTrack
from diskprobe.compute.mount_selection import MountTarget, select_mounts
from diskprobe.compute.usage import usage_fields
from diskprobe.config import FilesystemsConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.fs import FS
from diskprobe.sources.mount_watch import MountWatch
from diskprobe.sources.statfs import StatfsProber
from diskprobe.state_sections import dict_of, finite_number

MEASUREMENT = FS.name
# Errors that mean "the filesystem is there but not answering": a dead FUSE daemon
# (ENOTCONN), a stale or unreachable NFS server. Reported as responsive=false.
UNRESPONSIVE_ERRNOS = frozenset(
    {errno.ENOTCONN, errno.EIO, errno.ESTALE, errno.EHOSTDOWN, errno.EHOSTUNREACH,
     errno.ETIMEDOUT, errno.ECONNREFUSED}
)  # fmt: skip
STATE_SECTION = "fs_forecast"
UNRESPONSIVE_SECTION = "fs_unresponsive"  # path -> wall time (s) it was first found hung
# Points stored over all forecast windows: ~20 MB of RAM and ~6.5 MB of state file at most.
# Up to 277 mounts every series keeps ForecastWindow.MAX_POINTS (one per minute of a 6 h
# window); beyond that each keeps fewer, further apart (2,000 mounts: 50, one per 7 min).
# Full windows for every mount cost 90 kB each: 183 MiB at 2,000 mounts, and a state file
# over the 16 MiB a start reads back, so the windows were lost at every restart.
POINT_BUDGET = 200_000
MIN_POINTS_PER_MIN_SAMPLE = 4  # the floor: a forecast needs forecast_min_samples points


class FilesystemsCollector(BaseCollector[FilesystemsConfig]):
    """Usage of the selected mounts; the forecast windows live in the state store."""

    name = "filesystems"
    needs_prime = False

    def __init__(
        self,
        config: FilesystemsConfig,
        context: CollectorContext,
        *,
        prober: StatfsProber | None = None,
        targets: Callable[[], list[MountTarget]] | None = None,
    ) -> None:
        super().__init__(config, context)
        state = context.state_store()
        self._windows: dict[str, Any] = state.section(STATE_SECTION, _valid_windows)
        # (path, series) -> the incremental fit of that window list (compute.forecast_fit)
        self._tracks: dict[tuple[str, str], FitTrack] = {}
        self._max_points = ForecastWindow.MAX_POINTS  # per window, from POINT_BUDGET
        self._prober = prober or StatfsProber(config.stat_timeout)
        self._chosen_targets = targets
        self._mount_watch = MountWatch(self._roots)
        self._selected: list[MountTarget] = []  # from the table as last read
        self._stuck: set[str] = set()  # timed out: W! logged, I! due when it answers
        self._failing: dict[str, int] = {}  # path -> errno last logged
        # path -> wall time (s) of its first point with responsive=false, for unresponsive_sec:
        # an alert reads that one sparse field instead of counting every mount's points. In
        # the state file: a restart does not start a mount hung for a day at 0 again.
        self._unresponsive_since: dict[str, float] = state.section(UNRESPONSIVE_SECTION,
                                                                   finite_number)  # fmt: skip

    def _targets(self) -> list[MountTarget]:
        if self._chosen_targets is not None:
            return self._chosen_targets()  # a caller that picks its own mounts (DiskGuard)
        mounts = self._mount_watch.changed()
        if mounts is None:
            return self._selected  # the same table: the same choice (most collects)
        config = self.config
        self._selected = select_mounts(
            mounts,
            ignore_fs=config.ignore_fs,
            mount_points=config.mount_points,
            ignore_mount_points=config.ignore_mount_points,
            report_bind_mounts=config.report_bind_mounts,
            prefix=self._roots.mount_prefix,
        )
        return self._selected

    def collect(self) -> Collection:
        targets = self._targets()
        results = self._prober.probe([target.stat_path for target in targets])
        # One reading: the forecast's time and the points' timestamp are the same instant.
        time_ns = self._clock.wall_ns()
        now = time_ns / 1e9
        collection = Collection(items=len(targets))
        self._max_points = self._points_per_window(len(targets))
        for target in targets:
            result = results[target.stat_path]
            if isinstance(result, OSError):
                self._stuck.discard(target.path)  # it answered, if only with an error
                collection.errors += 1
                self._note_failure(target, result)
                if result.errno not in UNRESPONSIVE_ERRNOS:
                    continue  # e.g. unmounted meanwhile, or no permission: no point
                fields: dict[str, FieldValue] = {"responsive": False}
            else:
                self._note_success(target)
                fields = self._fields(target, result, now)
            self._note_responsive(target.path, fields, now)
            collection.metrics.append(Metric(MEASUREMENT, _tags(target), fields, time_ns))
        self._forget_departed({target.path for target in targets})
        self._forget_old_windows(now)
        return collection

    def _points_per_window(self, mounts: int) -> int:
        # Two series per mount; windows of departed mounts are kept (and count) a while.
        series = 2 * max(mounts, len(self._windows), 1)
        floor = MIN_POINTS_PER_MIN_SAMPLE * self.config.forecast_min_samples
        return min(ForecastWindow.MAX_POINTS, max(POINT_BUDGET // series, floor))

    def _forget_departed(self, present: set[str]) -> None:
        # Mounts that failed or hung and then left the table (pods come and go): their
        # notes would otherwise stay for the life of the process.
        if len(self._failing) > len(present) or len(self._stuck) > len(present):
            self._failing = {p: c for p, c in self._failing.items() if p in present}
            self._stuck &= present
        # A few hung mounts at most; one unmounted and mounted again starts at 0.
        for path in [p for p in self._unresponsive_since if p not in present]:
            del self._unresponsive_since[path]  # in place: the state store holds this dict
        # A fit is a cache (rebuilt from the window if the mount comes back): only the
        # mounts in the table keep one, while their windows stay for a forecast_window.
        if len(self._tracks) > 2 * len(present) + 16:
            self._tracks = {key: t for key, t in self._tracks.items() if key[0] in present}

    def _note_responsive(self, path: str, fields: dict[str, FieldValue], now: float) -> None:
        if fields["responsive"]:
            self._unresponsive_since.pop(path, None)
            return
        since = self._unresponsive_since.setdefault(path, now)
        if now < since:  # the wall clock was stepped back: count from here, never below 0
            since = self._unresponsive_since[path] = now
        # Points are aligned to the interval: round, so the 30th 10 s point says 300, not 299.
        fields["unresponsive_sec"] = round(now - since)

    def _note_failure(self, target: MountTarget, error: OSError) -> None:
        code = error.errno or errno.EIO
        if self._failing.get(target.path) != code:
            self._failing[target.path] = code
            self._log.warn(f"filesystems: statfs {target.stat_path}: {os.strerror(code)}")

    def _note_success(self, target: MountTarget) -> None:
        if self._failing.pop(target.path, None) is not None:
            self._log.info(f"filesystems: statfs {target.stat_path} works again")

    def close(self) -> None:
        self._prober.close()
        self._mount_watch.close()

    def _fields(
        self, target: MountTarget, result: os.statvfs_result | None, now: float
    ) -> dict[str, FieldValue]:
        if result is None:
            if target.path not in self._stuck:
                self._stuck.add(target.path)
                self._log.warn(
                    f"filesystems: statfs {target.stat_path} did not answer within "
                    f"{self._prober.timeout:g}s; reporting responsive=false until it does"
                )
            return {"responsive": False}
        if target.path in self._stuck:
            self._stuck.discard(target.path)
            self._log.info(f"filesystems: statfs {target.stat_path} answers again")
        fields = usage_fields(result)
        fields["responsive"] = True
        fields.update(self._forecast(target.path, now, fields))
        return fields

    def _window(self, path: str, series: str) -> ForecastWindow:
        entry = self._windows.setdefault(path, {})
        points = entry.get(series)
        if not isinstance(points, list):
            points = entry[series] = []
        key = (path, series)
        window = ForecastWindow(
            self.config.forecast_window,
            points,
            self._tracks.get(key),
            self._max_points,
            tuples=True,
        )
        self._tracks[key] = window.track
        return window

    def _forecast(
        self, path: str, now: float, usage: dict[str, FieldValue]
    ) -> dict[str, FieldValue]:
        fields: dict[str, FieldValue] = {}
        min_samples = self.config.forecast_min_samples
        space = self._window(path, "avail")
        space.add(now, float(usage["avail_bytes"]))
        space_forecast = space.forecast(min_samples)
        if space_forecast is not None:
            fields["fill_rate_bytes_per_sec"] = space_forecast.fill_rate
            if space_forecast.time_to_full is not None:
                fields["time_to_full_sec"] = space_forecast.time_to_full
        if usage["inodes_total"]:
            inodes = self._window(path, "inodes")
            inodes.add(now, float(usage["inodes_free"]))
            inode_forecast = inodes.forecast(min_samples)
            if inode_forecast is not None and inode_forecast.time_to_full is not None:
                fields["inodes_time_to_full_sec"] = inode_forecast.time_to_full
        return fields

    def _forget_old_windows(self, now: float) -> None:
        # Mounts gone for longer than a window leave no trace in the state file.
        horizon = now - self.config.forecast_window
        for path in list(self._windows):
            entry = self._windows[path]
            points = entry.get("avail") if isinstance(entry, dict) else None
            if not isinstance(points, list) or not points or points[-1][0] < horizon:
                del self._windows[path]


def _tags(target: MountTarget) -> dict[str, str]:
    return {
        "path": target.path,
        "device": target.device,
        "fstype": target.fstype,
        "mode": target.mode,
    }


def _valid_points(points: Any) -> bool:
    return isinstance(points, list) and all(
        isinstance(p, list) and len(p) == 2 and all(map(finite_number, p)) for p in points
    )


# One state entry per mount: {"avail": [[t, value], ...], "inodes": [...]}.
_valid_windows = dict_of(_valid_points)
