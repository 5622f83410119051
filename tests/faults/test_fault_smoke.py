"""The fake host itself works: a healthy run reports I/O, filesystems and pressure."""

from __future__ import annotations

import re

from faultlib import FakeHost, assert_no_traceback, run_diskprobe


def test_healthy_fake_host_reports_every_collector(fake_host: FakeHost) -> None:
    result = run_diskprobe(["--once", "--interval", "200ms"], fake_host.env())
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stderr)
    measurements = {re.split("[, ]", line, maxsplit=1)[0] for line in result.stdout.splitlines()}
    assert {"diskprobe_io", "diskprobe_pressure", "diskprobe_agent"} <= measurements
