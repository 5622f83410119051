"""A small pool of daemon worker threads returning Futures.

concurrent.futures' ThreadPoolExecutor joins its workers at interpreter exit, so a read
stuck on a child (or on a pipe a grandchild holds) kept diskprobe alive after SIGTERM. These
workers are daemon threads: exit never waits for them. The children they wait on are killed
by the runner's close(); threads still inside a read simply end with the process.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Callable, Optional, Tuple, TypeVar

T = TypeVar("T")
_Job = Tuple["Future[object]", Callable[[], object]]


class DaemonPool:
    def __init__(self, workers: int, name: str) -> None:
        self._size = workers
        self._name = name
        self._jobs: queue.SimpleQueue[Optional[_Job]] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, function: Callable[..., T], *args: object) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                future.cancel()
                return future
            if len(self._threads) < self._size:  # started as needed, like the executor's
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}_{len(self._threads)}")  # fmt: skip
                self._threads.append(thread)
                thread.start()
            self._jobs.put((future, lambda: function(*args)))  # type: ignore[arg-type]
        return future

    def shutdown(self) -> None:
        """Cancel queued jobs and let idle workers end; never waits for a running one."""
        with self._lock:
            self._closed = True
            for _ in self._threads:
                self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, call = job
            if self._closed:
                future.cancel()
                continue
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as error:  # delivered to whoever waits on the future
                future.set_exception(error)
