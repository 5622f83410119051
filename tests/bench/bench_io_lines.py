"""bench_io.py's section 4: InfluxSerializer against influxdb-client's Point.to_line_protocol():
time per batch, and whether the output is identical, or equivalent once parsed (by the
small line-protocol parser here), with the differences.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from bench_io_host import (
    FIRST_TIME_NS,
    CycleClock,
    SyntheticHost,
    make_collector,
    next_cycle,
    summary,
)
from bench_process_io import cpu_ms  # CPU ms of each of n calls

from diskprobe.config import IoConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.serializers.influx import InfluxSerializer


def _split(text: str, separator: str) -> list[str]:
    """Split on `separator` outside backslash escapes and double quotes; escapes are kept."""
    parts: list[str] = []
    current: list[str] = []
    quoted, index = False, 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            current.append(text[index : index + 2])
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text) and text[index + 1] in ',= "\\':
            out.append(text[index + 1])
            index += 2
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


Parsed = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, FieldValue], ...], int]


def parse_line(line: str) -> Parsed:
    """Line protocol to (measurement, sorted tags, sorted typed fields, timestamp)."""
    head, fields_text, stamp = _split(line, " ")
    series = _split(head, ",")
    tags = []
    for item in series[1:]:
        tag_key, tag_value = _split(item, "=")
        tags.append((_unescape(tag_key), _unescape(tag_value)))
    fields: list[tuple[str, FieldValue]] = []
    for item in _split(fields_text, ","):
        key, text = _split(item, "=")
        value: FieldValue
        if text.startswith('"'):
            value = _unescape(text[1:-1])
        elif text in ("true", "false"):
            value = text == "true"
        elif text.endswith("i"):
            value = int(text[:-1])
        else:
            value = float(text)
        fields.append((_unescape(key), value))
    fields.sort(key=lambda pair: pair[0])
    return _unescape(series[0]), tuple(sorted(tags)), tuple(fields), int(stamp)


def to_points(metrics: list[Metric]) -> list[Any]:
    import influxdb_client

    client: Any = influxdb_client  # untyped package
    points = []
    for metric in metrics:
        point = client.Point(metric.measurement)
        for key, tag in metric.tags.items():
            point.tag(key, tag)
        for key, value in metric.fields.items():
            point.field(key, value)
        points.append(point.time(metric.time_ns, client.WritePrecision.NS))
    return points


def client_lines(metrics: list[Metric]) -> list[str]:
    """influxdb-client's line protocol of each metric ("" where it writes nothing)."""
    return [point.to_line_protocol() for point in to_points(metrics)]


def our_lines(metrics: list[Metric]) -> list[str]:
    """InfluxSerializer's line of each metric ("" where it writes nothing)."""
    serializer = InfluxSerializer()
    return [serializer.serialize([metric]).rstrip("\n") for metric in metrics]


def edge_case_metrics() -> list[Metric]:
    """Values on which line-protocol writers are known to differ."""
    t = FIRST_TIME_NS
    return [
        Metric("diskprobe_io", {"device": "sda"}, {"whole": 2.0, "tiny": 1e-7, "huge": 1e16}, t),
        Metric("diskprobe_io", {"device": "sda"}, {"neg_zero": -0.0, "big": 2**62, "n": 0}, t),
        Metric("diskprobe_io", {"device": "sda"}, {"nan": math.nan, "inf": math.inf, "v": 1.5}, t),
        Metric("diskprobe_io", {"device": "sda"}, {"too_big": 2**64, "v": 1}, t),
        Metric("diskprobe_io", {"device": "sda"}, {"flag": True, "text": 'say "hi" \\o/'}, t),
        Metric("diskprobe_io", {"model": "Samsung SSD 860,EVO=1"}, {"x": 1}, t),
        Metric("diskprobe_io", {"serial": "ends-with\\"}, {"x": 1}, t),
        Metric("diskprobe_io", {"dm_name": "tab\there\nnewline"}, {"x": 1}, t),
        Metric("diskprobe_io", {"empty": "", "device": "sdb"}, {"x": 1}, t),
        Metric("disk probe,io", {"device": "sdc"}, {"field key=1": 1, "a,b": 2.5}, t),
        Metric("diskprobe_io", {"device": "sdd"}, {"nan_only": math.nan}, t),
    ]


@dataclass
class Comparison:
    identical: int = 0
    equivalent: int = 0
    different: int = 0
    examples: list[str] = field(default_factory=list)


def compare_lines(ours: list[str], theirs: list[str], examples: int) -> Comparison:
    result = Comparison()
    for mine, other in zip(ours, theirs):
        if mine == other:
            result.identical += 1
            continue
        try:
            same = bool(mine and other) and parse_line(mine) == parse_line(other)
        except ValueError:
            same = False
        if same:
            result.equivalent += 1
        else:
            result.different += 1
        if len(result.examples) < examples:
            verdict = "equivalent" if same else "DIFFERENT"
            result.examples.append(
                f"{verdict}:\n        ours:   {mine!r}\n        client: {other!r}"
            )
    return result


def serializer_report(host: SyntheticHost, batches: int) -> str:
    clock = CycleClock()
    collector = make_collector(host, IoConfig(exclude=[]), clock)
    collector.collect()
    next_cycle(host, clock)
    metrics = collector.collect().metrics
    serializer = InfluxSerializer()
    text = serializer.serialize(metrics)
    points = to_points(metrics)

    ours_ms = cpu_ms(lambda: serializer.serialize(metrics), batches)
    fresh_ms = cpu_ms(lambda: InfluxSerializer().serialize(metrics), batches)
    client_ms = cpu_ms(lambda: "\n".join(client_lines(metrics)), batches)
    client_lp_ms = cpu_ms(lambda: "\n".join(p.to_line_protocol() for p in points), batches)

    batch = compare_lines(our_lines(metrics), client_lines(metrics), examples=1)
    edges = edge_case_metrics()
    edge = compare_lines(our_lines(edges), client_lines(edges), examples=len(edges))
    fields_per_point = statistics.fmean(len(metric.fields) for metric in metrics)
    rows = [
        f"  batch: {len(metrics)} points x {fields_per_point:.0f} fields, "
        f"{len(text) / 1e6:.2f} MB; CPU ms per batch:",
        f"    {'InfluxSerializer.serialize() (warm caches)':<48} {summary(ours_ms)}",
        f"    {'InfluxSerializer().serialize() (new each batch)':<48} {summary(fresh_ms)}",
        f"    {'influxdb-client Point() + to_line_protocol()':<48} {summary(client_ms)}",
        f"    {'influxdb-client to_line_protocol() only':<48} {summary(client_lp_ms)}",
        f"  the batch: {batch.identical} lines identical, {batch.equivalent} equivalent once "
        f"parsed, {batch.different} different",
    ]
    rows += [f"    {example}" for example in batch.examples]
    rows.append(
        f"  edge cases: {edge.identical} identical, {edge.equivalent} equivalent, "
        f"{edge.different} different"
    )
    rows += [f"    {example}" for example in edge.examples]
    return "\n".join(rows)
