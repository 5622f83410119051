"""How long a server asked us to wait: the `Retry-After` header of a 429 or 503 answer.

Either delay-seconds ("120") or an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT", RFC 9110
10.2.3). A date in the past means "now" (0). A value that is neither (negative, "soon", a
broken date) is ignored: the caller's own backoff applies. A long value is capped at
RETRY_AFTER_MAX so that a misconfigured proxy cannot park the sender for days.
"""

from __future__ import annotations

import re
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any

RETRY_AFTER_MAX = 300.0  # seconds; documented in docs/direct-output.md
RETRY_AFTER_STATUSES = (429, 503)  # the answers where RFC 9110 gives the header this meaning
_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def retry_after(error: BaseException, now: float) -> float | None:
    """Seconds to wait (0..RETRY_AFTER_MAX) if `error` is a 429/503 saying so, else None."""
    status = getattr(error, "status", None)
    if status not in RETRY_AFTER_STATUSES:
        return None
    value = _header(getattr(error, "headers", None), "retry-after")
    if value is None:  # influxdb_client's InfluxDBError keeps a copy of its own
        own = getattr(error, "retry_after", None)
        value = own if isinstance(own, str) else None
    return None if value is None else parse_retry_after(value, now)


def parse_retry_after(value: str, now: float) -> float | None:
    text = value.strip()
    if _SECONDS.fullmatch(text):
        return min(float(text), RETRY_AFTER_MAX)  # float("9"*400) is inf: capped too
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if when is None:  # Python < 3.10 returns None for some unparseable dates
        return None
    if when.tzinfo is None:  # "-0000": UTC by RFC 5322
        when = when.replace(tzinfo=timezone.utc)
    return min(max(when.timestamp() - now, 0.0), RETRY_AFTER_MAX)


def _header(headers: Any, name: str) -> str | None:
    """A header from urllib3's HTTPHeaderDict, a dict or a list of pairs, any case; else None."""
    if headers is None:
        return None
    try:
        pairs = headers.items() if hasattr(headers, "items") else headers
        for key, value in pairs:
            if isinstance(key, str) and key.lower() == name and isinstance(value, str):
                return value
    except (TypeError, ValueError):  # not a header container after all
        return None
    return None
