"""One batch as /metrics serves it (outputs/http_server.py): its bytes, its gzip form made once
on first demand, and whether a scraper's Accept-Encoding lets it have that form."""

from __future__ import annotations

import gzip
import re
import threading

GZIP_LEVEL = 6  # zlib's default: a 20 MB page in ~0.3 s; 9 costs twice that for ~2% less
_QVALUE = re.compile(r"\s*(?:q\s*=\s*([01](?:\.[0-9]{0,3})?)\s*)?")  # "gzip;q=0.5", "gzip"


def accepts_gzip(header: str | None) -> bool:
    """Whether Accept-Encoding lets the answer be gzipped: "gzip", "br, gzip;q=0.5" and "*"
    do; "gzip;q=0", "*;q=0", "identity" and no header at all do not."""
    weights: dict[str, float] = {}
    for item in (header or "").lower().split(","):
        coding, _, params = item.partition(";")
        weight = _QVALUE.fullmatch(params)  # RFC 9110's qvalue; anything else counts as 0
        weights.setdefault(coding.strip(), float(weight.group(1) or 1) if weight else 0.0)
    return next((weights[name] for name in ("gzip", "x-gzip", "*") if name in weights), 0.0) > 0


class Page:
    """One batch as served: encoded once; gzipped by the first scrape that asks for it."""

    def __init__(self, text: str) -> None:
        self.body = text.encode("utf-8")
        self._gzip: bytes | None = None
        self._lock = threading.Lock()  # this page's only: write() never takes it

    def gzipped(self) -> bytes:
        with self._lock:  # first scrapes at once: one compresses, the others wait for it
            if self._gzip is None:
                self._gzip = gzip.compress(self.body, compresslevel=GZIP_LEVEL, mtime=0)
            return self._gzip
