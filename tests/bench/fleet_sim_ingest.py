"""Send a pre-generated fleet (tests/bench/fleet_sim.py) to a database and time only the
sending: batches of BATCH_LINES lines, read from the gzip files by the sending threads
(decompressing is a few % of the cost, and is counted), over plain HTTP keep-alive
connections, SENDERS at a time. Then the on-disk size.

Targets: InfluxDB 1.x /write (line protocol), VictoriaMetrics /write (its InfluxDB
line-protocol endpoint) and /api/v1/import/prometheus (text format with timestamps).
"""

from __future__ import annotations

import gzip
import http.client
import json
import subprocess
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

BATCH_LINES = 5000
RETRIES = 3
SENDERS = 2  # this machine has 2 cores: more senders only queue


@dataclass(frozen=True)
class Ingest:
    target: str
    lines: int
    values: int
    seconds: float
    errors: int

    @property
    def lines_per_sec(self) -> float:
        return self.lines / self.seconds

    @property
    def values_per_sec(self) -> float:
        return self.values / self.seconds


def batches(path: Path) -> Iterator[bytes]:
    with gzip.open(path, "rb") as lines:
        batch: list[bytes] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= BATCH_LINES:
                yield b"".join(batch)
                batch = []
        if batch:
            yield b"".join(batch)


def _send_files(base_url: str, path_query: str, files: list[Path]) -> int:
    """Send every batch of `files` on one keep-alive connection; the number of failed posts."""
    parsed = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port,
                                            timeout=600)
    errors = 0
    try:
        for path in files:
            for body in batches(path):
                status, text = _post(connection, path_query, body)
                if status not in (200, 204):
                    errors += 1
                    if errors <= 3:
                        print(f"  ! {path.name}: HTTP {status}: {text[:300]!r}")
    finally:
        connection.close()
    return errors


def _post(connection: http.client.HTTPConnection, path_query: str,
          body: bytes) -> tuple[int, bytes]:
    """POST one batch; a 5xx (InfluxDB's `{"error":"timeout"}` on a loaded machine) is sent
    again, as Telegraf would: a write of the same points is idempotent. The retries are timed."""
    for attempt in range(RETRIES + 1):
        connection.request("POST", path_query, body=body, headers={"Content-Type": "text/plain"})
        reply = connection.getresponse()
        text = reply.read()
        if reply.status < 500 or attempt == RETRIES:
            break
        print(f"  ~ HTTP {reply.status} ({text[:80]!r}): sent again", flush=True)
        time.sleep(1.0 + attempt)
    return reply.status, text


def send(target: str, base_url: str, path_query: str, files: list[Path], lines: int,
         values: int) -> Ingest:
    """Time sending `files` (SENDERS threads, files dealt round-robin)."""
    shares = [files[i::SENDERS] for i in range(SENDERS)]
    started = time.perf_counter()
    with ThreadPoolExecutor(SENDERS) as pool:
        errors = sum(pool.map(lambda share: _send_files(base_url, path_query, share), shares))
    return Ingest(target, lines, values, time.perf_counter() - started, errors)


def du_bytes(paths: list[Path]) -> int:
    """Bytes on disk (du -sb, apparent sizes) of the existing paths."""
    existing = [str(p) for p in paths if p.exists()]
    if not existing:
        return 0
    done = subprocess.run(["du", "-scb", *existing], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1].split()[0])


def influx_disk(url: str, db: str) -> tuple[int, int]:
    """(InfluxDB's own diskBytes of the database's shards, du of their TSM and WAL
    directories), from SHOW STATS (whose shard rows name both paths)."""
    query = urllib.parse.urlencode({"q": "SHOW STATS FOR 'shard'"})
    with urllib.request.urlopen(f"{url}/query?{query}", timeout=60) as reply:
        answer = json.loads(reply.read())
    stated, paths = 0, []
    for series in answer["results"][0].get("series", []):
        tags = series.get("tags", {})
        if tags.get("database") != db:
            continue
        row = dict(zip(series["columns"], series["values"][0]))
        stated += int(row.get("diskBytes", 0))
        paths += [Path(tags["path"]), Path(tags["walPath"])]
    return stated, du_bytes(paths)


def victoria_flush(url: str) -> None:
    """Flush in-memory parts to disk (VictoriaMetrics' /internal/force_flush); the merge of
    small parts into big ones is left to its background merger."""
    urllib.request.urlopen(url + "/internal/force_flush", timeout=120).read()
