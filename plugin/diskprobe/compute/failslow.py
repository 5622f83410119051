"""Fail-slow: a device that still answers, only slower than its peers at the same load.

Each interval, each judged device's await is divided by the await its peers show at its
load (`slowdown_ratio`); a device whose ratio stays at or above the threshold for most of
the window turns `fail_slow`, and turns back with hysteresis. Pure: the collector feeds
diskprobe_io fields in and logs the transitions it gets back.

Load is binned per direction: reads and writes apart, by request size (one bin per power of
two) and by requests per second (two bins per doubling). The expectation comes, in order:
  1. from the peers active in this very interval (a load change or a slowdown shared by the
     whole group moves the expectation with it, so it flags nothing);
  2. else from the peers' awaits over the window (peers busy at other times);
  3. for a device without peers, from its own history over a week, once that history holds
     half a window of activity at the load; it learns only while the device is not slow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, NamedTuple, Optional

from diskprobe.compute.failslow_votes import Vote, vote
from diskprobe.compute.peers import MIN_IOS, Key, PeerTable, Sample, sample_keys
from diskprobe.compute.sliding import SlidingSums
from diskprobe.metric import FieldValue

WINDOW_SLOTS = 6
HISTORY_SEC = 7 * 86400.0
HISTORY_SLOTS = 28  # six-hour slots
ON_SHARE = 0.5  # "most of the window": half the judged intervals at or above the ratio
NEAR_FACTOR = 0.75  # hysteresis: off once less than a quarter of the judged intervals
OFF_SHARE = 0.25  # ... is at or above 0.75 x the ratio
MIN_ACTIVE_SHARE = 0.25  # no change of state before a quarter of the window was active
MIN_OBSERVATIONS = 5  # ... in at least this many intervals: one long interval decides nothing
HISTORY_MIN_ACTIVE_SHARE = 0.5  # a load bucket of the own history counts after this much
# The evidence ring's one key: [active ms, active intervals, slow intervals, near intervals].
# Shares count intervals (observations), not time: a 40 s interval weighs as one.
EVIDENCE: Key = ("e", 0, 0)


@dataclass(frozen=True)
class FailSlowRules:
    window_sec: float = 1800.0
    ratio: float = 2.0


class Transition(NamedTuple):
    device: str
    group: str
    fail_slow: bool
    share: float  # of the window's judged intervals at or above the ratio (on) or near (off)
    ratio: Optional[float]


class Track:
    """One device's memory: its recent awaits per load, its evidence, its state."""

    __slots__ = ("evidence", "fail_slow", "group", "history", "ratio", "window", "window_sec")

    def __init__(self, group: str, rules: FailSlowRules) -> None:
        self.group = group
        self.window_sec = rules.window_sec
        self.window = SlidingSums(rules.window_sec, WINDOW_SLOTS)
        self.evidence = SlidingSums(rules.window_sec, WINDOW_SLOTS)
        self.history: Optional[SlidingSums] = None  # only for a device without peers
        self.fail_slow = False
        self.ratio: Optional[float] = None

    def own_history(self) -> SlidingSums:
        if self.history is None:
            self.history = SlidingSums(HISTORY_SEC, HISTORY_SLOTS)
        return self.history


class FailSlowDetector:
    """Owned by the I/O collector: every judged device's Track, fed once per interval."""

    def __init__(
        self,
        rules: FailSlowRules,
        restore: Optional[Callable[[str, str], Optional[Track]]] = None,
    ) -> None:
        self.rules = rules
        self.tracks: dict[str, Track] = {}
        self._restore = restore  # (device, group) -> its Track from the state file, if any
        self._saved_slot = -1
        # The peers' window per group, rebuilt once per slot: it changes by a slot at a time,
        # and this interval's awaits are in the current table anyway.
        self._windows: dict[str, PeerTable] = {}
        self._windows_slot = -1
        self._members: dict[str, int] = {}
        self._min_active_ms = MIN_ACTIVE_SHARE * rules.window_sec * 1000.0

    def save_due(self, now: float) -> bool:
        """True once per window: time to write the Tracks to the state file. (Every Track
        to JSON costs about as much as judging every device for a few intervals; a restart
        loses at most one window's evidence, never a state: changes are written at once.)"""
        slot = int(now // self.rules.window_sec)
        due, self._saved_slot = slot != self._saved_slot, slot
        return due

    def observe(
        self, now: float, devices: Mapping[str, tuple[str, Mapping[str, FieldValue]]]
    ) -> list[Transition]:
        """One interval: `devices` maps every judged device present to (group, fields).
        Sets each Track's ratio (None: idle or nothing to compare with); returns the
        devices whose fail_slow state changed."""
        tracks = self.tracks
        if tracks.keys() != devices.keys():  # a device came or went (rare): rebuild the map
            tracks = self.tracks = {name: self._track(name, g) for name, (g, _) in devices.items()}
            self._members = {}
        members = self._members  # devices per group: counted again when the map changes
        current: dict[str, PeerTable] = {}
        active: dict[str, tuple[list[Sample], int]] = {}
        for name, (group, fields) in devices.items():
            keys = sample_keys(fields)
            track = tracks[name]
            if track.group != group:  # re-grouped (config or model read anew): start afresh
                track = tracks[name] = self._track(name, group)
                self._members = {}
            if not self._members or group not in members:
                members = self._members = _group_sizes(tracks)
            track.ratio = None
            if keys:
                active[name] = keys, round(fields["interval_sec"] * 1000.0)  # type: ignore[operator]
                table = current.get(group) or current.setdefault(group, PeerTable())
                window = track.window
                for key, count, total_ms in keys:
                    table.add(name, key, total_ms / count)
                    window.add(now, key, (count, total_ms))
        slot = int(now // (self.rules.window_sec / WINDOW_SLOTS))
        if slot != self._windows_slot:
            self._windows, self._windows_slot = {}, slot
        windows = self._windows
        changes = []
        for name, (keys, elapsed_ms) in active.items():
            track = self.tracks[name]
            if members[track.group] > 1:
                verdict = self._peer_vote(name, keys, current[track.group], windows)
            else:
                verdict = self._own_vote(track, keys)
                self._learn(now, track, keys, elapsed_ms, verdict)
            track.ratio = verdict.ratio if verdict is not None and verdict.decided else None
            change = self._judge(now, name, track, elapsed_ms, verdict)
            if change is not None:
                changes.append(change)
        return changes

    def _track(self, name: str, group: str) -> Track:
        track = self.tracks.get(name)
        if track is not None and track.group == group:
            return track
        restored = self._restore(name, group) if self._restore and track is None else None
        return restored or Track(group, self.rules)

    def _peer_vote(
        self,
        name: str,
        keys: list[Sample],
        current: PeerTable,
        windows: dict[str, PeerTable],
    ) -> Optional[Vote]:
        expected = [current.expected(name, key) for key, _, _ in keys]
        if None in expected:  # nobody active at this load now: the peers' window
            group = self.tracks[name].group
            window = windows.get(group) or windows.setdefault(group, self._window_table(group))
            expected = [
                value if value is not None else window.expected(name, key)
                for value, (key, _, _) in zip(expected, keys)
            ]
        return vote(keys, expected, self.rules.ratio, NEAR_FACTOR)

    def _window_table(self, group: str) -> PeerTable:
        table = PeerTable()
        for name, track in self.tracks.items():
            if track.group == group:
                for key, (count, total_ms) in track.window.totals.items():
                    if count >= MIN_IOS:
                        table.add(name, key, total_ms / count)  # type: ignore[arg-type]
        return table

    def _own_vote(self, track: Track, keys: list[Sample]) -> Optional[Vote]:
        if track.history is None:
            return None
        table = PeerTable()
        needed = HISTORY_MIN_ACTIVE_SHARE * self.rules.window_sec * 1000.0
        for key, (count, total_ms, active_ms) in track.history.totals.items():
            if active_ms >= needed:
                table.add("", key, total_ms / count)  # type: ignore[arg-type]
        expected = [table.expected("self", key) for key, _, _ in keys]
        return vote(keys, expected, self.rules.ratio, NEAR_FACTOR)

    def _learn(
        self,
        now: float,
        track: Track,
        keys: list[Sample],
        elapsed_ms: int,
        verdict: Optional[Vote],
    ) -> None:
        """A device without peers learns what normal is, but never from a slow spell, nor
        from an interval the millisecond bound leaves undecided."""
        if track.fail_slow or (verdict is not None and (verdict.slow or not verdict.decided)):
            return
        history = track.own_history()
        for key, count, total_ms in keys:
            history.add(now, key, (count, total_ms, elapsed_ms))

    def _judge(
        self,
        now: float,
        name: str,
        track: Track,
        elapsed_ms: int,
        verdict: Optional[Vote],
    ) -> Optional[Transition]:
        if verdict is None or not verdict.decided:
            return None  # idle, no comparison, or undecided: neither raises nor clears
        track.evidence.add(now, EVIDENCE, (elapsed_ms, 1, int(verdict.slow), int(verdict.near)))
        active_ms, active, slow, near = track.evidence.totals[EVIDENCE]
        if active_ms < self._min_active_ms or active < MIN_OBSERVATIONS:
            return None
        if not track.fail_slow and slow >= ON_SHARE * active:
            track.fail_slow = True
            return Transition(name, track.group, True, slow / active, verdict.ratio)
        if track.fail_slow and near < OFF_SHARE * active:
            track.fail_slow = False
            return Transition(name, track.group, False, near / active, verdict.ratio)
        return None


def _group_sizes(tracks: Mapping[str, Track]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for track in tracks.values():
        sizes[track.group] = sizes.get(track.group, 0) + 1
    return sizes
