"""statvfs that cannot hang the loop: each call in its own thread, bounded by a timeout.

A thread blocked in statfs on a dead NFS server or a wedged FUSE daemon sits in the kernel
(often in uninterruptible sleep) and cannot be cancelled. So a mount whose call timed out is
"stuck": it keeps its one outstanding call and is not probed again until that call returns.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence, Union

StatResult = Union[os.statvfs_result, OSError]


@dataclass
class _Call:
    done: threading.Event = field(default_factory=threading.Event)
    result: StatResult | None = None


class StatfsProber:
    """Owns the outstanding calls; probe() returns results for mounts that answered in time."""

    def __init__(
        self, timeout: float, statvfs: Callable[[str], os.statvfs_result] = os.statvfs
    ) -> None:
        self.timeout = timeout
        self._statvfs = statvfs
        self._pending: dict[str, _Call] = {}

    def _start(self, path: str) -> _Call:
        call = _Call()

        def _run() -> None:
            try:
                call.result = self._statvfs(path)
            except OSError as error:
                call.result = error
            finally:
                call.done.set()

        threading.Thread(target=_run, name=f"statfs {path}", daemon=True).start()
        return call

    def probe(self, paths: Sequence[str]) -> dict[str, StatResult | None]:
        """path -> statvfs result, the OSError it raised, or None when it did not answer."""
        results: dict[str, StatResult | None] = {}
        calls: dict[str, _Call] = {}
        for path in paths:
            pending = self._pending.get(path)
            if pending is not None and not pending.done.is_set():
                results[path] = None  # still stuck: no second call, and no waiting for it
            else:
                # New, or a stuck mount whose old call has returned: probe it afresh.
                self._pending.pop(path, None)
                calls[path] = self._start(path)
        deadline = time.monotonic() + self.timeout
        for path, call in calls.items():
            if call.done.wait(max(0.0, deadline - time.monotonic())):
                results[path] = call.result
            else:
                self._pending[path] = call
                results[path] = None
        return results

    def stuck(self) -> list[str]:
        return [path for path, call in self._pending.items() if not call.done.is_set()]
