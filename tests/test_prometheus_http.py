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
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from prometheus_client.samples import Sample

from test_http_auth_tls import Pki, basic, make_hash
from test_prometheus import _config, _diskprobe, _env, parse_strict

from ci import skip_or_fail
from ports import free_port

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


@contextlib.contextmanager
def _running_diskprobe(
    tmp_path: Path, extra: list[str], ready: Callable[[str], bool]
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """(host:port, the process) of `diskprobe --listen 127.0.0.1:PORT *extra`, once ready."""
    target = f"127.0.0.1:{free_port()}"
    probe = subprocess.Popen(
        [*_diskprobe(), "--config", str(_config(tmp_path, INTERVAL)), "--listen", target,
         *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
    )  # fmt: skip
    try:
        _wait("diskprobe's first batch", lambda: ready(target))
        yield target, probe
    finally:
        probe.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            probe.wait(10)
        probe.kill()


@contextlib.contextmanager
def _running_prometheus(tmp_path: Path, jobs: str) -> Iterator[str]:
    """The API URL of a Prometheus server scraping every second with `jobs` (YAML)."""
    binary = shutil.which(PROMETHEUS)
    if binary is None:
        skip_or_fail(f"{PROMETHEUS} is not installed (apt-get install -y prometheus)")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global: {{scrape_interval: 1s, scrape_timeout: 1s}}\nscrape_configs:\n{jobs}"
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    server = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait("Prometheus to start", lambda: _get(f"http://127.0.0.1:{port}/-/ready")[0] == 200)
        yield f"http://127.0.0.1:{port}/api/v1"
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(20)
        server.kill()
        log.close()


@pytest.fixture
def diskprobe_http(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """(the /metrics URL, the process) of `diskprobe --listen 127.0.0.1:PORT`."""
    ready = lambda target: _get(f"http://{target}/metrics")[0] == 200  # noqa: E731
    with _running_diskprobe(tmp_path, [], ready) as (target, probe):
        yield f"http://{target}/metrics", probe


@pytest.fixture
def prometheus(tmp_path: Path, diskprobe_http: tuple[str, Any]) -> Iterator[str]:
    """The API URL of a Prometheus server scraping diskprobe every second."""
    target = urllib.parse.urlsplit(diskprobe_http[0]).netloc
    job = f"  - job_name: diskprobe\n    static_configs: [{{targets: ['{target}']}}]\n"
    with _running_prometheus(tmp_path, job) as api:
        yield api


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
        (["--listen", ":0", "--web.config.file", "/nonexistent/web.yml"], "/nonexistent/web.yml"),
        (["--web.config.file", "/etc/hostname"], 'web_config_file is for kind = "http" only'),
        (["--listen", ":0", "--web.config.file", "/etc/hostname"], "/etc/hostname:1:"),
    ],
    ids=[
        "no-port",
        "port-range",
        "bad-ipv4",
        "wrong-format",
        "default",
        "web-missing",
        "web-without-http",
        "web-not-yaml",
    ],
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


@pytest.mark.slow
def test_prometheus_scrapes_over_tls_with_basic_auth_and_a_wrong_password_is_refused(
    tmp_path: Path,
) -> None:
    """--web.config.file as node_exporter's: Prometheus verifies diskprobe's certificate
    against the CA and sends basic auth; the job with a wrong password gets 401 (up 0)."""
    pki = Pki(tmp_path)
    web = tmp_path / "web.yml"
    web.write_text(
        f"tls_server_config:\n  cert_file: {pki.server_cert}\n  key_file: {pki.server_key}\n"
        f"basic_auth_users:\n  prom: {make_hash(b'scrape-secret')}\n"
        "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
    )
    context = ssl.create_default_context(cafile=pki.ca)

    def get(target: str, password: bytes | None) -> tuple[int, dict[str, str], bytes]:
        headers = {"Authorization": basic(b"prom", password)} if password else {}
        request = urllib.request.Request(f"https://{target}/metrics", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    ready = lambda target: get(target, b"scrape-secret")[0] == 200  # noqa: E731
    extra = ["--web.config.file", str(web)]
    with _running_diskprobe(tmp_path, extra, ready) as (target, probe):
        status, headers, _ = get(target, None)
        assert status == 401 and headers["WWW-Authenticate"] == "Basic", headers
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert get(target, b"wrong")[0] == 401
        with pytest.raises(OSError):  # plain HTTP on the TLS port: no answer, a reset
            urllib.request.urlopen(f"http://{target}/metrics", timeout=5).read()
        tls = f"    scheme: https\n    tls_config: {{ca_file: '{pki.ca}'}}\n"
        jobs = "".join(
            f"  - job_name: {job}\n{tls}    basic_auth: {{username: prom, password: '{word}'}}\n"
            f"    static_configs: [{{targets: ['{target}']}}]\n"
            for job, word in (("diskprobe", "scrape-secret"), ("intruder", "guess"))
        )
        with _running_prometheus(tmp_path, jobs) as api:
            up = lambda: {r["metric"]["job"]: r["value"][1] for r in _query(api, "up")}  # noqa: E731
            _wait("both jobs scraped", lambda: len(up()) == 2)
            _wait("up == 1 for the right password", lambda: up()["diskprobe"] == "1")
            assert up()["intruder"] == "0"
            stored = _query(api, 'diskprobe_io_reads_total{job="diskprobe"}')
            assert stored and not _query(api, '{job="intruder", __name__=~"diskprobe_.+"}')
        assert probe.poll() is None
