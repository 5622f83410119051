"""kind = "stdout": batches written to fd 1, whole lines only (Telegraf execd, collectd exec)."""

from __future__ import annotations

import os
import select
import time
from typing import Callable

from diskprobe.outputs.base import OutputClosed, OutputFailed, OutputInterrupted

# A pipe write of at most PIPE_BUF bytes is atomic (POSIX): the reader gets all of it or none.
PIPE_BUF = select.PIPE_BUF
POLL_SLICE_MS = 50  # how often a blocked write looks at the stop flag
LINE_GRACE_SEC = 0.5  # on a stop, how long a half-written line may take to finish


class StreamOutput:
    """Writes batches to a file descriptor (stdout) so that the reader only sees whole lines.

    Each write(2) carries whole lines, at most PIPE_BUF bytes, and is made once poll(2) says
    the descriptor is writable: on a pipe such a write neither blocks nor splits, so whatever
    the reader has received ends with a newline at every moment. While the reader does not
    drain, the writer waits in short slices and checks `stopping`; on a stop it drops the
    rest of the batch at a line boundary (OutputInterrupted), so the process can exit on time
    without leaving half a line for the reader to parse. Only a line longer than PIPE_BUF, or
    a tty or socket that took part of a write, can be caught mid-line: that line gets
    LINE_GRACE_SEC to finish before it is abandoned too.
    """

    def __init__(self, fd: int, stopping: Callable[[], bool] = lambda: False) -> None:
        self._fd = fd
        self._stopping = stopping
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        offset, grace_end = 0, float("inf")
        while offset < len(data):
            if self._poll.poll(POLL_SLICE_MS):
                offset += self._write_lines(data, offset)
            elif self._stopping():
                # A line boundary: stop now. Mid-line: give the reader a moment to drain.
                if offset == 0 or data[offset - 1] == 0x0A:
                    raise OutputInterrupted(_unwritten(data, offset, whole=True))
                grace_end = min(grace_end, time.monotonic() + LINE_GRACE_SEC)
                if time.monotonic() >= grace_end:
                    raise OutputInterrupted(_unwritten(data, offset, whole=False))

    def _write_lines(self, data: bytes, offset: int) -> int:
        end = data.rfind(b"\n", offset, offset + PIPE_BUF) + 1
        if end <= offset:  # one line longer than PIPE_BUF: it has to go in pieces
            end = min(offset + PIPE_BUF, len(data))
        try:
            return os.write(self._fd, memoryview(data)[offset:end])
        except BlockingIOError:  # O_NONBLOCK set by whoever shares the descriptor
            return 0
        except BrokenPipeError:
            raise OutputClosed() from None
        except OSError as error:
            raise OutputFailed(f"stdout: cannot write metrics: {error}") from None

    def close(self) -> None:
        pass


def _unwritten(data: bytes, offset: int, whole: bool) -> str:
    lost, total = data.count(b"\n", offset), data.count(b"\n")
    tail = "" if whole else "; the reader got the start of a line with no end"
    return f"{lost} of {total} lines of the last batch not written{tail}"
