"""kind = "textfile": each batch replaces a file atomically (node_exporter's textfile collector)."""

from __future__ import annotations

from diskprobe import files
from diskprobe.log import Logger


class TextfileOutput:
    """node_exporter's textfile collector reads whole files: write a temp file, rename it.

    The directory may be shared (node_exporter's, other users'): files.atomic_write never
    follows or chmods a name someone swapped. A missing, full, read-only or forbidden
    directory costs the batch, never the process: one E! per distinct error, I! on recovery.
    """

    def __init__(self, path: str, log: Logger | None = None) -> None:
        self.path = path
        self._log = log if log is not None else Logger()
        self._failing: str | None = None  # the error last logged, until a write works

    def write(self, text: str) -> None:
        try:
            # 0644: node_exporter often runs as another user. No fsync: after a crash an
            # older complete file is as good as the newest for a scrape.
            files.atomic_write(self.path, text.encode("utf-8"), 0o644)
        except OSError as error:
            problem = error.strerror or str(error)  # no temp name: it differs every batch
            if isinstance(error, files.UnsafeFile):
                problem = f"its temp file {problem}"
            if problem != self._failing:
                self._failing = problem
                self._log.error(f"textfile: cannot write {self.path}: {problem}; batch dropped")
            return
        if self._failing is not None:
            self._failing = None
            self._log.info(f"textfile: writing {self.path} works again")

    def close(self) -> None:
        pass
