#!/usr/bin/env python3
"""Storage per host per year on InfluxDB 1.6, raw vs downsampled, measured.

Back-fills one representative host (8 block devices, 6 mounts, 8 SMART drives, pressure and
5 collectors' agent points) at diskprobe's default intervals (10 s; SMART every 30 min) for
`--hours`, through diskprobe's own serializer, into a real influxd whose cache is written to
TSM and fully compacted a second after the last write. Then it runs every shipped continuous
query's SELECT ... INTO over the period, waits until the shard sizes settle, and prints the
bytes on disk per retention policy (du of data/<db>/<rp>) and their extrapolation to a year:
raw kept a year, and the shipped setup (14 days raw + a year downsampled).

Values: rates mostly zero with bursts, rounded as diskprobe rounds them, counters that grow:
closer to an idle-to-busy host than uniform noise (which would compress worse).

    .venv/bin/python tests/bench/bench_downsampling_storage.py            # a day, a few min
    .venv/bin/python tests/bench/bench_downsampling_storage.py --quick    # an hour
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS), str(TESTS.parent / "dashboards")]

from dashgen import downsample  # noqa: E402

from diskprobe.metric import Metric  # noqa: E402
from diskprobe.schema import COUNTER, measurement  # noqa: E402
from diskprobe.serializers.influx import InfluxSerializer  # noqa: E402
from downsampling_server import COMPACT_SOON, ConfiguredInfluxServer  # noqa: E402

from influxdb_server import find_influxd  # noqa: E402

DB = "telegraf"
SEC = 10**9
BATCH = 5000
# measurement -> (series tag sets, interval s)
HOST = {
    "diskprobe_io": (tuple({"device": f"nvme{i}n1", "model": "SAMSUNG MZQL23T8", "serial": f"S{i}"}
                           for i in range(8)), 10),
    "diskprobe_fs": (tuple({"path": p, "device": "nvme0n1p1", "fstype": "ext4", "mode": "rw"}
                           for p in ("/", "/boot", "/var", "/data", "/scratch", "/home")), 10),
    "diskprobe_smart": (tuple({"device": f"nvme{i}", "model": "SAMSUNG MZQL23T8",
                               "serial": f"S{i}", "protocol": "NVMe", "media": "nvme"}
                              for i in range(8)), 1800),
    "diskprobe_pressure": (({},), 10),
    "diskprobe_agent": (tuple({"collector": c, "version": "1.0"}
                              for c in ("io", "fs", "smart", "pressure", "process_io")), 10),
}


def _fields(name: str, rng: random.Random, totals: dict[str, int]) -> dict[str, object]:
    fields: dict[str, object] = {}
    busy = rng.random() < 0.3
    for spec in measurement(name).fields:
        if spec.type == "bool":
            fields[spec.name] = spec.name == "responsive" or (spec.name == "health_ok")
        elif spec.type == "str":
            fields[spec.name] = "ok" if spec.name.startswith("verdict") else "active"
        elif spec.kind == COUNTER:
            totals[spec.name] = totals.get(spec.name, 0) + (rng.randint(0, 5000) if busy else 0)
            fields[spec.name] = totals[spec.name]
        elif spec.type == "int":
            fields[spec.name] = rng.randint(0, 40) if busy else 0
        else:
            fields[spec.name] = round(rng.uniform(0, 500), 2) if busy else 0.0
    return fields


def host_lines(start_ns: int, hours: float, seed: int = 1) -> list[list[bytes]]:
    """Line protocol batches of the host, oldest first."""
    rng, serializer = random.Random(seed), InfluxSerializer()
    metrics: list[Metric] = []
    for name, (series, every) in HOST.items():
        for tags in series:
            totals: dict[str, int] = {}
            for step in range(int(hours * 3600 // every)):
                metrics.append(Metric(name, {**tags, "host": "node01"},
                                      _fields(name, rng, totals),  # type: ignore[arg-type]
                                      start_ns + step * every * SEC))
    metrics.sort(key=lambda m: m.time_ns)
    return [[serializer.serialize(metrics[i:i + BATCH]).encode()]
            for i in range(0, len(metrics), BATCH)]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def settled(root: Path, wait_s: float) -> dict[str, int]:
    """Bytes per retention policy once two readings a few seconds apart agree."""
    previous: dict[str, int] = {}
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(3.0)
        sizes = {rp.name: du(rp) for rp in (root / DB).iterdir() if rp.is_dir()}
        if sizes == previous:
            return sizes
        previous = sizes
    return previous


def hours_to_fill(description: str, argv: list[str] | None) -> float:
    """The storage benchmarks' one option: --hours of one host to back-fill (--quick: one)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--quick", action="store_true", help="one hour")
    args = parser.parse_args(argv)
    return 1.0 if args.quick else float(args.hours)


def print_per_host(raw_day: float, low_day: float, raw_days: int, setup: str) -> None:
    """Bytes a host stores a day raw and downsampled, and a year: raw only, or as `setup`
    keeps it (raw for `raw_days`, downsampled for a year)."""
    print(f"per host per day: raw {raw_day / 1e6:.3f} MB, downsampled {low_day / 1e6:.3f} MB "
          f"({raw_day / max(low_day, 1):.0f}x smaller)")
    print(f"per host per year: raw kept a year {raw_day * 365 / 1e9:.3f} GB; {setup} "
          f"({raw_days} d raw + 365 d downsampled) "
          f"{(raw_day * raw_days + low_day * 365) / 1e9:.3f} GB")


def main(argv: list[str] | None = None) -> int:
    hours = hours_to_fill(__doc__.splitlines()[0], argv)
    influxd = find_influxd()
    if influxd is None:
        print("influxd not found", file=sys.stderr)
        return 1
    day_ns = 86400 * SEC
    end_ns = time.time_ns() // day_ns * day_ns  # midnight: downsampled windows are whole
    start_ns = end_ns - int(hours * 3600) * SEC
    with ConfiguredInfluxServer(influxd, COMPACT_SOON) as server:
        server.create_database(DB)
        for statement in downsample.statements(DB):
            server.query(DB, statement)
        batches = host_lines(start_ns, hours)
        lines = 0
        for (body,) in batches:
            status, text = server.write(DB, body)
            assert status == 204, text
            lines += body.count(b"\n")
        # A day at a time: one SELECT ... INTO over days of I/O outlasts an HTTP timeout.
        for day in range(start_ns // day_ns * day_ns, end_ns, day_ns):
            span = f"time >= {day} AND time < {day + day_ns}"
            for query in downsample.continuous_queries():
                server.query(DB, query.select(DB, span))
        sizes = settled(Path(server.data_dir), wait_s=120.0)
    _report(hours, lines, sizes)
    return 0


def _report(hours: float, lines: int, sizes: dict[str, int]) -> None:
    raw, low = sizes.get(downsample.RAW_RP, 0), sizes.get(downsample.LONG_RP, 0)
    per_day = 24 / hours
    raw_days = int(downsample.RAW_DURATION.rstrip("d"))
    print(f"host: {sum(len(s) for s, _ in HOST.values())} series groups, {hours:g} h back-filled,"
          f" {lines} raw lines")
    print(f"on disk after compaction: raw ({downsample.RAW_RP}) {raw / 1e6:.2f} MB, "
          f"downsampled ({downsample.LONG_RP}) {low / 1e6:.3f} MB")
    print_per_host(raw * per_day, low * per_day, raw_days, "shipped setup")


if __name__ == "__main__":
    sys.exit(main())
