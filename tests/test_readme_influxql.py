"""The README's InfluxQL examples run against a real InfluxDB and find what they promise."""

from __future__ import annotations

import re
import time
from pathlib import Path

from diskprobe.metric import Metric
from diskprobe.serializers.influx import InfluxSerializer

from influxdb_server import InfluxServer

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


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
