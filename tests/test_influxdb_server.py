"""The tests' own InfluxDB launcher (tests/influxdb_server.py) against a port taken in between.

free_ports() finds a port free, then influxd binds it: another process can take it between
the two. That server then answers /ping while our influxd exits with "address already in use";
start() must not take the stranger for ours.
"""

from __future__ import annotations

import http.server
import threading
from typing import Iterator

import pytest

import influxdb_server
from ci import skip_or_fail
from influxdb_server import InfluxServer, find_influxd
from ports import free_ports


class _Pong(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stranger() -> Iterator[int]:
    """A port with another HTTP server on it that answers /ping as influxd does."""
    server = http.server.HTTPServer(("127.0.0.1", free_ports(1)[0]), _Pong)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_port_taken_before_influxd_binds_it_is_retried(
    stranger: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    influxd = find_influxd()
    if influxd is None:
        skip_or_fail("influxd (InfluxDB 1.x) is not on PATH")
    handed: list[list[int]] = []

    def ports(count: int) -> list[int]:
        # The first pick is the stranger's port, as if it had bound it just after the check.
        picked = [stranger, *free_ports(count - 1)] if not handed else free_ports(count)
        handed.append(picked)
        return picked

    monkeypatch.setattr(influxdb_server, "free_ports", ports)
    server = InfluxServer(influxd).start()
    try:
        assert len(handed) == 2 and server.http_port != stranger, handed
        server.create_database("mine")
        assert "mine" in str(server.query("mine", "SHOW DATABASES"))
    finally:
        server.stop()
