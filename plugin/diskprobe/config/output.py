"""The [output] section: where batches go (kind) and how they are written (format).

Each kind is a module of diskprobe.outputs; the cross-field rules between these keys (a
textfile needs a path, InfluxDB takes line protocol only) are in config/checks.py (check_config).
"""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe.config.sections import TIMEOUT_MAX, option

OUTPUT_KINDS = ("stdout", "textfile", "influxdb", "http")
OUTPUT_FORMATS = ("influx", "collectd", "prometheus")
# Prometheus' default port allocations hand out 9100 and up, one per listed exporter: 9100-9999
# are all taken (diskprobe's neighbours: 9257, 9541 and 9633 are SMART exporters) and the list
# continues past 10,000. diskprobe is not on it (an entry needs the public repository), so
# its default sits outside the range the list allocates from, as Prometheus' "writing
# exporters" guide advises for unlisted exporters.
DEFAULT_PORT = 19100
DEFAULT_LISTEN = f":{DEFAULT_PORT}"


@dataclass
class OutputConfig:
    """Where batches go: stdout (Telegraf, collectd), a textfile, InfluxDB or HTTP /metrics."""

    kind: str = option(
        "stdout",
        '"stdout" (Telegraf execd, collectd exec); "textfile": each batch replaces the file '
        '`path` atomically (node_exporter\'s textfile collector); or "influxdb": write through '
        "the InfluxDB v2 write API (InfluxDB 1.8+, 2.x, 3.x and compatible servers), batched, "
        'gzip, with retries and an on-disk spool (the InfluxDB keys below); or "http": serve '
        "the latest batch at http://`listen`/metrics for Prometheus to scrape "
        '(format = "prometheus").',
        choices=OUTPUT_KINDS,
    )
    format: str = option(
        "influx",
        'What is written: "influx" (line protocol, Telegraf), "collectd" (exec PUTVAL lines) '
        'or "prometheus" (text exposition, for node_exporter\'s textfile collector). '
        'kind = "influxdb" takes "influx" only.',
        choices=OUTPUT_FORMATS,
    )
    path: str = option(
        "",
        'kind = "textfile" (and only it): the file each batch replaces, in node_exporter\'s '
        '--collector.textfile.directory, e.g. "/var/lib/prometheus/node-exporter/diskprobe.prom"'
        ' (with format = "prometheus").',
    )
    listen: str = option(
        DEFAULT_LISTEN,
        'kind = "http": the address and port /metrics is served on, "ADDRESS:PORT"; ":PORT" is '
        f"every interface. {DEFAULT_PORT} is outside the range of Prometheus' default exporter "
        "ports. A scrape never triggers a collection: it gets the last complete batch.",
    )
    web_config_file: str = option(
        "",
        'kind = "http": TLS and basic auth from a web configuration file in the exporter '
        "toolkit's format (node_exporter's --web.config.file: tls_server_config, "
        "basic_auth_users, http_server_config.headers); read at start; needs the web "
        "extra: pip install 'diskprobe[web]'. Empty: plain HTTP.",
    )
    url: str = option(
        "",
        'InfluxDB URL: http or https, a host and an optional port, e.g. "http://influxdb:8086".',
        "url",
    )
    org: str = option("", "InfluxDB organization (any value for InfluxDB 1.8).")
    bucket: str = option("", 'InfluxDB bucket (InfluxDB 1.8: "database/retention_policy").')
    token_file: str = option(
        "",
        "File holding the InfluxDB API token (read at start); if empty, the INFLUX_TOKEN variable. "
        "Never logged.",
    )
    timeout: float = option(
        10.0, "Longest one InfluxDB write request may take.", "duration", maximum=TIMEOUT_MAX
    )
    spool_dir: str = option(
        "/var/lib/diskprobe/spool",
        "Batches not yet written to InfluxDB wait here, replayed in order on recovery and "
        "after a restart.",
        "path",
    )
    send_jitter: float = option(
        5.0,
        "kind = \"influxdb\": each send first waits a random part of this, so that a fleet's "
        "hosts, collecting at the same second, do not all write at that second (Telegraf's "
        'flush_jitter); collection stays aligned, and exit sends at once. "0s": no jitter.',
        "duration",
        minimum=0.0,
        maximum=TIMEOUT_MAX,
    )
    drain_speedup: float = option(
        4.0,
        'kind = "influxdb": a backlog (after an outage, or at start with batches left in '
        "spool_dir) drains at this many times the host's own write rate, in paced, jittered "
        "requests: the fleet catching up writes at most this many times its usual load, and "
        "an outage drains in its length divided by this. 0: as fast as the server answers.",
        maximum=1000.0,
    )
    spool_max_bytes: int = option(
        104857600,
        "Size limit of spool_dir; beyond it the oldest batches are dropped (and counted).",
        maximum=2**40,
    )
