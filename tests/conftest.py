"""Shared fixtures: a real InfluxDB 1.x server for the session, a fresh database per test."""

from __future__ import annotations

import ctypes
import itertools
import os
import sys
import uuid
from pathlib import Path
from typing import Iterator

import psutil
import pytest
from hypothesis import settings

import stale_mounts
from diskprobe.smart import child
from victoria_server import VM_BINARY, VictoriaMetrics
from write_api import write_api  # noqa: F401  (a fixture: tests/write_api.py)

import lanes
import schema_coverage
from ci import skip_or_fail, under_ci
from influxdb_server import InfluxServer, find_influxd

_database_numbers = itertools.count(1)
_PROCFS = psutil.PROCFS_PATH  # "/proc", before any collector points it elsewhere


# Under CI the property tests and fuzzers draw the same examples on every run (derandomize):
# a landing is judged on a reproducible set, checked before submitting with CI=true. Locally
# every run draws new ones, which is where the fuzzers find new bugs.
settings.register_profile("ci", derandomize=True, print_blob=True)
if under_ci():
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _real_procfs_after_each_test() -> Iterator[None]:
    """ProcessIoCollector points psutil's module-global PROCFS_PATH at its HOST_PROC
    (sources/procio.use_roots; each collect() sets it again). A fake /proc of one test would
    otherwise outlive it in its xdist worker: a later test asking psutil about a real pid
    looked in a deleted tree (NoSuchProcess in test_cmdline_with_newlines_stays_on_one_line
    after the process_io fuzzer had run in the same worker)."""
    yield
    psutil.PROCFS_PATH = _PROCFS


@pytest.fixture(autouse=True)
def _no_subreaper_after_each_test() -> Iterator[None]:
    """A CommandRunner run in this process makes it a subreaper (smart/child.py: what a
    smartctl leaves behind comes back to diskprobe, to be killed and reaped). In a test worker
    that outlived the test: a later test's orphans (diskprobe, once collectd has exited) became
    the worker's children, zombies nobody reaps, alive to a /proc check (test_collectd:
    "diskprobe outlived collectd's SIGTERM", only after such a test in the same worker)."""
    yield
    if child._reaper:
        ctypes.CDLL(None).prctl(child.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        child._reaper.clear()  # the next CommandRunner.run() sets it again


@pytest.fixture(scope="session")
def influxdb() -> Iterator[InfluxServer]:
    """A running `influxd` (HTTP on a free loopback port); skipped locally if not installed."""
    influxd = find_influxd()
    if influxd is None:
        skip_or_fail("influxd (InfluxDB 1.x) is not on PATH; install the influxdb package to run")
    server = InfluxServer(influxd).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def victoria(tmp_path: Path) -> Iterator[VictoriaMetrics]:
    if not os.access(VM_BINARY, os.X_OK):
        skip_or_fail("victoria-metrics not installed (Debian: apt-get install victoria-metrics)")
    server = VictoriaMetrics(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def influx_db(influxdb: InfluxServer) -> tuple[InfluxServer, str]:
    """(server, name of a database created for this test only)."""
    name = f"test_{next(_database_numbers)}_{uuid.uuid4().hex[:8]}"
    influxdb.create_database(name)
    return influxdb, name


def pytest_sessionstart(session: pytest.Session) -> None:
    # Once per run (the xdist controller, or the only process): a killed earlier run's FUSE
    # mounts, which no longer answer statfs, would otherwise fail every test that lists the
    # host's mounts (tests/stale_mounts.py).
    if not hasattr(session.config, "workerinput"):
        for line in stale_mounts.reap():
            print(f"tests: {line}", file=sys.stderr)


def pytest_configure(config: pytest.Config) -> None:
    # Records what collectors emit; at the end, checks it against the schema both ways.
    schema_coverage.register(config)
    lanes.register(config)  # under xdist: tests marked serial run with nothing beside them
