"""Whether the suite runs under CI, and the one way a test gives up on a missing dependency.

Locally, a test that lacks a tool, a Python package, root or a kernel feature skips with the
reason, so a laptop run stays useful. Under CI it fails instead: tests/run.sh installs every
Debian and Python package the tests drive and runs as root, so a skip there would only hide a
test that quietly stopped running.

The few skips left in the suite are about what no install can change (the real-drive corpus
outside the repository, a kernel without PSI, a filesystem without capabilities); their
reasons say so.

Also the hang guard every test shares: how long it waits for what should take a fraction of a
second (HANG_GUARD_SEC), and the two ways it waits (guarded(), wait_until()).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, NoReturn, TypeVar

import pytest

# How long a test waits for what should take a fraction of a second before calling it a hang.
# Never a bound on speed (docs/testing.md): a test whose peer must not be waited for makes
# that peer never answer, so only a hang, the bug, gets anywhere near it.
HANG_GUARD_SEC = 60.0
T = TypeVar("T")


def guarded(call: Callable[[], T], what: str) -> T:
    """call()'s result; a failure, not a hung test, if it has not returned after
    HANG_GUARD_SEC (it runs in a daemon thread, which the test's cleanup can then unblock)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(call())
        except BaseException as error:  # re-raised in the test's thread
            errors.append(error)

    thread = threading.Thread(target=run, name="guarded", daemon=True)
    thread.start()
    thread.join(HANG_GUARD_SEC)
    assert not thread.is_alive(), f"{what}: no return after {HANG_GUARD_SEC:g} s (a hang)"
    if errors:
        raise errors[0]
    return results[0]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll until condition() holds; a failure after HANG_GUARD_SEC (a hang, not slowness)."""
    deadline = time.monotonic() + HANG_GUARD_SEC
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {HANG_GUARD_SEC:g} s (a hang)"
        time.sleep(0.01)


def under_ci() -> bool:
    """CI set to anything but empty, 0, false or no (.ci/run, GitHub and GitLab set "true")."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> NoReturn:
    """Skip with `reason` locally; fail with it under CI, where tests/run.sh provides it."""
    if under_ci():
        pytest.fail(f"{reason} (CI is set: tests/run.sh must provide it)", pytrace=False)
    pytest.skip(reason)
