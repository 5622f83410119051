"""stdout faults (issue #11, items 8 and 9): a reader that stops reading, then SIGTERM, leaves
only whole lines; stdout closed, full, read-only or a hung-up terminal is one E! line and
exit 1, never a traceback; EPIPE stays a quiet exit 0.

No case measures how long an exit takes (tests/bench/bench_stop.py does): a diskprobe that did
not end by itself, or waited for a reader that never reads, would run past HANG_GUARD_SEC.
"""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path

import pytest
from stoplib import Probe, many_devices, shrink_pipe, write_config

from ci import HANG_GUARD_SEC
from faultlib import DISKPROBE, FakeHost, assert_no_traceback, diskprobe_env, start_diskprobe
from lineproto import parse_lines

BATCH_END = b"diskprobe_agent,collector=jobs,"  # the last line of a batch here


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("E! ")]


def read_into_a_batch(fd: int) -> bytes:
    """Read until a batch ended and the next one began, then stop reading. One read takes at
    most what the one-page pipe holds (4 KiB), so the writer is left inside a ~78 kB batch,
    blocked on the full pipe: no sleep needed, and nothing left to chance."""
    received = b""
    while True:
        ready, _, _ = select.select([fd], [], [], HANG_GUARD_SEC)
        chunk = os.read(fd, 65536) if ready else b""
        assert chunk, f"no more output after {len(received)} bytes"
        received += chunk
        end = received.rfind(BATCH_END)
        newline = received.find(b"\n", end) if end >= 0 else -1
        if 0 <= newline < len(received) - 1:  # a batch ended, and the next one began
            return received


@pytest.mark.slow
def test_sigterm_with_stdout_blocked_leaves_only_whole_lines(
    fake_host: FakeHost, tmp_path: Path, reap: list[subprocess.Popen[bytes]]
) -> None:
    """A one-page pipe and ~78 kB batches: the reader stops mid-batch, the pipe is full, then
    SIGTERM. Before the fix the reader got `...write_merged_per_sec=0.0,r` and EOF. A writer
    that waited for the reader would never exit: nobody reads until it has."""
    fake_host.write("proc/diskstats", many_devices(150))
    config, _ = write_config(tmp_path, interval="50ms")
    read_fd, write_fd = os.pipe()
    shrink_pipe(write_fd)
    probe = Probe(fake_host, ["--config", str(config)], stdout=write_fd)
    reap.append(probe.process)
    os.close(write_fd)
    received = read_into_a_batch(read_fd)  # from now on nobody reads
    code, _ = probe.stop("SIGTERM", timeout=HANG_GUARD_SEC)
    with os.fdopen(read_fd, "rb") as reader:
        received += reader.read()
    assert code == 0, probe.text_err()
    text = received.decode()
    assert text.endswith("\n"), text[-200:]
    points = parse_lines(text)
    assert len(points) == text.count("\n") > 0
    assert "W! output: stopping with stdout blocked" in probe.text_err()


def _run_shell(redirect: str, args: list[str], host: FakeHost) -> subprocess.CompletedProcess[str]:
    script = f'exec "$0" "$@" {redirect}'
    return subprocess.run(
        ["sh", "-c", script, str(DISKPROBE), *args],
        env=diskprobe_env(host.env()),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # then replaced by the redirect
        stderr=subprocess.PIPE,
        text=True,
        timeout=HANG_GUARD_SEC,
    )


@pytest.mark.parametrize(
    ("redirect", "needle"),
    [
        (">&-", "stdout is not open"),
        (">/dev/full", "No space left on device"),
        ("1</dev/null", "stdout is open for reading only"),
    ],
    ids=["closed", "dev-full", "read-only"],
)
def test_unusable_stdout_is_one_error_and_exit_1(
    fake_host: FakeHost, tmp_path: Path, redirect: str, needle: str
) -> None:
    """The daemon, not --once: it must end by itself, with one E! line."""
    config, _ = write_config(tmp_path, interval="100ms")
    try:
        result = _run_shell(redirect, ["--config", str(config)], fake_host)
    except subprocess.TimeoutExpired:  # the bug: it ran on (an E! every cycle, or none)
        pytest.fail(f"{redirect}: the daemon did not end by itself")
    assert_no_traceback(result.stderr)
    assert result.returncode == 1, result.stderr
    errors = _errors(result.stderr)
    assert len(errors) == 1 and needle in errors[0], result.stderr


def test_hung_up_terminal_is_one_error_and_exit_1(fake_host: FakeHost) -> None:
    """stdout is a terminal whose other side is gone (ssh dropped): write(2) gives EIO."""
    master, slave = os.openpty()
    os.close(master)
    try:
        result = subprocess.run(
            [str(DISKPROBE), "--once", "--interval", "100ms"],
            env=diskprobe_env(fake_host.env()),
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG_GUARD_SEC,
        )
    finally:
        os.close(slave)
    assert_no_traceback(result.stderr)
    assert result.returncode == 1, result.stderr
    errors = _errors(result.stderr)
    assert len(errors) == 1 and "Input/output error" in errors[0], result.stderr


@pytest.mark.slow
def test_closed_stderr_does_not_kill_the_daemon(fake_host: FakeHost, tmp_path: Path) -> None:
    """`2>&-`: the first log line used to raise AttributeError on sys.stderr = None."""
    config, _ = write_config(tmp_path)
    process = subprocess.Popen(
        ["sh", "-c", 'exec "$0" "$@" 2>&-', str(DISKPROBE), "--config", str(config)],
        env=diskprobe_env(fake_host.env()),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(20)]
        assert all(line.endswith(b"\n") for line in lines), lines
        process.terminate()
        assert process.wait(HANG_GUARD_SEC) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(HANG_GUARD_SEC)


def test_epipe_stays_a_quiet_exit_0(
    fake_host: FakeHost, tmp_path: Path, reap: list[subprocess.Popen[bytes]]
) -> None:
    """A guard, not a regression (it passed before): Telegraf stopped reading."""
    config, _ = write_config(tmp_path, interval="50ms")
    process = start_diskprobe(["--config", str(config)], fake_host.env())
    reap.append(process)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().endswith(b"\n")
    process.stdout.close()
    assert process.wait(HANG_GUARD_SEC) == 0
    stderr = process.stderr.read().decode()
    assert not _errors(stderr), stderr
    assert_no_traceback(stderr)
