"""diskprobe serving /metrics itself (`--listen`, [output] kind = "http"), scraped by a real
Prometheus server (Debian package prometheus, on loopback): `up` is 1 and PromQL returns
diskprobe's series with the values of the batch served; promtool accepts the page.
The output's HTTP behaviour (gzip, slow and stuck clients, 503 before a batch) is in
test_http_output.py."""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from prometheus_client.samples import Sample

from test_prometheus import _config, _diskprobe, _env, _free_port, parse_strict

from ci import skip_or_fail

PROMETHEUS = "prometheus"
PROMTOOL = "promtool"
INTERVAL = "4s"  # diskprobe's batches; Prometheus scrapes every second


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _wait(what: str, check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            result = check()
            if result:
                return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def diskprobe_http(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """(the /metrics URL, the process) of `diskprobe --listen 127.0.0.1:PORT`."""
    port = _free_port()
    probe = subprocess.Popen(
        [*_diskprobe(), "--config", str(_config(tmp_path, INTERVAL)),
         "--listen", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        _wait("diskprobe's first batch", lambda: _get(url)[0] == 200)
        yield url, probe
    finally:
        probe.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            probe.wait(10)
        probe.kill()


@pytest.fixture
def prometheus(tmp_path: Path, diskprobe_http: tuple[str, Any]) -> Iterator[str]:
    """The API URL of a Prometheus server scraping diskprobe every second."""
    binary = shutil.which(PROMETHEUS)
    if binary is None:
        skip_or_fail(f"{PROMETHEUS} is not installed (apt-get install -y prometheus)")
    target = urllib.parse.urlsplit(diskprobe_http[0]).netloc
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: diskprobe\n    static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    server = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    api = f"http://127.0.0.1:{port}/api/v1"
    try:
        _wait("Prometheus to start", lambda: _get(f"http://127.0.0.1:{port}/-/ready")[0] == 200)
        yield api
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(20)
        server.kill()
        log.close()


def _query(api: str, promql: str) -> list[dict[str, Any]]:
    status, _, body = _get(f"{api}/query?" + urllib.parse.urlencode({"query": promql}))
    answer = json.loads(body)
    assert status == 200 and answer["status"] == "success", answer
    return list(answer["data"]["result"])


def _page(url: str) -> str:
    return _get(url)[2].decode("utf-8")


@pytest.mark.slow
def test_prometheus_scrapes_diskprobe_and_stores_the_served_batch(
    diskprobe_http: tuple[str, Any], prometheus: str
) -> None:
    url, probe = diskprobe_http
    _wait("up == 1", lambda: [r for r in _query(prometheus, "up") if r["value"][1] == "1"])
    # A batch Prometheus has scraped: the page did not change from before a scrape (1 s) to
    # after the query, so the newest stored sample of each series came from this page.
    for _ in range(10):
        before = _page(url)
        time.sleep(1.5)
        stored = _query(prometheus, '{__name__=~"diskprobe_.+", job="diskprobe"}')
        if _page(url) == before:
            break
    else:
        raise AssertionError("the page changed under every query")
    served = parse_strict(before)
    by_series = {_key(r["metric"]): float(r["value"][1]) for r in stored}
    compared = 0
    for samples in served.values():
        for sample in samples:
            assert by_series.get(_key_of(sample)) == sample.value, sample
            compared += 1
    assert compared >= 20 and len(by_series) == compared, (compared, len(by_series))
    assert probe.poll() is None


def _key(labels: dict[str, str]) -> tuple[str, ...]:
    kept = {k: v for k, v in labels.items() if k not in ("job", "instance")}
    return tuple(sorted(f"{k}={v}" for k, v in kept.items()))


def _key_of(sample: Sample) -> tuple[str, ...]:
    return _key({"__name__": sample.name, **sample.labels})


def test_the_served_page_passes_promtool_and_gzip_is_the_same_page(
    diskprobe_http: tuple[str, Any],
) -> None:
    promtool = shutil.which(PROMTOOL)
    if promtool is None:
        skip_or_fail(f"{PROMTOOL} is not installed (apt-get install -y prometheus)")
    url, _ = diskprobe_http
    status, headers, body = _get(url, {"Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("Content-Encoding") == "gzip", headers
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers
    page = gzip.decompress(body)
    done = subprocess.run([promtool, "check", "metrics"], input=page, capture_output=True)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    parse_strict(page.decode("utf-8"))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--listen", "nocolon"], "expected ADDRESS:PORT"),
        (["--listen", "127.0.0.1:99999"], "port from 0 to 65535"),
        (["--listen", "300.1.1.1:9100"], "300.1.1.1"),
        (["--listen", "127.0.0.1:0", "--format", "influx"], 'serves format = "prometheus" only'),
        (["--output", "http", "--format", "prometheus"], None),  # the default listen is valid
    ],
    ids=["no-port", "port-range", "bad-ipv4", "wrong-format", "default"],
)
def test_a_bad_listen_or_format_is_one_config_error_at_start(
    tmp_path: Path, arguments: list[str], expected: str | None
) -> None:
    config = tmp_path / "diskprobe.toml"
    config.write_text("[smart]\nenabled = false\n")
    done = subprocess.run(
        [*_diskprobe(), "--config", str(config), *arguments, "doctor"],
        capture_output=True, text=True, env=_env(), timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("E!")]
    if expected is None:
        assert not any("config:" in line for line in errors), done.stderr
        return
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert errors[0].startswith("E! config: ") and expected in errors[0], errors


def test_a_port_in_use_is_one_error_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*_diskprobe(), "--config", str(_config(tmp_path)), "--listen", f"127.0.0.1:{port}"],
            capture_output=True, text=True, env=_env(), timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("E!")]
    assert errors == [f"E! http: cannot listen on 127.0.0.1:{port}: Address already in use; "
                      "exiting"], done.stderr  # fmt: skip
    assert "Traceback" not in done.stderr
