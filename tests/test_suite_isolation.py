"""The suite's own isolation between tests that share an xdist worker (tests/conftest.py).

Run in a pytest of its own, in this order, in one process: the process_io fuzzer (its
ProcessIoCollector points psutil's module-global PROCFS_PATH at a temporary fake /proc) and
then a test that asks psutil about a real process. Before the conftest fixture that puts
PROCFS_PATH back after each test, the second failed with NoSuchProcess: seen once under CI,
where xdist had happened to give one worker the two in that order.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def test_a_fake_proc_of_one_test_does_not_reach_the_next() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/test_fuzz_parsers.py::test_process_io_quick",
         "tests/test_process_io.py::test_cmdline_with_newlines_stays_on_one_line"],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:]
