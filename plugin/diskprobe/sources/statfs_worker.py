"""The statfs helper process (see statfs.py): many paths per request, answers in batches.

stdin:  {"id": 7, "paths": ["/", "/mnt/nfs"]}   ids 7, 8, ... in the paths' order
        {"id": 9, "path": "/data"}              one path (the older form, still understood)
stdout: [[7, [f_bsize, f_frsize, f_blocks, ...]], [8, 13, "Permission denied"]]
        one JSON list of answers per line: [id, stat] or [id, errno, strerror]
At end of input it exits at once, whatever its threads are blocked in.

One thread (the scanner) calls statvfs for the queued paths in turn: a thread per call cost
more than the calls themselves at thousands of mounts. A watchdog keeps a hung mount from
holding up the rest: once the scanner has been inside one call for STUCK_AFTER_SEC, the
answers so far are written, the scanner is left to that call (it answers it if it ever
returns, then ends) and a fresh scanner takes the rest of the queue. So a hung mount costs
one thread and STUCK_AFTER_SEC, not the other mounts' answers.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import deque
from typing import Deque, List, Optional, Tuple

READY = b'{"ready": true}\n'
STUCK_AFTER_SEC = 0.05  # a local statfs takes microseconds; a slow one only costs a thread
FLUSH_EVERY = 1000  # answers per line at most, so diskprobe can start on long batches
Answer = List[object]


class _Scanner:
    def __init__(self) -> None:
        self.since: Optional[float] = None  # monotonic start of the call it is in
        self.abandoned = False


class Helper:
    """The queue, the current scanner and the watchdog; every field under `cond`."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.todo: Deque[Tuple[int, str]] = deque()
        self.out: List[Answer] = []
        self.scanner = self._spawn()
        threading.Thread(target=self._watch, name="watchdog", daemon=True).start()

    def add(self, requests: List[Tuple[int, str]]) -> None:
        with self.cond:
            self.todo.extend(requests)
            self.cond.notify_all()

    def _spawn(self) -> _Scanner:
        scanner = _Scanner()
        threading.Thread(target=self._scan, args=(scanner,), name="scanner", daemon=True).start()
        return scanner

    def _flush(self) -> None:
        # Called with `cond` held: lines from different threads never interleave.
        if not self.out:
            return
        line = (json.dumps(self.out, separators=(",", ":")) + "\n").encode()
        self.out = []
        try:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        except OSError:
            os._exit(0)  # diskprobe is gone

    def _scan(self, scanner: _Scanner) -> None:
        cond = self.cond
        while True:
            with cond:
                while not self.todo:
                    self._flush()  # the queue is drained: everything answered goes out
                    cond.wait()
                call_id, path = self.todo.popleft()
                scanner.since = time.monotonic()
            answer = _statvfs(call_id, path)
            with cond:
                scanner.since = None
                self.out.append(answer)
                if scanner.abandoned:  # the hung call came back; a successor has the queue
                    self._flush()
                    return
                if len(self.out) >= FLUSH_EVERY:
                    self._flush()

    def _watch(self) -> None:
        cond = self.cond
        with cond:
            while True:
                since = self.scanner.since
                if since is None:
                    # Idle, or between two calls: look again in a while if work is queued.
                    cond.wait(STUCK_AFTER_SEC if self.todo else None)
                    continue
                left = since + STUCK_AFTER_SEC - time.monotonic()
                if left > 0:
                    cond.wait(left)
                    continue
                self.scanner.abandoned = True
                self._flush()  # what was answered before the hung call goes out now
                self.scanner = self._spawn()


def _statvfs(call_id: int, path: str) -> Answer:
    try:
        return [call_id, list(os.statvfs(path))]
    except OSError as error:
        return [call_id, error.errno or 0, error.strerror or ""]


def _requests(line: bytes) -> List[Tuple[int, str]]:
    try:
        request = json.loads(line)
        first = int(request["id"])
        paths = request["paths"] if "paths" in request else [request["path"]]
        return [(first + offset, str(path)) for offset, path in enumerate(paths)]
    except (ValueError, KeyError, TypeError):
        return []


def main() -> None:
    helper = Helper()
    sys.stdout.buffer.write(READY)  # started and imported: the caller's timeouts start now
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        requests = _requests(line)
        if requests:
            helper.add(requests)
    os._exit(0)


if __name__ == "__main__":
    main()
