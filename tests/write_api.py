"""A loopback stand-in for the InfluxDB v2 write API: every request's path and (gunzipped) body
kept, each answered 204. The `write_api` fixture (tests/conftest.py) serves it per test."""

from __future__ import annotations

import gzip
import http.server
import threading
from typing import Iterator

import pytest


class _WriteAPI(http.server.BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.bodies.append((self.path, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def write_api() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """(URL, received (path, body) pairs) of a loopback server answering writes with 204."""
    bodies: list[tuple[str, bytes]] = []
    handler = type("Handler", (_WriteAPI,), {"bodies": bodies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()
