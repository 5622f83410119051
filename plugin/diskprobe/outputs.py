"""Where serialized batches go: stdout (Telegraf, collectd) or a textfile (node_exporter)."""

from __future__ import annotations

import os
import tempfile
from typing import BinaryIO, Protocol


class OutputClosed(Exception):
    """stdout is gone (EPIPE): Telegraf stopped reading; exit quietly."""


class Output(Protocol):
    def write(self, text: str) -> None: ...

    def close(self) -> None: ...


class StreamOutput:
    """One write and one flush per batch, so the reader never sees half a batch."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def write(self, text: str) -> None:
        if not text:
            return
        try:
            self._stream.write(text.encode("utf-8"))
            self._stream.flush()
        except BrokenPipeError:
            raise OutputClosed() from None

    def close(self) -> None:
        pass


class TextfileOutput:
    """node_exporter's textfile collector reads whole files: write a temp file, rename it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, text: str) -> None:
        directory = os.path.dirname(os.path.abspath(self.path))
        handle, temp = tempfile.mkstemp(prefix=".diskprobe.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temp, 0o644)  # node_exporter often runs as another user
            os.replace(temp, self.path)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise

    def close(self) -> None:
        pass
