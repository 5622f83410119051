"""The runtime: agent metrics, a failing collector isolated, schedules and alignment."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest

from diskprobe import __version__
from diskprobe.collectors.base import Collection
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.outputs.stdout import StreamOutput
from diskprobe.outputs.textfile import TextfileOutput
from diskprobe.runtime import GATHER, STOP, Runtime, next_aligned, watch_stdin
from diskprobe.serializers.influx import InfluxSerializer

from helpers import assert_schema
from lineproto import parse_lines


class Counting:
    def __init__(self, name: str, interval: float | None = None, fail: bool = False) -> None:
        self.name, self.interval, self.fail, self.calls = name, interval, fail, 0
        self.needs_prime = True

    def close(self) -> None:
        pass

    def collect(self) -> Collection:
        self.calls += 1
        if self.fail:
            raise RuntimeError("disk on fire")
        metric = Metric("diskprobe_io", {"device": self.name}, {"reads_per_sec": 1.0}, 1)
        return Collection(metrics=[metric], items=1)


class _BytesOutput:
    """StreamOutput's contract (UTF-8 bytes, one write per batch) on an in-memory buffer."""

    def __init__(self, out: io.BytesIO) -> None:
        self._out = out

    def write(self, text: str) -> None:
        self._out.write(text.encode("utf-8"))

    def close(self) -> None:
        pass


def _runtime(
    collectors: list[Counting], wall: list[float]
) -> tuple[Runtime, io.BytesIO, io.StringIO]:
    out, err = io.BytesIO(), io.StringIO()
    output = _BytesOutput(out)
    runtime = Runtime(
        collectors, InfluxSerializer(), output, Logger(err), 10.0, wall=lambda: wall[0]
    )
    return runtime, out, err


def test_failing_collector_is_logged_and_the_others_still_report() -> None:
    good, bad = Counting("good"), Counting("bad", fail=True)
    runtime, out, err = _runtime([bad, good], [100.0])
    metrics = runtime.gather()
    runtime.emit(metrics)
    assert err.getvalue() == "E! collector bad: RuntimeError: disk on fire\n"
    points = parse_lines(out.getvalue().decode())
    agent = {p.tags["collector"]: p for p in points if p.measurement == "diskprobe_agent"}
    assert agent["bad"].fields["errors"] == 1 and agent["good"].fields["errors"] == 0
    assert agent["good"].fields["items"] == 1 and agent["good"].tags["version"] == __version__
    assert [p.tags["device"] for p in points if p.measurement == "diskprobe_io"] == ["good"]
    assert_schema(metrics)


def test_collectors_with_their_own_interval_run_only_when_due() -> None:
    fast, slow = Counting("fast"), Counting("slow", interval=60.0)
    wall = [1000.0]
    runtime, _, _ = _runtime([fast, slow], wall)
    assert runtime.tick == 10.0
    for now in (1000.0, 1010.0, 1020.0, 1030.0, 1040.0, 1050.0, 1060.0):
        wall[0] = now
        runtime.gather(due_only=True)
    assert fast.calls == 7 and slow.calls == 2  # at 1000 and at the 1060 boundary


@pytest.mark.parametrize(
    ("now", "interval", "expected"),
    [(1003.2, 10.0, 1010.0), (1010.0, 10.0, 1020.0), (59.9, 60.0, 60.0), (0.2, 0.5, 0.5)],
)
def test_next_aligned(now: float, interval: float, expected: float) -> None:
    assert next_aligned(now, interval) == pytest.approx(expected)


def test_stdin_lines_gather_and_eof_stops() -> None:
    read_fd, write_fd = os.pipe()
    reader = open(read_fd, encoding="utf-8")  # noqa: SIM115 - owned by the watcher thread
    runtime, _, _ = _runtime([Counting("io")], [0.0])
    thread: threading.Thread = watch_stdin(reader, runtime.events)
    with open(write_fd, "w", encoding="utf-8") as writer:
        writer.write("\n\n")
    thread.join(timeout=5)
    assert [runtime.events.get_nowait() for _ in range(3)] == [GATHER, GATHER, STOP]


def test_textfile_output_replaces_the_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "diskprobe.prom"
    output = TextfileOutput(str(target))
    output.write("a 1\n")
    output.write("b 2\n")
    assert target.read_text() == "b 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diskprobe.prom"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"


def test_stream_output_writes_every_byte_to_a_descriptor() -> None:
    read_fd, write_fd = os.pipe()
    batch = "".join(f"m,i={i} v={i}i {i}\n" for i in range(2000))  # several PIPE_BUF chunks
    with open(read_fd, "rb") as reader:
        writer = threading.Thread(target=StreamOutput(write_fd).write, args=(batch,))
        writer.start()
        received = reader.read(len(batch))
        writer.join(5)
    os.close(write_fd)
    assert received.decode() == batch
