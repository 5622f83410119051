"""Signals and stop requests (issue #11, items 7 and 10): no signal Telegraf's execd or systemd
sends loses the state file's points, and a stop is served at the end of the batch in progress
even when batches take longer than the interval or stdin lines are queued up.

What is counted is batches, never seconds (exit latency: tests/bench/bench_stop.py): the bugs
these tests catch ran on for ever (a stop never seen) or for thousands of batches (every queued
line served first).
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from stoplib import (
    Probe,
    assert_same_window,
    expected_points,
    forecast_points,
    many_devices,
    write_config,
)

from diskprobe.collectors.base import Collection
from diskprobe.log import Logger
from diskprobe.runtime import STOP, Runtime
from diskprobe.serializers.influx import InfluxSerializer

from ci import HANG_GUARD_SEC
from faultlib import FakeHost, wait_for

FS = "diskprobe_fs,"
BATCH = "diskprobe_agent,collector=io,"  # one per batch (io runs in every one)
# Batches whose io line the test sees after a stop signal: the one in progress, and one already
# written but still in the pipe or the test's reader (a pipe holds 64 KiB, less than one batch
# of these hosts, so never two). The handler runs in the main thread, between two bytecodes.
AFTER_SIGNAL_MAX = 2
# After EOF: the stdin thread has to be scheduled and take the GIL to see it, and the loop
# runs on until then; a generous count for a loaded machine, far below the bugs' (unbounded,
# or one per queued line).
AFTER_EOF_MAX = 100


def stop_counting(probe: Probe, how: str, reap: list[subprocess.Popen[bytes]]) -> int:
    """Ask `probe` to stop (a signal's name, or "EOF"); assert it exits 0 within the batches
    allowed; return how many batches the test saw after asking."""
    reap.append(probe.process)  # killed at the end if the stop is never served
    most = AFTER_EOF_MAX if how == "EOF" else AFTER_SIGNAL_MAX
    before = probe.count(BATCH)
    if how == "EOF":
        assert probe.process.stdin is not None
        probe.process.stdin.close()
    else:
        probe.process.send_signal(getattr(signal, how))

    def over() -> bool:
        return probe.count(BATCH) - before > most

    # Ends at the exit, or as soon as the loop has run on past the count (the bug: for ever).
    wait_for(lambda: probe.process.poll() is not None or over(), HANG_GUARD_SEC)
    assert probe.process.poll() is not None, (
        f"{how}: still running, {probe.count(BATCH) - before} batches after the stop request"
    )
    code, _ = probe.stop(how)  # exited: reaps it and reads what it wrote to the end
    after = probe.count(BATCH) - before
    print(f"{how}: exit {code}, {after} batches after the stop request")
    assert code == 0 and after <= most, (after, probe.text_err())
    return after


@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGHUP", "SIGTERM", "SIGINT"])
def test_stop_signal_saves_every_forecast_point(
    fake_host: FakeHost, tmp_path: Path, signame: str
) -> None:
    """state_save_interval = 1h: only the first batch and the exit write the file."""
    config, state = write_config(tmp_path)
    probe = Probe(fake_host, ["--config", str(config)])
    probe.wait_lines(FS, 5, timeout=HANG_GUARD_SEC)
    code, _ = probe.stop(signame, timeout=HANG_GUARD_SEC)
    assert code == 0, probe.text_err()
    assert probe.count(FS) >= 5
    assert_same_window(forecast_points(state), expected_points(probe.lines(FS)))
    if signame == "SIGHUP":
        assert "I! SIGHUP: saving the state and stopping" in probe.text_err()


@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGUSR1", "SIGUSR2"])
def test_user_signal_saves_the_state_now_and_keeps_running(
    fake_host: FakeHost, tmp_path: Path, signame: str
) -> None:
    config, state = write_config(tmp_path)
    probe = Probe(fake_host, ["--config", str(config)])
    probe.wait_lines(FS, 4, timeout=HANG_GUARD_SEC)
    seen = probe.lines(FS)
    probe.process.send_signal(getattr(signal, signame))
    assert f"state saved to {state}" in probe.wait_log(f"I! {signame}:", HANG_GUARD_SEC)
    # Everything written before the signal is saved (a batch may have come in between).
    saved = forecast_points(state)
    assert_same_window(saved[: len(expected_points(seen)) - 1], expected_points(seen)[:-1])
    assert saved[-1][0] >= expected_points(seen)[-1][0] - 0.05
    probe.wait_lines(FS, len(seen) + 2, HANG_GUARD_SEC)  # still running, still writing
    code, _ = probe.stop("SIGTERM", HANG_GUARD_SEC)
    assert code == 0
    assert_same_window(forecast_points(state), expected_points(probe.lines(FS)))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP", "EOF"])
def test_stop_is_seen_at_the_shortest_interval(
    fake_host: FakeHost, tmp_path: Path, reap: list[subprocess.Popen[bytes]], how: str
) -> None:
    """10 ms (the shortest interval the config accepts) and 3,000 devices: every batch takes
    longer than the interval, so the loop never waits; a stop must still be seen, at the end
    of the batch in progress. Before the fix it never was: batches went on for ever."""
    fake_host.write("proc/diskstats", many_devices(3000))
    config, _ = write_config(tmp_path, interval="10ms")
    probe = Probe(fake_host, ["--config", str(config)])
    probe.wait_lines(BATCH, 3, HANG_GUARD_SEC)
    stop_counting(probe, how, reap)


@pytest.mark.slow
def test_queued_stdin_lines_do_not_delay_eof(
    fake_host: FakeHost, tmp_path: Path, reap: list[subprocess.Popen[bytes]]
) -> None:
    """--trigger stdin: Telegraf wrote 2,000 lines while diskprobe was busy, then closed stdin.
    Before the fix every queued line was a batch (2,000 of them) before EOF was seen."""
    fake_host.write("proc/diskstats", many_devices(500))
    config, _ = write_config(tmp_path)
    probe = Probe(fake_host, ["--config", str(config), "--trigger", "stdin"])
    assert probe.process.stdin is not None
    probe.wait_log("started", HANG_GUARD_SEC)
    probe.process.stdin.write(b"\n" * 2000)
    probe.process.stdin.flush()
    probe.wait_lines(BATCH, 2, HANG_GUARD_SEC)
    # Counted from the EOF, not from the start: a test thread slow to close stdin leaves the
    # loop serving queued lines meanwhile, as it should.
    stop_counting(probe, "EOF", reap)


class _Stopper:
    """A collector whose third collect() asks the loop to stop (as a signal handler would)."""

    name, interval, needs_prime = "io", None, False

    def __init__(self, runtime_box: list[Runtime]) -> None:
        self.calls, self._box = 0, runtime_box

    def collect(self) -> Collection:
        self.calls += 1
        if self.calls == 3:
            self._box[0].events.put(STOP)
        return Collection()

    def close(self) -> None:
        pass


class _Sink:
    def write(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def test_interval_loop_sees_stop_when_batches_outrun_the_interval() -> None:
    """The wall clock moves 1 s per reading and the tick is 0.5 s: no time is ever left to
    wait. Before the fix _stop_requested(0) returned without looking and the loop spun."""
    box: list[Runtime] = []
    stopper = _Stopper(box)
    clock = itertools.count(1000.0, 1.0)
    box.append(Runtime([stopper], InfluxSerializer(), _Sink(), Logger(), 0.5,
                       wall=lambda: float(next(clock))))  # fmt: skip
    thread = threading.Thread(target=box[0].run_interval, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_SEC)  # the bug: a loop that spins for ever
    assert not thread.is_alive() and stopper.calls == 3
