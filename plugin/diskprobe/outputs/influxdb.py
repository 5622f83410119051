"""output kind = "influxdb": batches go through the InfluxDB v2 write API, via an on-disk spool.

write() stores the batch in the spool (fsync + rename) and returns: the loop never waits on
the network. A sender thread replays the spool oldest first, several batches per gzip'd
request, and deletes them only after the server acknowledged them (HTTP 204). A failed
request is retried after an exponential backoff (1 s doubling to 30 s, with jitter), or later
if a 429/503 answer's Retry-After asks for it (outputs/retry.py). Each send waits a random
part of send_jitter first, and a backlog drains at drain_speedup times the host's own rate
(outputs/pacing.py: a fleet's hosts neither send at the same second nor stampede the server
after an outage). 400/413/422 answers mean the server will never accept the batch: it is
dropped and counted (outputs/ledger.py: a count is reported until a batch carrying it is
delivered), and logged without a line per batch (outputs/refusals.py).
Delivery is at-least-once: a request the server applied whose answer was lost is sent again.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from typing import Callable, Mapping

from diskprobe.config.file import read_token_file
from diskprobe.config.output import OutputConfig
from diskprobe.log import Logger
from diskprobe.outputs.base import OutputFailed
from diskprobe.outputs.pacing import (
    Draw,
    LiveRate,
    drain_pause,
    drain_rate,
    request_bytes,
    send_delay,
)
from diskprobe.outputs.refusals import RefusalLog
from diskprobe.outputs.retry import RETRY_AFTER_MAX, retry_after
from diskprobe.outputs.spool import Spool, SpoolLocked, count_points

BACKOFF_FIRST, BACKOFF_MAX = 1.0, 30.0
REQUEST_MAX_BYTES = 4 * 1024 * 1024  # well under VictoriaMetrics' and InfluxDB's limits
PERMANENT = (400, 413, 422)  # malformed or too large: retrying cannot help


def read_token(config: OutputConfig, env: Mapping[str, str]) -> str:
    if not config.token_file:
        return env.get("INFLUX_TOKEN", "").strip()
    try:  # the load read it already (config/checks.py): failing now, it changed since
        return read_token_file(config.token_file)
    except (OSError, UnicodeDecodeError) as error:
        problem = getattr(error, "strerror", None) or "not UTF-8 text"
        raise OutputFailed(
            f"output influxdb: cannot read the token_file {config.token_file}: {problem}"
        ) from None


def _default_client(config: OutputConfig, token: str) -> Callable[[bytes], None]:
    from influxdb_client.client.influxdb_client import InfluxDBClient
    from influxdb_client.client.write_api import SYNCHRONOUS

    client = InfluxDBClient(
        url=config.url,
        token=token,
        org=config.org or "-",
        timeout=int(config.timeout * 1000),
        enable_gzip=True,
    )
    api = client.write_api(write_options=SYNCHRONOUS)

    def send(body: bytes) -> None:
        api.write(bucket=config.bucket, org=config.org or "-", record=body,
                  write_precision="ns")  # type: ignore[arg-type]  # fmt: skip

    return send


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


class InfluxDBOutput:
    def __init__(
        self,
        config: OutputConfig,
        log: Logger,
        env: Mapping[str, str] | None = None,
        send: Callable[[bytes], None] | None = None,
        start: bool = True,
        draw: Draw = random.uniform,
    ) -> None:
        # The config was checked at load (config/checks.py check_config: url, bucket, token_file);
        # what can still fail here is opening the spool and the token: OutputFailed.
        self._token = read_token(config, os.environ if env is None else env)
        # masked where it stands as a whole word only (scrub)
        self._token_word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(self._token)}(?![A-Za-z0-9])")
        self._log, self.refusals = log, RefusalLog(log)
        self._timeout = config.timeout
        self._send_jitter, self._drain_speedup = config.send_jitter, config.drain_speedup
        self._draw, self.live = draw, LiveRate()
        self.last_request_bytes = 0
        try:
            self.spool = Spool(config.spool_dir, config.spool_max_bytes, log)
        except SpoolLocked as error:
            raise OutputFailed(f"output influxdb: spool_dir {error}") from None
        except OSError as error:
            raise OutputFailed(f"output influxdb: spool_dir {config.spool_dir}: "
                               f"{error.strerror or error}") from None  # fmt: skip
        self._send = send if send is not None else _default_client(config, self._token)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.backoff = 0.0  # seconds to wait before the next attempt; 0: healthy
        self.retry_after = 0.0  # the server's Retry-After for the next attempt, if longer
        self._failing = False
        self._thread = threading.Thread(target=self._run, name="influxdb-sender", daemon=True)
        if start:
            self._thread.start()

    def scrub(self, text: str) -> str:
        """The token masked where it stands as a whole word: a token that happens to be a
        piece of another word (a 1-character token in "hostname") is no token there."""
        return self._token_word.sub("***", text) if self._token else text

    def write(self, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8")
        self.live.add(time.monotonic(), len(data))
        try:
            self.spool.append(data)
        except OSError as error:  # disk full, spool removed: the batch cannot be kept
            lost = self.spool.lost(data)
            self._log.error(f"output spool: cannot store a batch ({error}); {lost} points lost")
            return
        self._wake.set()

    def send_once(self, max_bytes: int | None = None) -> bool:
        """One request with the oldest spooled batches (up to max_bytes, else a paced drain's
        request); False if the server did not take it."""
        limit = max_bytes or request_bytes(self.drain_rate(), REQUEST_MAX_BYTES)
        batches = self.spool.take(limit)
        if not batches:
            return True
        self.last_request_bytes = sum(len(data) for _, data in batches)
        status = self._deliver(batches)
        if status in PERMANENT and len(batches) > 1:
            # One bad batch spoils the request: find it by sending them one by one. InfluxDB
            # may have written the good lines of the refused request; resending them overwrites
            # identical points (same series, fields and timestamp), so nothing doubles there.
            for number, single in enumerate(batches):
                status = self._deliver([single], refused_ok=True)
                if status is not None and status not in PERMANENT:
                    self.spool.release([seq for seq, _ in batches[number + 1 :]])
                    return False
            return True
        return status is None or status in PERMANENT

    def _deliver(self, batches: list[tuple[int, bytes]], refused_ok: bool = False) -> int | None:
        """Send; None on success, else the HTTP status (0: no answer). Settles the spool."""
        seqs = [seq for seq, _ in batches]
        body = b"".join(data if data.endswith(b"\n") else data + b"\n" for _, data in batches)
        try:
            self._send(body)
        except Exception as error:  # any failure: keep the batches unless the server refused
            status = _status(error) or 0
            if status in PERMANENT and (refused_ok or len(seqs) == 1):
                points = count_points(batches[0][1])
                self.refusals.refused(seqs[0], points, status, self._describe(error))
                self.spool.done(seqs, delivered=False)
            elif status not in PERMANENT:
                self._fail(error)
                self.spool.release(seqs)
            else:
                self.spool.release(seqs)
            return status
        self.spool.done(seqs, delivered=True)
        self.refusals.accepted()
        if self._failing:
            self._failing = False
            self._log.forget("influxdb-down")
            self._log.info("output influxdb: server reachable again; replaying the spool")
        self.backoff = self.retry_after = 0.0
        return None

    def _describe(self, error: BaseException) -> str:
        body = getattr(error, "body", None) or getattr(error, "reason", None) or str(error)
        text = f"{type(error).__name__}: {body}"
        return self.scrub(text.replace("\n", " "))[:300]

    def _fail(self, error: BaseException) -> None:
        self._failing = True
        self.backoff = min(BACKOFF_MAX, max(BACKOFF_FIRST, self.backoff * 2))
        asked = retry_after(error, time.time())
        self.retry_after = asked or 0.0
        if asked == RETRY_AFTER_MAX:
            self._log.warn_once(
                "influxdb-retry-after",
                f"output influxdb: the server asked to wait {RETRY_AFTER_MAX:g}s or longer "
                f"(Retry-After); waiting at most {RETRY_AFTER_MAX:g}s",
            )
        self._log.warn_once(
            "influxdb-down",
            f"output influxdb: write failed ({self._describe(error)}); spooling batches in "
            f"{self.spool.directory} and retrying with backoff",
        )
        self._log.debug(f"output influxdb: retry in {self.delay():g}s (+ jitter)")

    def delay(self) -> float:
        """Seconds before the next attempt, before jitter: the backoff or the server's wish."""
        return max(self.backoff, self.retry_after)

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self.backoff:  # close() sets _stopping: a long Retry-After never delays exit
                self._stopping.wait(self.delay() * random.uniform(1.0, 1.2))
            else:
                self._wake.wait()
                # the send jitter; close() ends it, so --once and exit still send at once
                self._stopping.wait(send_delay(self._send_jitter, self._draw))
            self._wake.clear()
            self._drain()
        if not self.backoff:  # at exit: what the jitter held back, one request within timeout
            self.send_once(REQUEST_MAX_BYTES)

    def _drain(self) -> None:
        """Send until the spool is empty or a request fails, pausing while a backlog remains."""
        while not self._stopping.is_set() and len(self.spool) and self.send_once():
            if len(self.spool):
                pause = drain_pause(self.last_request_bytes, self.drain_rate(), self._draw)
                self._stopping.wait(pause)

    def drain_rate(self) -> float:
        """Bytes per second while a backlog drains (0.0: no limit)."""
        return drain_rate(self.live.bytes_per_second(), self._drain_speedup)

    def pending_batches(self) -> int:
        return len(self.spool)

    def stats(self) -> dict[str, int]:
        return {"dropped_points": self.spool.take_dropped(), "spooled_points": self.spool.points()}

    def close(self) -> None:
        """Stop the sender (after one last try if healthy); unsent batches stay spooled."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(self._timeout + 1.0)
        self.spool.close()
