"""Two lanes for a parallel run (pytest-xdist): tests marked `serial` run with no other test
beside them; every other test runs beside the others.

`serial` is for tests that change or measure what every process on the machine shares:
sysctls, the page cache, users and /etc/sudoers.d, I/O pressure (PSI), mounts that hang
(every process listing the mounts would meet them), and latencies that a busy neighbour
would change. Without xdist every test runs alone anyway and nothing is locked.

The rest of the isolation between workers: tests/run.sh distributes with `--dist loadgroup`,
and a file whose module fixture is costly (a FUSE host with fio, a fleet of fake drives, a
wheel build) marks itself `xdist_group(<its name>)`, so one worker runs all of it and builds
the fixture once; servers pick ports from a block of their own worker (tests/ports.py); loop
devices come from `losetup --find`, mount points, cgroups and users are named after the test's
tmp dir or PID, and each worker has its own InfluxDB (the session fixture).

Under xdist the workers share two lock files (flock) in a folder named after the run:
every test holds the room lock shared, a serial test holds it exclusively. Taking the room
goes through a turnstile (an exclusive lock held only while entering), which a serial test
keeps until it has the room: workers that arrive later wait at the turnstile instead of
keeping the room busy for ever, so a serial test waits at most for the tests running when
it arrived.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Generator, Iterator

import pytest

PLUGIN_NAME = "diskprobe-lanes"


def lock_dir(run_id: str) -> Path:
    return Path(tempfile.gettempdir()) / f"diskprobe-lanes-{run_id}"


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the lock


@contextlib.contextmanager
def entered(folder: Path, alone: bool) -> Iterator[None]:
    """Hold the room: exclusively when `alone`, else shared with the other workers' tests."""
    folder.mkdir(exist_ok=True)
    room = fcntl.LOCK_EX if alone else fcntl.LOCK_SH
    with contextlib.ExitStack() as stack:
        with _flock(folder / "turnstile", fcntl.LOCK_EX):
            stack.enter_context(_flock(folder / "room", room))
        yield


class Lanes:
    def __init__(self, config: pytest.Config) -> None:
        workerinput = getattr(config, "workerinput", None)
        self.folder = lock_dir(workerinput["testrunuid"]) if workerinput else None
        self.run_id: str | None = None  # the controller's: it removes the folder at the end
        if workerinput is None and hasattr(config.option, "testrunuid"):
            # xdist hands its workers this id (or a random one it keeps to itself)
            config.option.testrunuid = config.option.testrunuid or uuid.uuid4().hex
            self.run_id = config.option.testrunuid

    @pytest.hookimpl
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Under xdist: tests marked slow first, so the long ones start while there is work
        left to run beside them, and serial ones last, when the others are done (a serial
        test waits for every test running when it arrives, and holds up those that would
        start). Every worker sorts the same collection the same way, as xdist requires."""
        if self.folder is not None:
            items.sort(key=lambda item: (_marked(item, "serial"), not _marked(item, "slow")))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        if self.folder is None:  # not an xdist worker: nothing runs beside this test
            yield
            return
        with entered(self.folder, _marked(item, "serial")):
            yield

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.run_id:
            shutil.rmtree(lock_dir(self.run_id), ignore_errors=True)


def _marked(item: pytest.Item, name: str) -> bool:
    return item.get_closest_marker(name) is not None


def register(config: pytest.Config) -> None:
    """Called from tests/conftest.py's pytest_configure."""
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(Lanes(config), PLUGIN_NAME)
