"""Line protocol details that need no server: types, order, escaping, unrepresentable values."""

from __future__ import annotations

from diskprobe.metric import Metric
from diskprobe.serializers import make_serializer
from diskprobe.serializers.influx import (
    InfluxSerializer,
    escape_field_key,
    escape_measurement,
    escape_tag,
)

from lineproto import parse_line


def test_types_tag_order_and_timestamp() -> None:
    metric = Metric(
        "diskprobe_io",
        {"serial": "S1", "device": "sda", "model": "M"},
        {"util_percent": 12.5, "in_flight": 3, "ok": True, "bad": False, "name": "x"},
        1_700_000_000_123_456_789,
    )
    line = InfluxSerializer().line(metric)
    assert line == (
        "diskprobe_io,device=sda,model=M,serial=S1 "
        'util_percent=12.5,in_flight=3i,ok=true,bad=false,name="x" 1700000000123456789'
    )
    point = parse_line(line)
    assert point.fields == metric.fields and point.tags == metric.tags


def test_whole_floats_stay_floats() -> None:
    line = InfluxSerializer().line(Metric("m", {}, {"v": 0.0, "w": 3.0}, 1))
    assert line == "m v=0.0,w=3.0 1"


def test_escaping_per_spec() -> None:
    assert escape_measurement("my disk,io") == "my\\ disk\\,io"
    assert escape_tag("a b,c=d") == "a\\ b\\,c\\=d"
    assert escape_field_key("a b,c=d") == "a\\ b\\,c\\=d"
    assert escape_tag("vda\\") == "vda"  # a trailing backslash would escape the separator
    metric = Metric("m", {"path": "/mnt/my disk"}, {"s": 'say "hi" \\ bye'}, 5)
    line = InfluxSerializer().line(metric)
    assert line == 'm,path=/mnt/my\\ disk s="say \\"hi\\" \\\\ bye" 5'
    assert parse_line(line).fields["s"] == 'say "hi" \\ bye'


def test_nan_and_infinity_are_never_written() -> None:
    metric = Metric("m", {}, {"a": float("nan"), "b": float("inf"), "c": 1.0}, 1)
    assert InfluxSerializer().line(metric) == "m c=1.0 1"
    assert InfluxSerializer().line(Metric("m", {}, {"a": float("-inf")}, 1)) == ""


def test_empty_tag_values_are_dropped_and_empty_batches_write_nothing() -> None:
    assert InfluxSerializer().line(Metric("m", {"model": "", "device": "sda"}, {"v": 1}, 1)) == (
        "m,device=sda v=1i 1"
    )
    assert InfluxSerializer().serialize([]) == ""


def test_batch_is_complete_lines() -> None:
    metrics = [Metric("m", {"d": str(i)}, {"v": i}, i) for i in range(3)]
    text = make_serializer("influx", env={}, interval=10.0).serialize(metrics)
    assert text.endswith("\n") and text.count("\n") == 3


def test_parts_influxdb_cannot_carry_are_dropped_not_the_point() -> None:
    metric = Metric("m\\", {"\\": "x", "d": "v"}, {"": 1.0, "big": 2**64, "a\\ b": 2, "ok": 3}, 7)
    assert InfluxSerializer().line(metric) == "m,d=v a\\ b=2i,ok=3i 7"
    assert InfluxSerializer().line(Metric("\\", {}, {"v": 1}, 1)) == ""
