"""The I/O collector's fail-slow watch: feeds compute/failslow.py, adds its two fields to the
diskprobe_io points, logs each change of state once and keeps the state across restarts."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from diskprobe.compute.failslow import (
    NEAR_FACTOR,
    FailSlowDetector,
    FailSlowRules,
    Track,
    Transition,
)
from diskprobe.compute.failslow_state import is_track_entry, track_from_json, track_to_json
from diskprobe.config import IoConfig
from diskprobe.durations import format_duration
from diskprobe.log import Logger
from diskprobe.metric import FieldValue
from diskprobe.state import StateStore

STATE_SECTION = "io_fail_slow"


class FailSlowWatch:
    def __init__(self, config: IoConfig, state: StateStore, log: Logger) -> None:
        self._rules = FailSlowRules(config.fail_slow_window, config.fail_slow_ratio)
        self._saved: dict[str, Any] = state.section(STATE_SECTION, is_track_entry)
        self._detector = FailSlowDetector(self._rules, self._restore)
        self._log = log

    def _restore(self, device: str, group: str) -> Optional[Track]:
        return track_from_json(self._saved.get(device), group, self._rules)

    def judge(self, now: float, devices: Mapping[str, tuple[str, dict[str, FieldValue]]]) -> None:
        """One interval: `devices` maps each judged device to (peer group, its point's
        fields); slowdown_ratio and fail_slow are added to those fields in place."""
        if not devices:
            return  # no judged device, or the first sample (no rates): nothing to learn yet
        changes = self._detector.observe(now, devices)
        tracks = self._detector.tracks
        for name, (_, fields) in devices.items():
            track = tracks[name]
            if track.ratio is not None:
                fields["slowdown_ratio"] = track.ratio
            if track.fail_slow or not track.evidence.is_empty():  # judged at least once
                fields["fail_slow"] = track.fail_slow
        for change in changes:
            self._say(change)
            self._saved[change.device] = track_to_json(tracks[change.device])
        if self._detector.save_due(now):
            self._save(tracks)

    def _save(self, tracks: Mapping[str, Track]) -> None:
        """Every present device's Track; absent ones are kept (a device missing for a few
        intervals keeps its memory) until they outnumber the present ones."""
        saved = self._saved
        saved.update((name, track_to_json(track)) for name, track in tracks.items())
        if len(saved) > 2 * len(tracks) + 64:
            for name in [name for name in saved if name not in tracks]:
                del saved[name]

    def _say(self, change: Transition) -> None:
        window = format_duration(self._rules.window_sec)
        limit = self._rules.ratio
        against = (
            "its own history at the same load"
            if change.group.startswith("alone:")
            else f"its peers ({change.group}) at the same load"
        )
        now = f"{change.ratio:.2f}" if change.ratio is not None else "n/a"
        if change.fail_slow:
            self._log.warn(
                f"io: {change.device} is fail-slow: its await was at least {limit:g}x {against} "
                f"in {change.share:.0%} of its judged intervals in the last {window} "
                f"(slowdown_ratio now {now})"
            )
        else:
            self._log.info(
                f"io: {change.device} is no longer fail-slow: at or above "
                f"{limit * NEAR_FACTOR:g}x {against} in only {change.share:.0%} of its judged "
                f"intervals in the last {window} (slowdown_ratio now {now})"
            )
