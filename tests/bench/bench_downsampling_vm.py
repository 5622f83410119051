#!/usr/bin/env python3
"""Storage per host per year on VictoriaMetrics, raw vs downsampled by the shipped recording
rules, measured.

The same representative host as bench_downsampling_storage.py (InfluxDB): 8 NVMe devices,
6 mounts, 8 SMART drives, pressure and 5 collectors' agent points, at diskprobe's default
intervals (10 s; SMART every 30 min), as diskprobe's own line protocol, back-filled for
`--hours` up to last midnight into a raw VictoriaMetrics (-retentionPeriod=15d). vmalert
replays dashboards/prometheus/diskprobe-recording-influx.yaml over the period into a
long-term VictoriaMetrics (-retentionPeriod=1y). Both get force_flush and force_merge, and
the bytes are du of each -storageDataPath, less the same store's size when empty (its
fixed overhead), extrapolated to a year.

    .venv/bin/python tests/bench/bench_downsampling_vm.py            # a day, about a minute
    .venv/bin/python tests/bench/bench_downsampling_vm.py --quick    # an hour
"""

from __future__ import annotations

import sys
import tempfile
import time
import urllib.request
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS), str(TESTS.parent / "dashboards")]

from bench.bench_downsampling_storage import (  # noqa: E402
    HOST,
    host_lines,
    hours_to_fill,
    print_per_host,
)
from prometheus_rules_vm import RULES, Store, replay  # noqa: E402

RAW_DAYS, RECORDING = 15, RULES / "diskprobe-recording-influx.yaml"
SEC = 10**9


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def compacted(store: Store, wait_s: float = 60.0) -> int:
    """Bytes under the store's data path after a flush and a full merge, once two readings
    a second apart agree."""
    store.flush()
    urllib.request.urlopen(store.url + "/internal/force_merge", timeout=60).read()
    previous, deadline = -1, time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(1.0)
        size = du(store.root / "data")
        if size == previous:
            return size
        previous = size
    return previous


def measure(root: Path, hours: float) -> dict[str, float]:
    day_ns = 86400 * SEC
    end_ns = time.time_ns() // day_ns * day_ns  # midnight: the daily group's window is whole
    start_ns = end_ns - int(hours * 3600) * SEC
    raw, long_term = Store(root / "raw", f"{RAW_DAYS}d"), Store(root / "long", "1y")
    raw.start()
    long_term.start()
    try:
        empty = compacted(long_term)
        lines = sent = 0
        for (body,) in host_lines(start_ns, hours):
            sent += raw.post(body.decode())
            lines += body.count(b"\n")
        raw.settled('{__name__="diskprobe_agent_duration_ms"}')
        began = time.monotonic()
        replay([RECORDING], raw, long_term, start_ns / SEC, end_ns / SEC, root / "vmalert.log")
        replay_s = time.monotonic() - began
        series = len(long_term.settled('{__name__=~"diskprobe_.*:.*"}'))
        return {"lines": lines, "sent": sent, "raw": compacted(raw) - empty,
                "low": compacted(long_term) - empty, "empty": empty, "series": series,
                "replay_s": replay_s}
    finally:
        raw.stop()
        long_term.stop()


def report(hours: float, m: dict[str, float]) -> None:
    per_day = 24 / hours
    raw_day, low_day = m["raw"] * per_day, m["low"] * per_day
    print(f"host: {sum(len(s) for s, _ in HOST.values())} tag sets, {hours:g} h back-filled, "
          f"{m['lines']:.0f} lines ({m['sent'] / 1e6:.2f} MB of line protocol)")
    print(f"vmalert replay of {RECORDING.name}: {m['series']:.0f} recorded series in "
          f"{m['replay_s']:.1f} s")
    print(f"on disk after force_merge, less an empty store ({m['empty'] / 1e3:.0f} kB): "
          f"raw {m['raw'] / 1e6:.3f} MB, downsampled {m['low'] / 1e6:.3f} MB")
    print_per_host(raw_day, low_day, RAW_DAYS, "two stores")


def main(argv: list[str] | None = None) -> int:
    hours = hours_to_fill(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory(prefix="bench-vm-") as tmp:
        report(hours, measure(Path(tmp), hours))
    return 0


if __name__ == "__main__":
    sys.exit(main())
