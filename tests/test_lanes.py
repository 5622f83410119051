"""The serial lane (tests/lanes.py): under xdist a `serial` test has the machine to itself;
and a file marked xdist_group runs on one worker.

A suite of its own runs on two workers: every test leaves a marker file in a shared folder
while it runs; a serial test checks, all through its run, that no other marker is there,
and the others check that no serial one is. Each test stays a while, so that without the
lane the two workers would overlap.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CONFTEST = """
import sys
sys.path.insert(0, {tests!r})
import lanes

def pytest_configure(config):
    config.addinivalue_line("markers", "serial: alone")
    lanes.register(config)
"""
SUITE = """
import os, time
from pathlib import Path
import pytest

ROOM = Path({room!r})


def _inside(name, serial):
    mine = ROOM / f"{{'serial' if serial else 'shared'}}-{{name}}-{{os.getpid()}}"
    mine.touch()
    try:
        for _ in range(10):
            others = [p.name for p in ROOM.iterdir() if p != mine]
            if serial:
                assert others == [], others
            else:
                assert not [o for o in others if o.startswith("serial")], others
            time.sleep(0.03)
    finally:
        mine.unlink()


@pytest.mark.parametrize("n", range(6))
def test_shared(n):
    _inside(f"{{__name__}}{{n}}", serial=False)


@pytest.mark.serial
@pytest.mark.parametrize("n", range(3))
def test_alone(n):
    _inside(f"{{__name__}}{{n}}", serial=True)
"""
GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("n", range(8))
def test_grouped(n):
    pass
"""


def test_serial_tests_run_with_nothing_beside_them(tmp_path: Path) -> None:
    room = tmp_path / "room"
    room.mkdir()
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (project / "tests" / "conftest.py").write_text(CONFTEST.format(tests=str(TESTS)))
    for name in ("test_one.py", "test_two.py"):
        (project / "tests" / name).write_text(SUITE.format(room=str(room)))
    (project / "tests" / "test_grouped.py").write_text(GROUPED)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "-v"],
        cwd=project, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "26 passed" in done.stdout, done.stdout
    assert list(room.iterdir()) == []
    workers = set(re.findall(r"\[(gw\d)\] .*PASSED tests/test_grouped.py", done.stdout))
    assert len(workers) == 1, done.stdout  # the group stayed on one worker
