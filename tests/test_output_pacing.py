"""output kind = "influxdb" in a fleet: the send jitter and the paced drain (issue 28, part 4).

The pacing's arithmetic on seeded draws; the real sender (InfluxDBOutput, its thread) draining
a spooled backlog in paced requests with a pause drawn between each; and the
installed `diskprobe` with an hour of send jitter, which must still send at once on --once and
on SIGTERM. tests/bench/bench_fleet_drain.py measures the write rate this gives.
"""

from __future__ import annotations

import io
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from diskprobe.config import OutputConfig
from diskprobe.log import Logger
from diskprobe.outputs.influxdb import REQUEST_MAX_BYTES, InfluxDBOutput
from diskprobe.outputs.pacing import (
    DRAIN_JITTER,
    LIVE_WINDOW,
    MIN_DRAIN_RATE,
    LiveRate,
    drain_pause,
    drain_rate,
    request_bytes,
    send_delay,
)
from test_outputs_cli import _diskprobe, _run, _write_config

WriteAPI = tuple[str, list[tuple[str, bytes]]]
BATCH_BYTES = 1000


def test_send_delays_spread_over_the_jitter_and_drain_pauses_keep_the_rate() -> None:
    draw = random.Random(28).uniform
    delays = [send_delay(5.0, draw) for _ in range(10_000)]
    assert 0.0 <= min(delays) < 0.01 and 4.99 < max(delays) <= 5.0
    assert send_delay(0.0, draw) == 0.0
    # 10,000 hosts at 5 s of jitter: about 1,000 in each half second, none near 10,000
    per_slot = [sum(1 for d in delays if k * 0.5 <= d < (k + 1) * 0.5) for k in range(10)]
    assert max(per_slot) < 1_150 and min(per_slot) > 850
    pauses = [drain_pause(65536, 65536, draw) for _ in range(10_000)]
    assert DRAIN_JITTER[0] <= min(pauses) and max(pauses) <= DRAIN_JITTER[1]
    assert abs(sum(pauses) / len(pauses) - 1.0) < 0.02  # on average drain_rate bytes a second
    assert drain_pause(4096, 0, draw) == 0.0
    assert request_bytes(65536, REQUEST_MAX_BYTES) == 65536
    assert request_bytes(0, REQUEST_MAX_BYTES) == REQUEST_MAX_BYTES
    assert request_bytes(2.0**40, REQUEST_MAX_BYTES) == REQUEST_MAX_BYTES
    assert request_bytes(0.25, REQUEST_MAX_BYTES) == 1  # never a request of nothing


def test_the_drain_rate_follows_the_hosts_own_rate() -> None:
    live = LiveRate()
    assert live.bytes_per_second() == 0.0
    live.add(100.0, 5_000)
    assert live.bytes_per_second() == 0.0  # one batch tells no rate
    assert drain_rate(live.bytes_per_second(), 4.0) == MIN_DRAIN_RATE
    for second in range(1, 30):  # 20,000 bytes every 10 s: 2,000 bytes/s
        live.add(100.0 + 10 * second, 20_000)
    assert live.bytes_per_second() == 2_000.0
    assert drain_rate(live.bytes_per_second(), 4.0) == 8_000.0
    assert drain_rate(live.bytes_per_second(), 0.0) == 0.0  # no limit
    live.add(400.0, 20_000 + 10 * 2_000 * LIVE_WINDOW)  # a burst moves it, within the window
    assert live.bytes_per_second() > 2_000.0
    same_instant = LiveRate()
    same_instant.add(5.0, 1)
    same_instant.add(5.0, 1)
    assert same_instant.bytes_per_second() == 0.0  # no division by zero


class Recorder:
    """A server that takes every body, and a draw that records what was drawn (then 1 % of
    the lowest value, so that the test's pauses are short)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.draws: list[tuple[float, float]] = []
        self.events: list[str] = []

    def send(self, body: bytes) -> None:
        self.bodies.append(body)
        self.events.append("send")

    def draw(self, low: float, high: float) -> float:
        self.draws.append((low, high))
        self.events.append(f"draw{low:g}-{high:g}")
        return low + (high - low) * 0.01


def _batch(number: int) -> bytes:
    line = f"diskprobe_io,host=h,device=d{number:03d} util=1 {number}\n".encode()
    return line * (BATCH_BYTES // len(line))


def _settings(tmp_path: Path, **config: object) -> OutputConfig:
    """The output both sides of an outage use: the same spool."""
    return OutputConfig(kind="influxdb", url="http://x", bucket="b",
                        spool_dir=str(tmp_path / "spool"), **config)  # type: ignore[arg-type]  # fmt: skip


def _spooled_output(tmp_path: Path, recorder: Recorder, batches: int) -> None:
    """An outage's backlog: `batches` batches left in the spool by a closed output."""
    settings = _settings(tmp_path)
    down = InfluxDBOutput(settings, Logger(io.StringIO()), env={}, send=recorder.send,
                          start=False)  # fmt: skip
    for number in range(batches):
        down.write(_batch(number).decode())
    down.close()


def _drain(tmp_path: Path, recorder: Recorder, **config: object) -> InfluxDBOutput:
    settings = _settings(tmp_path, **config)
    output = InfluxDBOutput(settings, Logger(io.StringIO()), env={}, send=recorder.send,
                            draw=recorder.draw)  # fmt: skip
    output.write(_batch(999).decode())  # the first collection after the outage wakes it
    deadline = time.monotonic() + 30
    while len(output.spool) and time.monotonic() < deadline:
        time.sleep(0.05)
    return output


def _after_an_outage(tmp_path: Path, batches: int, **config: object) -> Recorder:
    """What an output sent: `batches` left in its spool by an outage, then drained and closed."""
    recorder = Recorder()
    _spooled_output(tmp_path, recorder, batches)
    _drain(tmp_path, recorder, **config).close()
    return recorder


def test_a_backlog_drains_in_paced_requests_with_a_pause_after_each(
    tmp_path: Path,
) -> None:
    recorder = _after_an_outage(tmp_path, 40, drain_speedup=4.0, send_jitter=2.0)
    sent = b"".join(recorder.bodies)
    assert sent == b"".join(_batch(n) for n in [*range(40), 999])  # all, in order, once
    # one write since start tells no rate yet: MIN_DRAIN_RATE, 4,096 bytes a request
    assert all(len(body) <= MIN_DRAIN_RATE for body in recorder.bodies)
    assert len(recorder.bodies) == 11  # 41 batches of 1000 bytes, 4 to a request
    # one send jitter, then a drain pause between requests while a backlog remains
    assert recorder.draws[0] == (0.0, 2.0)
    assert recorder.draws[1:].count(DRAIN_JITTER) == len(recorder.bodies) - 1
    last_send = max(i for i, event in enumerate(recorder.events) if event == "send")
    assert "draw0.5-1.5" not in recorder.events[last_send:]  # no pause once the spool is empty


def test_drain_speedup_0_sends_the_backlog_as_fast_as_the_server_takes_it(
    tmp_path: Path,
) -> None:
    recorder = _after_an_outage(tmp_path, 40, drain_speedup=0.0, send_jitter=0.0)
    assert len(recorder.bodies) == 1 and recorder.bodies[0].count(b"\n") > 40
    assert DRAIN_JITTER not in recorder.draws


def test_once_with_an_hour_of_send_jitter_still_sends_before_exit(
    tmp_path: Path, write_api: WriteAPI
) -> None:
    url, bodies = write_api
    result = _run(tmp_path, kind="influxdb", url=url, bucket="b", send_jitter="1h",
                  spool_dir=str(tmp_path / "spool"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(bodies) == 1 and b"diskprobe_io," in bodies[0][1]


def test_sigterm_during_the_send_jitter_sends_what_waited(
    tmp_path: Path, write_api: WriteAPI
) -> None:
    """Five collections wait out an hour of jitter; at SIGTERM all of them go in one request,
    although a paced drain's request (drain_speedup 0.5) would carry about one."""
    url, bodies = write_api
    config = _write_config(tmp_path, 'interval = "200ms"\n',
                           {"kind": "influxdb", "url": url, "bucket": "b", "send_jitter": "1h",
                            "drain_speedup": 0.5, "spool_dir": str(tmp_path / "spool")})  # type: ignore[dict-item]  # fmt: skip
    process = subprocess.Popen([*_diskprobe(), "--config", str(config)], text=True,
                               stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(process.stderr or []), daemon=True)
    reader.start()
    spool = tmp_path / "spool"
    deadline = time.monotonic() + 30
    while len(list(spool.glob("*.lp"))) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    held = [path.read_bytes() for path in sorted(spool.glob("*.lp"))]
    assert len(held) >= 5 and not bodies, "sent before the jitter ended"
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0, "".join(stderr)
    assert len(bodies) == 1 and all(batch in bodies[0][1] for batch in held)


@pytest.mark.parametrize("value", ['"-1s"', '"soon"', '"2h"', "true"])
def test_a_bad_send_jitter_is_one_error_line(tmp_path: Path, value: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(f'[output]\nkind = "influxdb"\nurl = "http://x"\nbucket = "b"\n'
                      f'spool_dir = "{tmp_path / "spool"}"\nsend_jitter = {value}\n')  # fmt: skip
    result = subprocess.run([*_diskprobe(), "--config", str(config), "--once"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode != 0 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("E! ") and "send_jitter" in lines[0]
