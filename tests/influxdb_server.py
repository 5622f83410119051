"""A throwaway InfluxDB 1.x server for tests: real `influxd`, loopback only, temporary storage.

Only the HTTP service runs (plus the backup RPC listener influxd always opens); both bind
to 127.0.0.1 on ports picked free at start-up. Talks to the server with urllib only.

Size: one server fixture; 65 of its lines are influxd's configuration, written whole so that
every service influxd would open is named and turned off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Optional

import psutil

from ports import free_ports

START_TIMEOUT_SEC = 30.0
STOP_TIMEOUT_SEC = 10.0
HTTP_TIMEOUT_SEC = 10.0
LOG_TAIL_LINES = 40
START_ATTEMPTS = 3  # a free port can be taken by someone else before influxd binds it

_CONFIG = """\
reporting-enabled = false
bind-address = "127.0.0.1:{rpc_port}"

[meta]
  dir = "{root}/meta"
  retention-autocreate = true
  logging-enabled = false

[data]
  dir = "{root}/data"
  wal-dir = "{root}/wal"
  wal-fsync-delay = "0s"
  index-version = "inmem"
  query-log-enabled = false
  trace-logging-enabled = false

[coordinator]
  log-queries-after = "0s"

[retention]
  enabled = false

[shard-precreation]
  enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:{http_port}"
  auth-enabled = false
  log-enabled = false
  suppress-write-log = true
  write-tracing = false
  pprof-enabled = false
  unix-socket-enabled = false

[ifql]
  enabled = false

[logging]
  level = "error"
  suppress-logo = true

[continuous_queries]
  enabled = false
  log-enabled = false

[[graphite]]
  enabled = false

[[collectd]]
  enabled = false

[[opentsdb]]
  enabled = false

[[udp]]
  enabled = false
"""


class InfluxError(RuntimeError):
    """influxd did not start, or answered a query with an error."""


def find_influxd() -> Optional[str]:
    return shutil.which("influxd")


class InfluxServer:
    """`influxd` in a temporary directory; `start()` returns once /ping answers 204."""

    def __init__(self, influxd: str = "influxd", root: Optional[Path] = None) -> None:
        """`root`: a directory to keep (the data outlives stop(); a benchmark re-times queries
        on it); by default a temporary one, removed by stop()."""
        self.influxd = influxd
        self.http_port = 0
        self.rpc_port = 0
        self._kept = root is not None
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="diskprobe-influxd-"))
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._log_path = self._root / "influxd.log"
        self._process: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def __enter__(self) -> InfluxServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> InfluxServer:
        last_error: Optional[InfluxError] = None
        for _ in range(START_ATTEMPTS):
            try:
                self._start_once()
                return self
            except InfluxError as error:
                last_error = error
                self._terminate()
                if "address already in use" not in str(error):
                    break
        self.stop()
        assert last_error is not None
        raise last_error

    def _listening(self) -> bool:
        """Our influxd holds the HTTP port: a server that took the port between free_ports()
        and influxd's bind answers /ping as well (seen: a benchmark's server beside the test
        suite answered from a test's influxd, whose own bind had failed)."""
        assert self._process is not None
        try:
            connections = psutil.Process(self._process.pid).net_connections("tcp")
        except psutil.Error:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == self.http_port
                   for c in connections)  # fmt: skip

    def _start_once(self) -> None:
        self.http_port, self.rpc_port = free_ports(2)
        config_path = self._root / "influxdb.conf"
        config_path.write_text(
            _CONFIG.format(root=self._root, rpc_port=self.rpc_port, http_port=self.http_port),
            encoding="utf-8",
        )
        # INFLUXDB_* variables override the config file: keep the caller's out of our server.
        env = {key: value for key, value in os.environ.items() if not key.startswith("INFLUXDB_")}
        with open(self._log_path, "ab") as log:
            self._process = subprocess.Popen(
                [self.influxd, "run", "-config", str(config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self._root,
            )
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise InfluxError(f"influxd exited with code {code} at start-up{self._log_tail()}")
            if self._ping() and self._listening():
                return
            time.sleep(0.05)
        raise InfluxError(
            f"influxd did not answer /ping on {self.url} within {START_TIMEOUT_SEC:.0f} s"
            f"{self._log_tail()}"
        )

    def _ping(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ping", timeout=1.0) as response:
                return bool(response.status == 204)
        except (OSError, urllib.error.URLError):
            return False

    def _log_tail(self) -> str:
        try:
            lines = self._log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return " (no influxd log)"
        tail = "\n".join(lines[-LOG_TAIL_LINES:])
        return f"; influxd log tail:\n{tail}" if tail else " (influxd log empty)"

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_SEC)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_SEC)

    def stop(self) -> None:
        """Terminate influxd (kill it if it lingers) and remove its temporary directory."""
        self._terminate()
        if not self._kept:
            shutil.rmtree(self._root, ignore_errors=True)

    # -- HTTP API ----------------------------------------------------------------------------

    def _request(
        self, method: str, path: str, params: dict[str, str], body: Optional[bytes] = None
    ) -> tuple[int, str]:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", "text/plain; charset=utf-8")
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SEC) as response:
                return int(response.status), response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode("utf-8", errors="replace")

    def create_database(self, name: str) -> None:
        self._statement(f"CREATE DATABASE {quote_ident(name)}", db=None, method="POST")

    def write(self, db: str, body: bytes, precision: str = "ns") -> tuple[int, str]:
        """POST line protocol to /write; the status (204 on success) and the response text."""
        return self._request("POST", "/write", {"db": db, "precision": precision}, body)

    def query(self, db: str, influxql: str) -> list[dict[str, Any]]:
        """Run InfluxQL; the "results" list of the JSON answer. Raises on any error."""
        return self._statement(influxql, db=db, method="GET")

    def _statement(self, influxql: str, db: Optional[str], method: str) -> list[dict[str, Any]]:
        params = {"q": influxql, "epoch": "ns"}
        if db is not None:
            params["db"] = db
        if method == "POST":
            status, text = self._request("POST", "/query", params, b"")
        else:
            status, text = self._request("GET", "/query", params)
        if status != 200:
            raise InfluxError(f"{influxql!r}: HTTP {status}: {text}")
        answer = json.loads(text)
        if "error" in answer:
            raise InfluxError(f"{influxql!r}: {answer['error']}")
        results: list[dict[str, Any]] = answer.get("results", [])
        for result in results:
            if "error" in result:
                raise InfluxError(f"{influxql!r}: {result['error']}")
        return results


def quote_ident(name: str) -> str:
    """An InfluxQL identifier in double quotes, with backslash and double quote escaped."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_string(text: str) -> str:
    """An InfluxQL string literal in single quotes, with backslash and single quote escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def series_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a single-statement answer as dicts (column name -> value), all series."""
    rows: list[dict[str, Any]] = []
    for series in results[0].get("series", []) if results else []:
        columns = series["columns"]
        rows.extend(dict(zip(columns, values)) for values in series.get("values", []))
    return rows
