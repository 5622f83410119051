"""The suite's own isolation between tests that share an xdist worker (tests/conftest.py).

Run in a pytest of its own, in this order, in one process: the process_io fuzzer (its
ProcessIoCollector points psutil's module-global PROCFS_PATH at a temporary fake /proc) and
then a test that asks psutil about a real process. Before the conftest fixture that puts
PROCFS_PATH back after each test, the second failed with NoSuchProcess: seen once under CI,
where xdist had happened to give one worker the two in that order.

The same for the subreaper a CommandRunner makes of its process (smart/child.py): a test
reading a drive in process, then one whose orphan must end (as test_collectd's diskprobe once
collectd has exited). Before the fixture that turns it off after each test, the orphan stayed
the worker's zombie: "diskprobe outlived collectd's SIGTERM", seen under CI.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).parent


def in_one_process(*tests: str) -> None:
    """`tests` run in this order in one pytest process of their own: all pass."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         *tests], cwd=TESTS.parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and f"{len(tests)} passed" in done.stdout, done.stdout[-3000:]


def test_a_fake_proc_of_one_test_does_not_reach_the_next() -> None:
    in_one_process("tests/test_fuzz_parsers.py::test_process_io_quick",
                   "tests/test_process_io.py::test_cmdline_with_newlines_stays_on_one_line")


def test_an_orphan_ends_without_becoming_this_process_zombie() -> None:
    """A shell that starts a short sleep and exits: the sleep, orphaned, must be gone (reaped
    by whoever adopted it) soon after it ends; a subreaper that never waits keeps it a zombie."""
    shell = subprocess.run(["sh", "-c", "sleep 0.2 & echo $!"], capture_output=True,
                           text=True, timeout=30, check=True)  # fmt: skip
    orphan = Path(f"/proc/{int(shell.stdout)}")
    deadline = time.monotonic() + 10
    while orphan.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    state = (orphan / "stat").read_text().rsplit(")", 1)[1].split()[0] if orphan.exists() else ""
    assert not orphan.exists(), f"the orphan is still there, state {state}"


def test_a_drive_read_in_one_test_leaves_no_subreaper_to_the_next() -> None:
    in_one_process("tests/test_smart_nvme_cli.py::test_read_fills_health_and_identity",
                   "tests/test_suite_isolation.py::"
                   "test_an_orphan_ends_without_becoming_this_process_zombie")
