"""Kernel counters as the kernel prints them: unsigned 64-bit, in ASCII digits (%llu)."""

from __future__ import annotations

from typing import Union

U64_LIMIT = 1 << 64  # no kernel counter reaches it: a bigger number is corruption


def parse_u64(text: Union[str, bytes]) -> int | None:
    """The counter in `text`, or None for anything else: "1e400", "-5", "+5", "1_0", "x",
    400 digits (the float maths of rates would overflow on those)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        return None
    value = int(text)
    return value if value < U64_LIMIT else None
