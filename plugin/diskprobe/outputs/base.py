"""What every output is (the Output protocol) and how writing to one can end."""

from __future__ import annotations

from typing import Protocol


class OutputClosed(Exception):
    """stdout is gone (EPIPE): Telegraf stopped reading; exit quietly."""


class OutputFailed(Exception):
    """An output cannot take metrics (stdout: ENOSPC, EBADF, EIO, not open; InfluxDB: the
    spool or the token cannot be opened): one E! line, exit 1."""


class OutputInterrupted(Exception):
    """A stop was requested while the reader was not reading: the rest of the batch is dropped."""


class Output(Protocol):
    def write(self, text: str) -> None: ...

    def close(self) -> None: ...
