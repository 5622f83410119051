"""Memory over days (issue #11 item 17): what is kept per name stays bounded when names churn,
and cyclic garbage is collected while the loop runs. The whole process is measured by
tests/bench/bench_soak.py (>= 100,000 cycles); these are the pure-logic regressions.
"""

from __future__ import annotations

import gc
import io
import weakref
from pathlib import Path

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.filesystems import FilesystemsCollector
from diskprobe.collectors.io import IoCollector
from diskprobe.config import FilesystemsConfig, IoConfig
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.serializers.influx import InfluxSerializer
from diskprobe.sources.statfs import StatfsProber, ThreadStatfs
from diskprobe.state import StateStore

from faultlib import DISKSTATS, FakeHost

CHURN = 2_000  # names that come and go: loop devices, pods, processes


def test_once_only_keys_are_bounded() -> None:
    """Keys carry device names and problems: 10,000 distinct ones must not all be kept."""
    stream = io.StringIO()
    log = Logger(stream)
    for n in range(10_000):
        log.warn_once(f"smart-problem:/dev/loop{n}", f"problem {n}")
    assert len(log._seen) <= 4096
    assert stream.getvalue().count("W! ") == 10_000
    log.warn_once("smart-problem:/dev/loop9999", "again")  # recent keys still stay quiet
    assert stream.getvalue().count("W! ") == 10_000


def test_excluded_devices_that_churn_are_forgotten(fake_host: FakeHost) -> None:
    """loop* is excluded by default, so its names never reach the info cache; the name
    selection cache must still forget them when they are gone."""
    roots = HostRoots(proc=str(fake_host.proc), sys=str(fake_host.sys), run=str(fake_host.root))
    clock = iter(float(n) for n in range(10 * CHURN))
    context = CollectorContext(roots, Logger(io.StringIO()), clock=Clock(lambda: next(clock)))
    collector = IoCollector(IoConfig(), context)
    for n in range(CHURN):
        loop = f"   7 {n % 256:7d} loop{n} 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        fake_host.write("proc/diskstats", DISKSTATS + loop)
        collector.collect()
    assert len(collector._selected) < 200


def test_influx_head_cache_stays_near_the_live_set() -> None:
    """One new tag set per batch (a new pid, pod or device each time): the cache of escaped
    heads is cleared at a few times the largest batch, not at 50,000 dead entries."""
    serializer = InfluxSerializer()
    for n in range(20_000):
        metric = Metric("diskprobe_process_io", {"process": f"job{n}"}, {"pid": n}, 1)
        assert serializer.serialize([metric]).startswith(f"diskprobe_process_io,process=job{n} ")
    assert len(serializer._heads) <= 4097


class _Node:
    """An object in a reference cycle: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


def test_cyclic_garbage_is_collected_while_running() -> None:
    """After cli's start-up gc tuning, cyclic garbage made by the loop is collected without
    anyone calling gc.collect(): a 50,000 gen-0 threshold let it pile up for hours."""
    from diskprobe.cli import freeze_startup_objects

    threshold = gc.get_threshold()
    gc.collect()
    try:
        freeze_startup_objects()
        freed: list[int] = []
        for n in range(3_000):
            weakref.finalize(_Node(), freed.append, n)
        # A loop's steady state: about as much allocated as freed, a few objects kept.
        kept = [[n] for n in range(1_000)]
        assert len(freed) >= 2_000, f"{len(freed)} of 3,000 cycles freed"
        del kept
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        gc.collect()


def test_failing_mounts_that_churn_are_forgotten(fake_host: FakeHost, tmp_path: Path) -> None:
    """A pod's volume that fails (ENOENT here) and then leaves mountinfo must not stay in the
    collector's failure notes for the life of the process."""
    roots = HostRoots(proc=str(fake_host.proc), sys=str(fake_host.sys), run=str(fake_host.root))
    log = Logger(io.StringIO())
    context = CollectorContext(roots, log, StateStore.in_memory(log))
    collector = FilesystemsCollector(
        FilesystemsConfig(), context, prober=StatfsProber(5.0, ThreadStatfs())
    )
    try:
        for n in range(CHURN // 10):
            gone = tmp_path / f"pod{n}"  # never created: statfs fails with ENOENT
            fake_host.write("proc/1/mountinfo", f"{30 + n} 1 0:{60 + n} / {gone} rw - ext4 x rw\n")
            collector.collect()
    finally:
        collector.close()
    assert len(collector._failing) <= 1
    assert len(collector._prober._pending) <= 1


def test_forecast_fits_of_mounts_that_churn_are_forgotten(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    """Pods' volumes that answer, then leave mountinfo: each had a forecast window and its
    incremental fit. The windows stay for forecast_window (a remount resumes them); the
    fits (a deque and moments each) must not pile up with them."""
    roots = HostRoots(proc=str(fake_host.proc), sys=str(fake_host.sys), run=str(fake_host.root))
    log = Logger(io.StringIO())
    now = [1000.0]
    clock = Clock(monotonic=lambda: now[0], wall_ns=lambda: int(now[0] * 1e9))
    context = CollectorContext(roots, log, StateStore.in_memory(log), clock)
    collector = FilesystemsCollector(
        FilesystemsConfig(ignore_fs=[]), context, prober=StatfsProber(5.0, ThreadStatfs())
    )
    try:
        for n in range(CHURN // 10):
            volume = tmp_path / f"pod{n}"
            volume.mkdir()
            line = f"{30 + n} 1 0:{60 + n} / {volume} rw - ext4 x rw\n"
            fake_host.write("proc/1/mountinfo", line)
            now[0] += 10.0
            assert collector.collect().metrics
    finally:
        collector.close()
    assert len(collector._windows) == CHURN // 10  # kept: within the 6 h window
    assert len(collector._tracks) <= 2 * 1 + 16
