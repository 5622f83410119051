"""A uid's user name, as process_io's `user` tag shows it (psutil does the same lookup): the
passwd entry's name, else the number; cached, as names do not change while the agent runs."""

from __future__ import annotations

import functools
import pwd


@functools.lru_cache(maxsize=4096)
def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return str(uid)
