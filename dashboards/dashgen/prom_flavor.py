"""The two name flavors of the Prometheus rules, one set of expressions:

- "prometheus": the names diskprobe's own Prometheus format gives (`format = "prometheus"`,
  the /metrics listener, the textfile), base units: diskprobe_io_await_seconds,
  diskprobe_smart_life_used_ratio. serializers/prometheus.py's family() names them.
- "influx": the names VictoriaMetrics makes of diskprobe's InfluxDB line protocol
  (`<measurement>_<field>`, schema units, tags as labels plus `db`): diskprobe_io_await_ms.
"""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe.schema import MEASUREMENTS, MeasurementSpec
from diskprobe.serializers.prometheus import LABEL_RENAMES, family

SPECS: dict[str, MeasurementSpec] = {spec.name: spec for spec in MEASUREMENTS}


@dataclass(frozen=True)
class Flavor:
    key: str
    describe: str
    silent_window: str  # "no points for 3 intervals", at least one scrape interval

    def metric(self, measurement: str, field: str) -> str:
        if self.key == "influx":
            return f"{measurement}_{field}"
        spec = SPECS[measurement]
        return family(spec, next(f for f in spec.fields if f.name == field)).name

    def label(self, measurement: str, tag: str) -> str:
        """A tag's label: diskprobe_job's `job` is `training_job` in diskprobe's Prometheus
        format (Prometheus owns `job`); VictoriaMetrics keeps line protocol's tag names."""
        if self.key == "influx":
            return tag
        return LABEL_RENAMES.get((measurement, tag), tag)

    def raw(self, fn: str, measurement: str, field: str, window: str, match: str = "",
            offset: str = "") -> str:  # fmt: skip
        """fn(series[window]) in the flavor's unit (for counts and comparisons)."""
        shift = f" offset {offset}" if offset else ""
        return f"{fn}({self.metric(measurement, field)}{match}[{window}]{shift})"

    def over(self, fn: str, measurement: str, field: str, window: str, match: str = "",
             offset: str = "") -> str:  # fmt: skip
        """fn(series[window]) in the schema's unit."""
        return self.scaled(self.raw(fn, measurement, field, window, match, offset),
                           measurement, field)

    def instant(self, measurement: str, field: str, match: str = "") -> str:
        """The series itself, an instant vector, in the schema's unit."""
        return self.scaled(f"{self.metric(measurement, field)}{match}", measurement, field)

    def scaled(self, text: str, measurement: str, field: str) -> str:
        """`text`, in the flavor's unit of `field`, brought to the schema's."""
        if self.key == "influx":
            return text
        spec = SPECS[measurement]
        fam = family(spec, next(f for f in spec.fields if f.name == field))
        if fam.divide != 1:
            return f"{text} * {fam.divide}"
        return f"{text} / {fam.multiply}" if fam.multiply != 1 else text


PROMETHEUS = Flavor("prometheus", "diskprobe's Prometheus format (/metrics, textfile)", "2m")
INFLUX = Flavor("influx", "VictoriaMetrics fed diskprobe's InfluxDB line protocol", "40s")
FLAVORS = (PROMETHEUS, INFLUX)
FILE_SUFFIX = {"prometheus": "", "influx": "-influx"}
