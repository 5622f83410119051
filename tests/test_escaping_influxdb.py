"""The line-protocol serializer against a real InfluxDB 1.x: what we write is what comes back.

Names and values go through InfluxSerializer, are written over HTTP (must be 204) and are
read back with InfluxQL (SHOW MEASUREMENTS / TAG KEYS / TAG VALUES / FIELD KEYS, SELECT).
InfluxDB 1.x facts these tests pin down (found with influxd 1.6.7):

* tag keys and tag values: `\\,` `\\=` `\\ ` are escapes; any other backslash is literal,
  also one right before an escaped character (`a\\\\,b` reads back as `a\\,b`);
* field keys: the same escapes, but a backslash right before a space, comma or `=` cannot
  be written: `\\\\,` is refused ("invalid field format"), `\\\\\\,` reads back with two;
* measurements: `\\,` and `\\ ` are escapes (`=` needs none); with a backslash right before
  a space or comma influxd answers 204 but the point is lost (no fields anywhere), and
  `a\\=b` is stored as `a=b`;
* a tag value (or key) that ends in a backslash cannot be written at all: the last
  backslash escapes the separator after it and the line is rejected ("invalid tag format");
* there is no `\\n` escape: a raw newline ends the line, the two characters `\\n` stay two
  characters;
* string field values: only `\\"` and `\\\\` are escapes; raw newlines are accepted.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from diskprobe.metric import FieldValue, Metric
from diskprobe.serializers.influx import InfluxSerializer

from influxdb_server import InfluxServer, quote_ident, series_rows

TIME_NS = 1_700_000_000_123_456_789
_times = itertools.count(TIME_NS)

# Tag keys, tag values and field keys: every character the protocol treats specially.
NAMES = {
    "space": "disk probe",
    "comma": "a,b",
    "equals": "a=b",
    "double-quote": 'say "hi"',
    "backslash-middle": "C:\\disks\\vda",
    "backslash-before-specials": "a\\,b\\ c\\=d",
    "double-backslash": "a\\\\b",
    "non-ascii": "café 日本 🚀",
    "everything": 'x, y="z"\\w=é 🎉',
}
# Measurements and field keys: the same, less a backslash right before a space, comma or `=`,
# which InfluxDB 1.x cannot take there (see the module docstring and the plugin-bug tests).
SAFE_NAMES = {key: value for key, value in NAMES.items() if key != "backslash-before-specials"}
STRING_VALUES = [
    "plain",
    "",
    'say "hi", a=b c',
    "ends in a backslash\\",
    "\\",
    "\\\\",
    '\\"',
    'quote at the end"',
    "C:\\path\\to\\disk",
    "café 日本 🎉",
    "two\nlines\r\nand a\ttab",
]


# -- helpers --------------------------------------------------------------------------------------


def serialize(*metrics: Metric) -> bytes:
    return InfluxSerializer().serialize(metrics).encode("utf-8")


def write_ok(server: InfluxServer, db: str, *metrics: Metric) -> bytes:
    body = serialize(*metrics)
    status, text = server.write(db, body)
    assert status == 204, f"InfluxDB rejected {body!r}: HTTP {status}: {text}"
    return body


def measurements(server: InfluxServer, db: str) -> list[str]:
    return [row["name"] for row in series_rows(server.query(db, "SHOW MEASUREMENTS"))]


def tag_keys(server: InfluxServer, db: str, measurement: str) -> list[str]:
    rows = series_rows(server.query(db, f"SHOW TAG KEYS FROM {quote_ident(measurement)}"))
    return [row["tagKey"] for row in rows]


def tag_values(server: InfluxServer, db: str, measurement: str, key: str) -> list[str]:
    influxql = f"SHOW TAG VALUES FROM {quote_ident(measurement)} WITH KEY = {quote_ident(key)}"
    return [row["value"] for row in series_rows(server.query(db, influxql))]


def field_types(server: InfluxServer, db: str, measurement: str) -> dict[str, str]:
    rows = series_rows(server.query(db, f"SHOW FIELD KEYS FROM {quote_ident(measurement)}"))
    return {row["fieldKey"]: row["fieldType"] for row in rows}


def select_all(server: InfluxServer, db: str, measurement: str) -> list[dict[str, Any]]:
    return series_rows(server.query(db, f"SELECT * FROM {quote_ident(measurement)}"))


def only_row(server: InfluxServer, db: str, measurement: str) -> dict[str, Any]:
    rows = select_all(server, db, measurement)
    assert len(rows) == 1, rows
    return rows[0]


# -- names and values that must come back unchanged ----------------------------------------------


@pytest.mark.parametrize("name", list(NAMES.values()), ids=list(NAMES))
def test_tag_keys_and_values_round_trip(influx_db: tuple[InfluxServer, str], name: str) -> None:
    server, db = influx_db
    tag_key = f"tag {name}"
    metric = Metric("tags", {tag_key: name, "mid": f"<{name}>"}, {"value": 1.5}, TIME_NS)
    write_ok(server, db, metric)

    assert measurements(server, db) == ["tags"]
    assert sorted(tag_keys(server, db, "tags")) == sorted([tag_key, "mid"])
    assert tag_values(server, db, "tags", tag_key) == [name]
    assert tag_values(server, db, "tags", "mid") == [f"<{name}>"]
    row = only_row(server, db, "tags")
    assert row == {"time": TIME_NS, tag_key: name, "mid": f"<{name}>", "value": 1.5}


@pytest.mark.parametrize("name", list(SAFE_NAMES.values()), ids=list(SAFE_NAMES))
def test_field_keys_round_trip(influx_db: tuple[InfluxServer, str], name: str) -> None:
    server, db = influx_db
    fields: dict[str, FieldValue] = {name: 1.5, f"{name} count": 3, f"<{name}>": True}
    write_ok(server, db, Metric("fields", {"device": "vda"}, fields, TIME_NS))

    assert field_types(server, db, "fields") == {
        name: "float",
        f"{name} count": "integer",
        f"<{name}>": "boolean",
    }
    assert only_row(server, db, "fields") == {"time": TIME_NS, "device": "vda", **fields}


@pytest.mark.parametrize("name", list(SAFE_NAMES.values()), ids=list(SAFE_NAMES))
def test_measurement_names_round_trip(influx_db: tuple[InfluxServer, str], name: str) -> None:
    server, db = influx_db
    write_ok(server, db, Metric(name, {"device": "vda"}, {"value": 2.5}, TIME_NS))
    assert measurements(server, db) == [name]
    assert tag_values(server, db, name, "device") == ["vda"]
    assert only_row(server, db, name) == {"time": TIME_NS, "device": "vda", "value": 2.5}


def test_string_field_values_round_trip(influx_db: tuple[InfluxServer, str]) -> None:
    server, db = influx_db
    fields: dict[str, FieldValue] = {f"s{i}": value for i, value in enumerate(STRING_VALUES)}
    write_ok(server, db, Metric("strings", {"device": "vda"}, fields, TIME_NS))
    assert field_types(server, db, "strings") == dict.fromkeys(fields, "string")
    row = only_row(server, db, "strings")
    for key, value in fields.items():
        assert row[key] == value, f"{key}: wrote {value!r}, read {row[key]!r}"


def test_numbers_and_booleans_round_trip_with_types(influx_db: tuple[InfluxServer, str]) -> None:
    server, db = influx_db
    floats: dict[str, FieldValue] = {
        "tiny": 1e-7,
        "huge": 1.5e20,
        "mixed": 123456789.123,
        "negative_tiny": -2.5e-300,
        "third": 1 / 3,
        "whole": 2.0,
        "zero": 0.0,
    }
    ints: dict[str, FieldValue] = {
        "big": 2**62,
        "int64_max": 2**63 - 1,
        "int64_min": -(2**63),
        "zero_int": 0,
        "minus_one": -1,
    }
    bools: dict[str, FieldValue] = {"yes": True, "no": False}
    write_ok(server, db, Metric("numbers", {}, {**floats, **ints, **bools}, TIME_NS))

    types = field_types(server, db, "numbers")
    expected = {
        **dict.fromkeys(floats, "float"),
        **dict.fromkeys(ints, "integer"),
        **dict.fromkeys(bools, "boolean"),
    }
    assert types == expected
    row = only_row(server, db, "numbers")
    for key, value in floats.items():
        back = row[key]  # JSON has no float/int distinction: 2.0 comes back as 2
        assert isinstance(back, (int, float)) and not isinstance(back, bool), (key, back)
        assert float(back) == value, f"{key}: wrote {value!r}, read {back!r}"
    for key, value in {**ints, **bools}.items():
        assert type(row[key]) is type(value) and row[key] == value, (key, row[key])


def test_separate_points_stay_separate(influx_db: tuple[InfluxServer, str]) -> None:
    """Escaped separators inside names must not merge or split series."""
    server, db = influx_db
    values = ["a,b", "a b", "a=b", "a\\,b", "a\\ b", "a"]
    metrics = [Metric("series", {"t": v}, {"n": i}, next(_times)) for i, v in enumerate(values)]
    write_ok(server, db, *metrics)
    assert sorted(tag_values(server, db, "series", "t")) == sorted(values)
    rows = select_all(server, db, "series")
    assert sorted((row["t"], row["n"]) for row in rows) == sorted(
        (v, i) for i, v in enumerate(values)
    )


# -- what InfluxDB cannot carry, and what the serializer does about it ---------------------------


@pytest.mark.parametrize("raw_value", ["vda\\", "vda\\\\"])
def test_influxdb_rejects_a_tag_value_ending_in_backslash(
    influx_db: tuple[InfluxServer, str], raw_value: str
) -> None:
    """Why the serializer strips trailing backslashes: written as is, the line is refused."""
    server, db = influx_db
    status, text = server.write(db, f"raw,device={raw_value} value=1 {TIME_NS}\n".encode())
    assert status == 400, text
    assert "invalid tag format" in text
    assert measurements(server, db) == []


def test_trailing_backslash_becomes_percent_5c_in_values_and_is_stripped_from_keys(
    influx_db: tuple[InfluxServer, str],
) -> None:
    """A tag value's trailing backslashes are written %5C (issue #25: stripped, "vda\\" and
    "vda" were one series); a tag key's, which are diskprobe's own names, are still dropped."""
    server, db = influx_db
    metric = Metric(
        "trailing",
        {"device": "vda\\", "model": "x\\\\", "only": "\\\\", "key\\": "k", "plain": "vda"},
        {"field\\": 1.0},
        TIME_NS,
    )
    body = write_ok(server, db, metric)
    assert body == (f"trailing,device=vda%5C,key=k,model=x%5C%5C,only=%5C%5C,plain=vda "
                    f"field=1.0 {TIME_NS}\n").encode()  # fmt: skip
    assert tag_values(server, db, "trailing", "device") == ["vda%5C"]
    assert tag_values(server, db, "trailing", "model") == ["x%5C%5C"]
    assert tag_values(server, db, "trailing", "plain") == ["vda"]  # apart from "vda\\"
    assert sorted(tag_keys(server, db, "trailing")) == ["device", "key", "model", "only", "plain"]
    assert field_types(server, db, "trailing") == {"field": "float"}


def test_influxdb_rejects_a_raw_newline_in_a_tag_value(
    influx_db: tuple[InfluxServer, str],
) -> None:
    server, db = influx_db
    status, text = server.write(db, f"raw,device=a\nb value=1 {TIME_NS}\n".encode())
    assert status == 400, text
    assert "partial write" in text
    # The newline ends the line: "raw,device=a" is refused, and the rest of the value
    # becomes a point of its own, in a measurement named after it.
    assert measurements(server, db) == ["b"]


def test_control_characters_in_tag_values_become_percent_escapes(
    influx_db: tuple[InfluxServer, str],
) -> None:
    """InfluxDB 1.x has no escape for newline, CR or tab in a tag value: the serializer wrote
    `\\n`, stored as the two characters, so a real newline and a literal backslash-n were one
    series. Now %0A, %0D, %09 (a literal "%" is %25): two values, two series (issue #25)."""
    server, db = influx_db
    first, second = next(_times), next(_times)
    written = [
        Metric("control", {"model": "line1\nline2\rx\ty"}, {"n": 1}, first),
        Metric("control", {"model": "line1\\nline2\\rx\\ty"}, {"n": 2}, second),
    ]
    body = write_ok(server, db, *written)
    assert body.count(b"\n") == 2, "a raw newline inside a line"
    assert sorted(tag_values(server, db, "control", "model")) == [
        "line1%0Aline2%0Dx%09y", "line1\\nline2\\rx\\ty"]  # fmt: skip
    rows = select_all(server, db, "control")
    assert [(row["time"], row["model"]) for row in rows] == [
        (first, "line1%0Aline2%0Dx%09y"),
        (second, "line1\\nline2\\rx\\ty"),
    ]


# -- input InfluxDB 1.x cannot carry: the serializer drops that part, never the point --------


def test_measurement_ending_in_backslash_keeps_its_tags(
    influx_db: tuple[InfluxServer, str],
) -> None:
    server, db = influx_db
    write_ok(server, db, Metric("probe\\", {"device": "vda"}, {"value": 1.0}, TIME_NS))
    assert measurements(server, db) == ["probe"]
    assert tag_values(server, db, "probe", "device") == ["vda"]


def test_keys_empty_after_escaping_do_not_lose_the_point(
    influx_db: tuple[InfluxServer, str],
) -> None:
    server, db = influx_db
    write_ok(server, db, Metric("keys", {"\\": "x", "device": "vda"}, {"": 1.0, "v": 2.0}, TIME_NS))
    assert only_row(server, db, "keys") == {"time": TIME_NS, "device": "vda", "v": 2.0}


def test_integer_outside_int64_does_not_lose_the_point(
    influx_db: tuple[InfluxServer, str],
) -> None:
    server, db = influx_db
    write_ok(server, db, Metric("wide", {"device": "vda"}, {"big": 2**64, "ok": 1}, TIME_NS))
    assert only_row(server, db, "wide")["ok"] == 1


@pytest.mark.parametrize("field_key", ["a\\ b", "a\\,b", "a\\=b"])
def test_field_key_with_backslash_before_separator_keeps_the_point(
    influx_db: tuple[InfluxServer, str], field_key: str
) -> None:
    server, db = influx_db
    write_ok(server, db, Metric("fkeys", {"device": "vda"}, {field_key: 1.0, "ok": 2.0}, TIME_NS))
    assert only_row(server, db, "fkeys")["ok"] == 2.0


@pytest.mark.parametrize("measurement", ["disk\\ probe", "disk\\,probe"])
def test_measurement_with_backslash_before_separator_is_queryable(
    influx_db: tuple[InfluxServer, str], measurement: str
) -> None:
    server, db = influx_db
    write_ok(server, db, Metric(measurement, {"device": "vda"}, {"value": 1.0}, TIME_NS))
    (stored,) = measurements(server, db)
    assert field_types(server, db, stored) == {"value": "float"}
    assert only_row(server, db, stored)["value"] == 1.0
