"""How the process meets its supervisor: signals, and standard descriptors that may be closed.

What the supervisors send: Telegraf's execd closes stdin, then SIGTERM, then SIGKILL 5 s later
(on Windows it kills at once); with its `signal` option it sends SIGHUP, SIGUSR1 or SIGUSR2 at
every interval. systemd sends SIGTERM, then SIGHUP where SendSIGHUP=yes, then SIGKILL after
TimeoutStopSec. A terminal sends SIGINT (^C) and SIGHUP (hang-up). collectd's exec sends SIGTERM.

- SIGTERM, SIGINT, SIGHUP: stop: the batch in progress ends, the state is saved, exit 0.
  SIGHUP is not an in-place reload: from systemd and from a terminal it comes with or means a
  stop, and every supervisor diskprobe runs under restarts it (execd restart_delay, collectd's
  next read, the sample unit's Restart=always), which re-reads the config with nothing
  half-rebuilt (collectors, spool lock, output) left in a running process.
- SIGUSR1, SIGUSR2: save the state file now and log one I! line; keep running.
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys

from diskprobe.runtime import SAVE, STOP, Events

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
SAVE_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)


def install_signal_handlers(events: Events) -> None:
    # A handler runs between two bytecodes of the main thread: it only queues the request.
    def _stop(signum: int, _frame: object) -> None:
        events.put(STOP, signal.Signals(signum).name)

    def _save(signum: int, _frame: object) -> None:
        events.put(SAVE, signal.Signals(signum).name)

    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop)
    for signum in SAVE_SIGNALS:
        signal.signal(signum, _save)


def plug_closed_std_fds() -> set[int]:
    """Open /dev/null on whichever of fds 0-2 is closed; return those that were.

    Otherwise the next file diskprobe opens (the state file, the spool) would get fd 1 and
    anything written to stdout would land in it."""
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if sys.stderr is None:  # Python found fd 2 closed: give the logger a stream again
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    return closed


def stdout_problem(closed: set[int]) -> str | None:
    """Why fd 1 cannot carry metrics, checked before the first batch; None when it can."""
    if 1 in closed:
        return "stdout is not open (started with >&-?)"
    try:
        flags = fcntl.fcntl(1, fcntl.F_GETFL)
    except OSError as error:
        return f"stdout: {error}"
    if flags & os.O_ACCMODE == os.O_RDONLY:
        return "stdout is open for reading only"
    return None
