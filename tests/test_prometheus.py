"""Prometheus text format for node_exporter's textfile collector: names from the schema, the
format as prometheus_client's parser and the real `prometheus-node-exporter` read it."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from diskprobe.metric import Metric
from diskprobe.schema import MEASUREMENTS, measurement
from diskprobe.schema.latency import LATENCY_BUCKET
from diskprobe.serializers import make_serializer
from diskprobe.serializers import prometheus_histogram as histogram
from diskprobe.serializers.prometheus import (
    FAMILIES,
    PrometheusSerializer,
    family,
    render_table,
)

from ci import skip_or_fail
from ports import free_port

ROOT = Path(__file__).resolve().parent.parent
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
NODE_EXPORTER = "prometheus-node-exporter"  # Debian's name for node_exporter
PROMTOOL = "promtool"  # Debian package prometheus
EXAMPLE_VALUES = {"float": 1.5, "int": 3, "bool": True, "str": "text"}
RAW_IO_COUNTERS = {
    *("reads", "reads_merged", "read_bytes", "read_time_ms"),
    *("writes", "writes_merged", "write_bytes", "write_time_ms"),
    *("io_time_ms", "weighted_io_time_ms"),
    *("discards", "discards_merged", "discard_bytes", "discard_time_ms"),
    *("flushes", "flush_time_ms"),
}


# -- a strict reading of the exposition format ------------------------------------------------


def parse_strict(text: str) -> dict[str, list[Sample]]:
    """{sample name: samples}, after checking what the parser forgives: HELP then TYPE once
    per family right before its samples, samples grouped, valid names, no timestamps."""
    assert text.endswith("\n"), text[-200:]
    declared: list[str] = []
    current, expect_type, kinds = "", "", {}
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            current = line.split(" ")[2]
            assert current not in declared, f"family {current} declared twice"
            assert METRIC_NAME.fullmatch(current), current
            declared.append(current)
            expect_type = current
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name == expect_type, f"TYPE {name} not right after its HELP"
            assert kind in ("counter", "gauge", "histogram"), line
            assert kind != "counter" or name.endswith("_total"), line
            assert kind != "histogram" or name == histogram.NAME, line  # the latency's only
            expect_type, kinds[name] = "", kind
        else:
            assert not line.startswith("#") and line, f"stray line {line!r}"
            assert current and not expect_type, f"sample before HELP/TYPE: {line!r}"
            suffixes = ("_bucket", "_sum", "_count") if kinds[current] == "histogram" else ("",)
            assert re.split(r"[{ ]", line, maxsplit=1)[0] in [current + end for end in suffixes], \
                f"{line!r} not {current}"  # fmt: skip
    samples: dict[str, list[Sample]] = {}
    for fam in text_string_to_metric_families(text):
        assert fam.type in ("counter", "gauge", "histogram") and fam.documentation, fam
        for sample in fam.samples:
            assert sample.timestamp is None, sample
            assert math.isfinite(sample.value), sample
            assert all(LABEL_NAME.fullmatch(k) for k in sample.labels), sample
            samples.setdefault(sample.name, []).append(sample)
    histograms = {f"{name}{end}" for name, kind in kinds.items() if kind == "histogram"
                  for end in ("_bucket", "_sum", "_count")}  # fmt: skip
    assert set(samples) <= set(declared) | histograms, set(samples) - set(declared)
    return samples


def value_of(samples: dict[str, list[Sample]], name: str, **labels: str) -> float:
    found = [s.value for s in samples.get(name, []) if labels.items() <= s.labels.items()]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


# -- names ------------------------------------------------------------------------------------


def test_every_schema_field_has_exactly_one_valid_name() -> None:
    names: dict[str, str] = {}
    for spec in MEASUREMENTS:
        tags = {tag.name for tag in spec.tags}
        assert all(LABEL_NAME.fullmatch(tag) and not tag.startswith("__") for tag in tags)
        assert len(FAMILIES[spec.name]) == len(spec.fields)
        for field, fam in zip(spec.fields, FAMILIES[spec.name]):
            assert fam == family(spec, field) and fam.field == field.name
            if (spec.name, field.name) in histogram.FIELDS:
                continue  # written in the histogram, never as this family
            assert METRIC_NAME.fullmatch(fam.name) and fam.name.startswith(f"{spec.name}_")
            assert not fam.name.startswith("diskprobe_diskprobe")
            where = f"{spec.name}.{field.name}"
            assert fam.name not in names, f"{where} collides with {names.get(fam.name)}"
            names[fam.name] = where
            if fam.type == "counter":
                assert fam.name.endswith("_total")
            else:
                assert fam.type == "gauge"
                reserved = ("_total", "_count", "_sum", "_bucket", "_created", "_info")
                assert fam.info == fam.name.endswith("_info"), fam.name
                assert fam.info or not fam.name.endswith(reserved), fam.name
            if fam.info:  # the text's label must not clash with a tag
                assert field.type == "str" and field.name not in tags
    # counters expose `<name>_total` samples; no gauge may be named like a counter's base
    bases = {name[: -len("_total")] for name in names if name.endswith("_total")}
    assert not bases & set(names)
    assert len(names) == sum(len(spec.fields) for spec in MEASUREMENTS) - len(histogram.FIELDS)


def test_base_units_in_names() -> None:
    for spec in MEASUREMENTS:
        for field, fam in zip(spec.fields, FAMILIES[spec.name]):
            name = fam.name.removesuffix("_total")
            assert not re.search(r"_(ms|sec|percent|minutes|hours|c)(_|$)", name), name
            if field.unit in ("ms", "s", "min", "h"):
                assert name.endswith("_seconds"), name
            if field.unit == "%":
                assert name.endswith("_ratio"), name
            if field.unit in ("B/s", "1/s"):
                assert name.endswith("_per_second") and fam.type == "gauge", name


@pytest.mark.parametrize(
    ("measurement_name", "field", "name", "kind"),
    [
        ("diskprobe_io", "reads_per_sec", "diskprobe_io_reads_per_second", "gauge"),
        ("diskprobe_io", "read_bytes_per_sec", "diskprobe_io_read_bytes_per_second", "gauge"),
        ("diskprobe_io", "read_await_ms", "diskprobe_io_read_await_seconds", "gauge"),
        ("diskprobe_io", "util_percent", "diskprobe_io_util_ratio", "gauge"),
        ("diskprobe_io", "reads", "diskprobe_io_reads_total", "counter"),
        ("diskprobe_io", "read_bytes", "diskprobe_io_read_bytes_total", "counter"),
        ("diskprobe_io", "read_time_ms", "diskprobe_io_read_time_seconds_total", "counter"),
        ("diskprobe_io", "interval_sec", "diskprobe_io_interval_seconds", "gauge"),
        ("diskprobe_fs", "inodes_total", "diskprobe_fs_inodes", "gauge"),
        ("diskprobe_fs", "responsive", "diskprobe_fs_responsive", "gauge"),
        ("diskprobe_fs", "time_to_full_sec", "diskprobe_fs_time_to_full_seconds", "gauge"),
        ("diskprobe_smart", "temperature_c", "diskprobe_smart_temperature_celsius", "gauge"),
        ("diskprobe_smart", "power_on_hours", "diskprobe_smart_power_on_seconds", "gauge"),
        ("diskprobe_smart", "percentage_used", "diskprobe_smart_life_used_ratio", "gauge"),
        ("diskprobe_smart", "verdict", "diskprobe_smart_verdict_info", "gauge"),
        ("diskprobe_smart_attr", "raw_string", "diskprobe_smart_attr_raw_string_info", "gauge"),
        ("diskprobe_agent", "duration_ms", "diskprobe_agent_duration_seconds", "gauge"),
    ],
)
def test_names(measurement_name: str, field: str, name: str, kind: str) -> None:
    spec = measurement(measurement_name)
    field_spec = spec.field(field)
    assert field_spec is not None
    fam = family(spec, field_spec)
    assert (fam.name, fam.type) == (name, kind)


def test_counters_are_the_raw_io_counters_and_the_latency_histograms() -> None:
    counters = {
        (fam.measurement, fam.field)
        for families in FAMILIES.values()
        for fam in families
        if fam.type == "counter"
    }
    raw = {("diskprobe_io", name) for name in RAW_IO_COUNTERS}
    latency = {("diskprobe_latency_bucket", "sum_sec"), ("diskprobe_latency_bucket", "total")}
    assert counters == raw | latency


def test_name_table_in_the_docs_is_generated() -> None:
    text = (ROOT / "telegraf" / "prometheus.md").read_text()
    match = re.search(
        "<!-- prometheus-names:start -->\n(.*?)<!-- prometheus-names:end -->", text, re.S
    )
    assert match, "telegraf/prometheus.md has no prometheus-names block"
    assert match.group(1) == render_table()


def every_field() -> list[Metric]:
    """One point per measurement carrying every schema field and every tag (a histogram
    bucket's bound a number: Prometheus parses it)."""
    return [
        Metric(
            spec.name,
            {tag.name: "0.001" if tag.name == "le" else f"{tag.name}-1" for tag in spec.tags},
            {field.name: EXAMPLE_VALUES[field.type] for field in spec.fields},
            1,
        )
        for spec in MEASUREMENTS
    ]


def test_every_field_is_written_once() -> None:
    """Each field once, in its family or, for the latency's, in the histogram: a bucket at
    the point's bound and at +Inf, _sum and _count."""
    inf = next(m for m in every_field() if m.measurement == LATENCY_BUCKET.name)
    inf = Metric(inf.measurement, {**inf.tags, "le": "+Inf"}, inf.fields, 1)  # sum_sec's point
    samples = parse_strict(PrometheusSerializer().serialize([*every_field(), inf]))
    expected = {fam.name for families in FAMILIES.values() for fam in families
                if (fam.measurement, fam.field) not in histogram.FIELDS}  # fmt: skip
    expected |= {f"{histogram.NAME}{end}" for end in ("_bucket", "_sum", "_count")}
    assert set(samples) == expected
    assert all(len(found) == 1 for name, found in samples.items() if "_bucket" not in name)
    assert [s.labels["le"] for s in samples[f"{histogram.NAME}_bucket"]] == ["0.001", "+Inf"]


def test_promtool_lint_accepts_every_name() -> None:
    """Prometheus' own linter: base units, no abbreviations, _total only on counters, HELP."""
    promtool = shutil.which(PROMTOOL)
    if promtool is None:
        skip_or_fail(f"{PROMTOOL} is not installed (apt-get install -y prometheus)")
    text = PrometheusSerializer().serialize(every_field())
    done = subprocess.run(
        [promtool, "check", "metrics"], input=text.encode(), capture_output=True, check=False
    )
    assert done.returncode == 0, (done.stdout + done.stderr).decode()


def test_make_serializer_knows_the_format() -> None:
    assert isinstance(make_serializer("prometheus", {}, 10.0), PrometheusSerializer)


# -- synthetic batches -------------------------------------------------------------------------


def _io(device: str, **fields: float | int) -> Metric:
    return Metric("diskprobe_io", {"device": device}, dict(fields), 1)


def _agent(collector: str) -> Metric:
    return Metric("diskprobe_agent", {"collector": collector, "version": "0"}, {"errors": 0}, 1)


def test_values_are_converted_to_base_units() -> None:
    text = PrometheusSerializer().serialize(
        [
            _io("sda", read_await_ms=2.5, util_percent=37.5, reads=7, read_time_ms=1234),
            Metric("diskprobe_fs", {"path": "/"}, {"responsive": True, "used_percent": 100.0}, 1),
            Metric("diskprobe_fs", {"path": "/x"}, {"responsive": False}, 1),
            Metric(
                "diskprobe_smart",
                {"device": "nvme0"},
                {"percentage_used": 103, "power_on_hours": 2, "controller_busy_minutes": 3},
                1,
            ),
        ]
    )
    samples = parse_strict(text)
    assert value_of(samples, "diskprobe_io_read_await_seconds") == 0.0025
    assert value_of(samples, "diskprobe_io_util_ratio") == 0.375
    assert value_of(samples, "diskprobe_io_reads_total") == 7
    assert value_of(samples, "diskprobe_io_read_time_seconds_total") == 1.234
    assert value_of(samples, "diskprobe_fs_responsive", path="/") == 1
    assert value_of(samples, "diskprobe_fs_responsive", path="/x") == 0
    assert value_of(samples, "diskprobe_fs_used_ratio") == 1.0
    assert value_of(samples, "diskprobe_smart_life_used_ratio") == 1.03
    assert value_of(samples, "diskprobe_smart_power_on_seconds") == 7200
    assert value_of(samples, "diskprobe_smart_controller_busy_seconds") == 180
    assert 'diskprobe_smart_power_on_seconds{device="nvme0"} 7200\n' in text  # ints exact
    assert "# TYPE diskprobe_io_reads_total counter\n" in text
    assert " 1 \n" not in text and not re.search(r"\} \S+ \S+\n", text)  # no timestamps


def test_labels_are_escaped_and_strings_become_info_metrics() -> None:
    odd = 'a"b\\c\nd,e=f g'
    text = PrometheusSerializer().serialize(
        [
            Metric(
                "diskprobe_smart",
                {"device": odd, "model": "", "serial": "S\udcff1"},
                {"verdict": 'warn "x"', "verdict_code": 1, "firmware": "\\"},
                1,
            ),
            Metric("diskprobe_smart_attr", {}, {"when_failed": "", "value": 100}, 1),
        ]
    )
    samples = parse_strict(text)
    (info,) = samples["diskprobe_smart_verdict_info"]
    assert info.value == 1
    assert info.labels == {"device": odd, "serial": "S%FF1", "verdict": 'warn "x"'}
    assert samples["diskprobe_smart_firmware_info"][0].labels["firmware"] == "\\"
    assert value_of(samples, "diskprobe_smart_verdict_code", device=odd) == 1
    assert 'diskprobe_smart_attr_when_failed_info{when_failed=""} 1\n' in text
    assert "diskprobe_smart_attr_value 100\n" in text  # no tags: no braces
    text.encode("utf-8")  # writable as UTF-8 whatever the tags held


def test_families_are_grouped_in_schema_order() -> None:
    text = PrometheusSerializer().serialize(
        [
            _io("sda", reads_per_sec=1.0, await_ms=1.0),
            _agent("io"),
            Metric("diskprobe_fs", {"path": "/"}, {"used_bytes": 5}, 1),
            _io("sdb", await_ms=2.0, reads_per_sec=2.0),
        ]
    )
    parse_strict(text)  # asserts each family is declared once, its samples together
    heads = re.findall(r"^# TYPE (\S+)", text, re.M)
    assert heads == [
        "diskprobe_io_reads_per_second",
        "diskprobe_io_await_seconds",
        "diskprobe_fs_used_bytes",
        "diskprobe_agent_errors",
    ]
    assert text.count("diskprobe_io_await_seconds{") == 2


def test_unwritable_values_and_unknown_names_are_left_out() -> None:
    text = PrometheusSerializer().serialize(
        [
            _io("sda", read_await_ms=math.nan, write_await_ms=math.inf, await_ms=1.0),
            _io("sdb", read_await_ms="text", reads=10**400),  # type: ignore[arg-type]
            Metric("not_diskprobe", {"device": "x"}, {"value": 1}, 1),
            Metric("diskprobe_io", {"device": "sdc", "bad-tag": "x"}, {"nonsense": 1}, 1),
        ]
    )
    samples = parse_strict(text)
    assert set(samples) == {"diskprobe_io_await_seconds"}
    assert "bad-tag" not in text and "nan" not in text.lower() and "inf" not in text.lower()
    assert PrometheusSerializer().serialize([]) == ""


def test_a_series_keeps_its_latest_point_until_replaced_or_stale() -> None:
    clock = [0.0]
    serializer = PrometheusSerializer(stale_after=100.0, clock=lambda: clock[0])
    smart = Metric("diskprobe_smart", {"device": "sda"}, {"temperature_c": 30}, 1)
    serializer.serialize([_io("sda", await_ms=1.0), _io("sdb", await_ms=2.0), _agent("io"), smart])
    clock[0] = 10.0
    # io ran and saw only sda: sdb is gone; SMART (read every 30 min) is carried forward
    samples = parse_strict(serializer.serialize([_io("sda", await_ms=3.0), _agent("io")]))
    assert [s.labels["device"] for s in samples["diskprobe_io_await_seconds"]] == ["sda"]
    assert value_of(samples, "diskprobe_io_await_seconds") == 0.003
    assert value_of(samples, "diskprobe_smart_temperature_celsius", device="sda") == 30
    clock[0] = 20.0
    # only filesystems ran: io's series stay as they were
    samples = parse_strict(serializer.serialize([_agent("filesystems")]))
    assert value_of(samples, "diskprobe_io_await_seconds", device="sda") == 0.003
    # io ran and failed (no metrics, errors=1): its series go
    samples = parse_strict(serializer.serialize([_agent("io")]))
    assert "diskprobe_io_await_seconds" not in samples
    clock[0] = 101.0
    samples = parse_strict(serializer.serialize([_agent("io")]))
    assert "diskprobe_smart_temperature_celsius" not in samples  # stale after 100 s
    # two points of one series in a batch: the last one wins, one sample
    samples = parse_strict(serializer.serialize([_io("sda", reads=1), _io("sda", reads=2)]))
    assert [s.value for s in samples["diskprobe_io_reads_total"]] == [2]



def test_latency_gauges_go_with_the_interval_and_the_histogram_stays() -> None:
    """A device-operation idle since the last run has no percentile gauge (not one from hours
    ago, for stale_after), while its cumulative histogram and its _sum stay."""
    serializer = PrometheusSerializer(stale_after=3600.0, clock=lambda: 0.0)
    tags = {"device": "sda", "op": "read"}
    busy = [
        Metric("diskprobe_latency", tags, {"p99_ms": 40.0}, 1),
        Metric("diskprobe_process_latency", {**tags, "process": "dd"}, {"wait_sec": 2.0}, 1),
        Metric(LATENCY_BUCKET.name, {**tags, "le": "+Inf"}, {"total": 9, "sum_sec": 0.5}, 1),
        _agent("latency"),
    ]
    samples = parse_strict(serializer.serialize(busy))
    assert value_of(samples, "diskprobe_latency_p99_seconds") == 0.04
    samples = parse_strict(serializer.serialize([_agent("latency")]))
    assert "diskprobe_latency_p99_seconds" not in samples
    assert "diskprobe_process_latency_wait_seconds" not in samples
    assert value_of(samples, f"{histogram.NAME}_sum") == 0.5
    assert value_of(samples, f"{histogram.NAME}_count") == 9


# -- the real diskprobe ------------------------------------------------------------------------


def _config(tmp_path: Path, interval: str = "1s") -> Path:
    config = tmp_path / "diskprobe.toml"
    config.write_text(
        f"state_file = {json.dumps(str(tmp_path / 'state.json'))}\n"
        f'interval = "{interval}"\n'
        "[io]\ncounters = true\n"
        "[smart]\nenabled = false\n"
        '[output]\nformat = "prometheus"\n'
    )
    return config


def _diskprobe() -> list[str]:
    script = Path(sys.executable).parent / "diskprobe"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "diskprobe"]


def _env() -> dict[str, str]:
    moved = ("HOST_PROC", "HOST_SYS", "HOST_RUN", "HOST_MOUNT_PREFIX")
    return {key: value for key, value in os.environ.items() if key not in moved}


def _check_real_output(text: str) -> dict[str, list[Sample]]:
    samples = parse_strict(text)
    for name in ("diskprobe_io_reads_per_second", "diskprobe_io_reads_total"):
        assert samples.get(name), f"no {name} in:\n{text}"
    agents = {s.labels["collector"] for s in samples["diskprobe_agent_duration_seconds"]}
    assert {"io", "filesystems"} <= agents, agents
    for sample in samples["diskprobe_io_util_ratio"]:
        assert 0.0 <= sample.value <= 1.0001, sample
    return samples


def test_diskprobe_once_writes_a_valid_textfile(tmp_path: Path) -> None:
    textfile = tmp_path / "out" / "diskprobe.prom"
    textfile.parent.mkdir()
    textfile_args = ("--format", "prometheus", "--textfile", str(textfile))
    done = subprocess.run(
        [*_diskprobe(), "--config", str(_config(tmp_path)), "--once", *textfile_args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"", "with --textfile nothing goes to stdout"
    assert os.listdir(textfile.parent) == ["diskprobe.prom"], "a temp file was left behind"
    assert textfile.stat().st_mode & 0o777 == 0o644
    _check_real_output(textfile.read_text(encoding="utf-8"))


# -- the real node_exporter -----------------------------------------------------------------


def _scrape(url: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return str(response.read().decode("utf-8"))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture
def node_exporter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(metrics URL, textfile directory) of a `prometheus-node-exporter` on a loopback port."""
    binary = shutil.which(NODE_EXPORTER)
    if binary is None:
        skip_or_fail(f"{NODE_EXPORTER} is not installed (apt-get install -y {NODE_EXPORTER})")
    directory = tmp_path / "textfile"
    directory.mkdir()
    port = free_port()
    log = (tmp_path / "node_exporter.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--web.listen-address=127.0.0.1:{port}",
            f"--collector.textfile.directory={directory}",
            "--collector.disable-defaults",
            "--collector.textfile",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        _scrape(url)
        yield url, directory
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.slow
def test_node_exporter_serves_the_textfile(node_exporter: tuple[str, Path], tmp_path: Path) -> None:
    url, directory = node_exporter
    textfile = directory / "diskprobe.prom"
    probe = subprocess.Popen(
        [*_diskprobe(), "--config", str(_config(tmp_path)), "--textfile", str(textfile)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        time.sleep(3.5)  # a few batches, each one rename
        assert probe.poll() is None, probe.communicate()[1].decode()
        assert parse_served(_scrape(url))  # served while diskprobe is rewriting the file
        stdout, stderr = probe.communicate(b"", timeout=10)  # EOF on stdin: diskprobe stops
    finally:
        with contextlib.suppress(OSError):
            probe.kill()
    assert probe.returncode == 0, stderr.decode()
    assert stdout == b"" and "Traceback" not in stderr.decode(), stderr.decode()
    # a second writer of the same families (synthetic, odd labels), in the same directory
    odd = Metric("diskprobe_io", {"device": 'odd "dev"\\\n', "model": "M"}, {"await_ms": 7.0}, 1)
    (directory / "synthetic.prom").write_text(PrometheusSerializer().serialize([odd]))
    expected = parse_strict(textfile.read_text(encoding="utf-8"))
    _check_real_output(textfile.read_text(encoding="utf-8"))

    page = _scrape(url)
    served = parse_served(page)
    assert value_of(served, "node_textfile_scrape_error") == 0, "node_exporter rejected a file"
    for name, samples in expected.items():
        for sample in samples:
            assert value_of(served, name, **sample.labels) == sample.value, (name, sample)
    file_heads = heads(textfile.read_text(encoding="utf-8"))
    assert {k: v for k, v in heads(page).items() if k in file_heads} == file_heads  # HELP, TYPE
    # the second file's series of the same family, with a label the others lack, served too
    assert value_of(served, "diskprobe_io_await_seconds", device='odd "dev"\\\n') == 0.007


def parse_served(text: str) -> dict[str, list[Sample]]:
    """node_exporter's page: {sample name: samples}; every family typed and documented."""
    samples: dict[str, list[Sample]] = {}
    for fam in text_string_to_metric_families(text):
        assert fam.type != "unknown" and fam.documentation, fam
        for sample in fam.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def heads(text: str) -> dict[str, tuple[str, str]]:
    """{family name: (type, HELP text)}."""
    return {fam.name: (fam.type, fam.documentation) for fam in text_string_to_metric_families(text)}
