"""The README's InfluxQL examples run against a real InfluxDB and find what they promise."""

from __future__ import annotations

import re
import time

from diskprobe.metric import Metric
from diskprobe.serializers.influx import InfluxSerializer
from docs_text import doc

from influxdb_server import InfluxServer

README = doc("filesystems") + doc("smart") + doc("fail-slow")  # the pages with InfluxQL


def _query(name: str) -> str:
    match = re.search(f"<!-- {name}:start -->\n```sql\n(.*?)\n```", README, re.S)
    assert match, name
    return match.group(1)


def _fs(path: str, hours_left: float | None, now_ns: int) -> Metric:
    fields: dict[str, float | int | bool | str] = {"used_percent": 50.0, "responsive": True}
    if hours_left is not None:
        fields["fill_rate_bytes_per_sec"] = 1e6
        fields["time_to_full_sec"] = hours_left * 3600
    tags = {"host": "gpu01", "path": path, "device": "vda", "fstype": "ext4", "mode": "rw"}
    return Metric("diskprobe_fs", tags, fields, now_ns)


def test_volumes_that_fill_within_24h(influx_db: tuple[InfluxServer, str]) -> None:
    server, db = influx_db
    now = time.time_ns()
    batch = [_fs("/data", 5.0, now), _fs("/ckpt", 30.0, now), _fs("/", None, now)]
    status, text = server.write(db, InfluxSerializer().serialize(batch).encode())
    assert status == 204, text
    (result,) = server.query(db, _query("influxql-fill-24h"))
    found = [
        (series["tags"]["path"], values[series["columns"].index("hours_left")])
        for series in result.get("series", [])
        for values in series["values"]
    ]
    assert found == [("/data", 5.0)]


def _drive(serial: str, protocol: str, time_ns: int, **fields: int) -> Metric:
    tags = {"host": "gpu01", "device": "sda", "serial": serial, "protocol": protocol}
    return Metric("diskprobe_smart", tags, dict(fields), time_ns)


def _found(server: InfluxServer, db: str, query: str, column: str) -> list[tuple[str, object]]:
    (result,) = server.query(db, query)
    return [
        (series["tags"]["serial"], values[series["columns"].index(column)])
        for series in result.get("series", [])
        for values in series["values"]
    ]


def test_drives_whose_reallocated_sectors_grew_in_24h(influx_db: tuple[InfluxServer, str]) -> None:
    server, db = influx_db
    now, hour = time.time_ns(), 3600 * 10**9
    batch = [
        _drive("GROWING", "ata", now - 20 * hour, reallocated_sectors=8),
        _drive("GROWING", "ata", now - hour, reallocated_sectors=12),
        _drive("STEADY", "ata", now - 20 * hour, reallocated_sectors=30),
        _drive("STEADY", "ata", now - hour, reallocated_sectors=30),
        _drive("OLDGROWTH", "ata", now - 30 * hour, reallocated_sectors=1),
        _drive("OLDGROWTH", "ata", now - hour, reallocated_sectors=5),
    ]
    status, text = server.write(db, InfluxSerializer().serialize(batch).encode())
    assert status == 204, text
    assert _found(server, db, _query("influxql-realloc-24h"), "grown") == [("GROWING", 4)]


def test_nvme_wear_above_80_percent(influx_db: tuple[InfluxServer, str]) -> None:
    server, db = influx_db
    now = time.time_ns()
    batch = [
        _drive("WORN", "nvme", now, percentage_used=85),
        _drive("FRESH", "nvme", now, percentage_used=3),
        _drive("SATA", "ata", now, reallocated_sectors=0),
    ]
    status, text = server.write(db, InfluxSerializer().serialize(batch).encode())
    assert status == 204, text
    assert _found(server, db, _query("influxql-nvme-wear"), "percentage_used") == [("WORN", 85)]


def _io(host: str, device: str, fail_slow: bool, ratio: float, time_ns: int) -> Metric:
    tags = {"host": host, "device": device, "model": "ST8000NM0055", "serial": f"ZA{device}"}
    fields: dict[str, float | int | bool | str] = {"await_ms": 4.0 * ratio, "fail_slow": fail_slow}
    fields["slowdown_ratio"] = ratio
    return Metric("diskprobe_io", tags, fields, time_ns)


def test_fail_slow_devices_across_the_fleet(influx_db: tuple[InfluxServer, str]) -> None:
    server, db = influx_db
    now = time.time_ns()
    minute = 60 * 10**9
    batch = [
        _io("gpu01", "sdc", False, 1.1, now - 20 * minute),
        _io("gpu01", "sdc", True, 4.8, now - minute),  # turned fail-slow: listed
        _io("gpu01", "sda", False, 1.0, now - minute),
        _io("gpu02", "sdb", True, 5.5, now - 30 * minute),
        _io("gpu02", "sdb", False, 1.2, now - minute),  # recovered since: not listed
    ]
    status, text = server.write(db, InfluxSerializer().serialize(batch).encode())
    assert status == 204, text
    (every,) = server.query(db, _query("influxql-fail-slow-last"))
    assert len(every["series"]) == 3  # one row per device: its last state and ratio
    (result,) = server.query(db, _query("influxql-fail-slow-fleet"))
    rows = [
        (values[series["columns"].index("host")] if "host" in series["columns"] else
         series.get("tags", {}).get("host"), values[series["columns"].index("slowdown_ratio")])
        for series in result.get("series", [])
        for values in series["values"]
    ]  # fmt: skip
    assert rows == [("gpu01", 4.8)], result
