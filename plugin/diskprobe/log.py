"""Telegraf-style logging on stderr: `E! `, `W! `, `I! `, `D! ` prefixes, and once-only warnings."""

from __future__ import annotations

import re
import sys
import threading
from typing import TextIO

# Once-only keys remembered at most: keys often carry a device, path or line, and those
# churn for ever on a busy node (loop devices, containers). Past the limit the oldest key is
# forgotten, so its message may appear once more: a repeat is better than unbounded memory.
SEEN_LIMIT = 4096
# What a terminal must never receive from a message: control characters (C0, DEL, C1: ESC
# starts a sequence that sets the title or clears the screen, a newline forges a line of its
# own) and lone surrogates (bytes that were not UTF-8, as the sources decode them).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _percent(char: str) -> str:
    try:  # a byte that was not UTF-8 is its own value, as serializers/text.py writes it
        data = char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = char.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


def terminal_safe(text: str) -> str:
    """`text` with every control character written %XX (its UTF-8 bytes: ESC is %1B, a
    newline %0A, U+009B %C2%9B) and every lone surrogate %XX too; the rest unchanged. What a
    log line, `doctor` and `diagnose` print passes through it (serializers/text.py's
    readable_text() also writes `%` as `%25` in the names it is given)."""
    return _UNSAFE.sub(lambda found: _percent(found.group()), text)


class Logger:
    """Writes one line per message to stderr; remembers keys of messages that must appear once."""

    def __init__(self, stream: TextIO | None = None, debug: bool = False) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.debug_enabled = debug
        self._lock = threading.Lock()
        self._seen: dict[str, None] = {}  # an insertion-ordered set: the oldest goes first

    def _write(self, prefix: str, message: str) -> None:
        line = f"{prefix} {terminal_safe(message)}\n"  # one line, whatever the message holds
        with self._lock:
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                pass  # stderr gone: nothing sensible left to do with a log line

    def error(self, message: str) -> None:
        self._write("E!", message)

    def warn(self, message: str) -> None:
        self._write("W!", message)

    def info(self, message: str) -> None:
        self._write("I!", message)

    def debug(self, message: str) -> None:
        if self.debug_enabled:
            self._write("D!", message)

    def first_time(self, key: str) -> bool:
        """True the first time `key` is seen: the caller logs, later calls stay quiet."""
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) >= SEEN_LIMIT:
                del self._seen[next(iter(self._seen))]
            self._seen[key] = None
            return True

    def forget(self, key: str) -> None:
        """Allow a once-only message to be logged again (the condition cleared)."""
        with self._lock:
            self._seen.pop(key, None)

    def warn_once(self, key: str, message: str) -> None:
        if self.first_time(key):
            self.warn(message)

    def info_once(self, key: str, message: str) -> None:
        if self.first_time(key):
            self.info(message)

    def debug_once(self, key: str, message: str) -> None:
        if self.debug_enabled and self.first_time(key):
            self.debug(message)
