"""Many hosts, one database: the write rate diskprobe's InfluxDB senders give after an outage.

Real part: --senders real InfluxDBOutput objects (the sender thread, the spool, the
influxdb-client requests, gzip) in this process, each with an outage's backlog already in its
spool (--backlog-kb in batches of --batch-kb, written before anything is timed), all told at
the same instant that the database is back (the worst case: every host's retry at once). Each
has written a batch every --interval seconds before (its own rate, which the drain follows).
They write to a real VictoriaMetrics (its InfluxDB v2 write API); the rate is read off the
server's own vm_rows_inserted_total every 0.2 s. Once with drain_speedup = 0 (as fast as the
server takes it: the stampede) and once with the default pacing.

Computed part: tests/bench/fleet_drain_model.py replays the sender's schedule with the same
pacing functions, first for --senders hosts (to compare with what was measured), then for
--fleet hosts: the outage's backlog, and the aligned steady state with and without send jitter.

    .venv/bin/python tests/bench/bench_fleet_drain.py [--senders 100] [--fleet 10000] [--quick]
"""

from __future__ import annotations

import argparse
import io
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the shared helpers

from fleet_drain_model import Offered, drain, steady

from diskprobe.config import AgentConfig, OutputConfig
from diskprobe.log import Logger
from diskprobe.outputs.influxdb import InfluxDBOutput
from diskprobe.outputs.pacing import LIVE_WINDOW
from victoria_server import VictoriaMetrics

DEFAULTS = OutputConfig()
_ROWS = re.compile(r'^vm_rows_inserted_total\{type="influx"\} (\d+)', re.M)


def _batch(host: int, number: int, batch_bytes: int) -> bytes:
    """diskprobe_io-like lines, distinct per host and batch, about `batch_bytes` long."""
    lines = []
    stamp = 1_700_000_000_000_000_000 + number * 10_000_000_000
    while sum(map(len, lines)) < batch_bytes:
        device = f"nvme{len(lines) % 8}n1"
        lines.append(f"diskprobe_io,host=h{host:05d},device={device} r_s={number}.5,w_s=3.25,"
                     f"util=41.5,r_await=0.21,w_await=0.05,aqu_sz=0.8 "
                     f"{stamp + len(lines)}\n".encode())  # fmt: skip
    return b"".join(lines)


def _fill_spools(root: Path, senders: int, batches: int, batch_bytes: int) -> None:
    def refused(body: bytes) -> None:
        raise ConnectionRefusedError("the database is down")

    for host in range(senders):
        config = OutputConfig(kind="influxdb", url="http://x", bucket="b",
                              spool_dir=str(root / f"h{host}"))  # fmt: skip
        down = InfluxDBOutput(config, Logger(io.StringIO()), env={}, send=refused, start=False)
        for number in range(batches):
            down.write(_batch(host, number, batch_bytes).decode())
        down.close()


def _rows(vm: VictoriaMetrics) -> int:
    with urllib.request.urlopen(vm.url + "/metrics", timeout=10) as reply:
        match = _ROWS.search(reply.read().decode())
    return int(match.group(1)) if match else 0


def _measure(vm: VictoriaMetrics, root: Path, senders: int, speedup: float, live: tuple[int, float]
             ) -> tuple[list[float], float]:  # fmt: skip
    """Samples per second inserted (VictoriaMetrics' rows: one per field), in 1 s windows
    sampled every 0.2 s, and the seconds until every spool was empty."""
    outputs = []
    for host in range(senders):
        config = OutputConfig(kind="influxdb", url=vm.url, bucket="bench", org="o",
                              spool_dir=str(root / f"h{host}"), drain_speedup=speedup)  # fmt: skip
        output = InfluxDBOutput(config, Logger(io.StringIO()), env={"INFLUX_TOKEN": "t"})
        batch_bytes, interval = live
        for number in range(LIVE_WINDOW):  # its batches during the outage told its rate
            output.live.add(time.monotonic() - (LIVE_WINDOW - number) * interval, batch_bytes)
        outputs.append(output)
    start_rows, started = _rows(vm), time.monotonic()
    for output in outputs:  # the database is back: every host's next try at once
        output.write(_batch(99_999, 0, 100).decode())
    samples, elapsed = [(0.0, 0)], 0.0
    while time.monotonic() - started < 600 and (
        not elapsed or samples[-1][0] < elapsed + 1.2  # the last requests' rows, then stop
    ):
        time.sleep(0.2)
        samples.append((time.monotonic() - started, _rows(vm) - start_rows))
        if not elapsed and not any(output.pending_batches() for output in outputs):
            elapsed = samples[-1][0]
    for output in outputs:
        output.close()
    windows = [(samples[i + 5][1] - samples[i][1]) / (samples[i + 5][0] - samples[i][0])
               for i in range(len(samples) - 5)]  # fmt: skip
    return windows or [samples[-1][1] / max(elapsed, 0.2)], elapsed


def _rate(bytes_per_second: float, samples_per_byte: float) -> str:
    samples = bytes_per_second * samples_per_byte
    return f"{samples:,.0f} samples/s ({bytes_per_second / 1e6:,.2f} MB/s)"


def _model_line(label: str, offered: Offered, samples_per_byte: float) -> str:
    mean = statistics.fmean(offered.bytes_per_second) if offered.bytes_per_second else 0
    peak = offered.peak_bytes_per_second
    return (f"  {label}: peak {_rate(peak, samples_per_byte)}, "
            f"mean {_rate(mean, samples_per_byte)}, "
            f"peak {offered.peak_requests_per_second:,} requests/s, "
            f"last byte after {offered.seconds} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senders", type=int, default=100)
    parser.add_argument("--fleet", type=int, default=10_000)
    parser.add_argument("--backlog-kb", type=int, default=512)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between batches")
    parser.add_argument("--batch-kb", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="5 senders, small backlogs")
    args = parser.parse_args()
    if args.quick:
        args.senders, args.fleet, args.backlog_kb = 5, 200, 128
    batch, batches = args.batch_kb * 1024, args.backlog_kb // args.batch_kb
    lines = sum(_batch(0, n, batch).count(b"\n") for n in range(batches))
    print(f"{args.senders} real senders, {batches} batches of {args.batch_kb} KB each "
          f"({lines:,} lines, {lines * 6:,} samples); "
          f"one every {args.interval:g} s; drain_speedup default {DEFAULTS.drain_speedup:g}, "
          f"send_jitter default {DEFAULTS.send_jitter:g} s")  # fmt: skip
    per_byte = lines * 6 / (batches * batch)
    for speedup in (0.0, DEFAULTS.drain_speedup):
        with tempfile.TemporaryDirectory(prefix="fleet-drain-") as temp:
            root = Path(temp)
            _fill_spools(root, args.senders, batches, batch)
            vm = VictoriaMetrics(root)
            vm.start()
            try:
                windows, elapsed = _measure(vm, root, args.senders, speedup,
                                            (batch, args.interval))  # fmt: skip
            finally:
                vm.stop()
        print(f"measured, drain_speedup={speedup:g}: peak {max(windows):,.0f} samples/s, median "
              f"{statistics.median(windows):,.0f} samples/s over 1 s windows; drained in "
              f"{elapsed:.1f} s")  # fmt: skip
        model = drain(args.senders, batches * batch, batch, args.interval, speedup,
                      DEFAULTS.send_jitter, 0.0)  # fmt: skip
        print(_model_line(f"model, {args.senders} hosts", model, per_byte))
    backlog = batches * batch
    interval = AgentConfig().interval  # the fleet collects at diskprobe's default
    live = args.fleet * batch / interval
    print(f"  the fleet's own load: {_rate(live, per_byte)}")
    for speedup in (0.0, DEFAULTS.drain_speedup):
        for spread in (0.0, 36.0):
            model = drain(args.fleet, backlog, batch, interval, speedup,
                          DEFAULTS.send_jitter, spread)  # fmt: skip
            print(_model_line(f"model, {args.fleet:,} hosts back at once within {spread:g} s, "
                              f"drain_speedup={speedup:g}", model, per_byte))  # fmt: skip
    for jitter in (0.0, DEFAULTS.send_jitter):
        model = steady(args.fleet, batch, interval, jitter)
        print(_model_line(f"model, {args.fleet:,} hosts steady, interval {interval:g} s, "
                          f"send_jitter={jitter:g}", model, per_byte))  # fmt: skip


if __name__ == "__main__":
    main()
