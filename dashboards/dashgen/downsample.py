"""A year of history on InfluxDB: what each measurement keeps once downsampled, from the schema.

The plans are data: per measurement the window (GROUP BY time), how far back each run
re-reads (RESAMPLE FOR: late points, e.g. a spool drained after an outage, are counted), and
per field the aggregate(s) and the name it is kept under. The rules, by field kind and type:

- I/O, pressure, training, agent (5 minutes; agent hourly): a gauge as `mean(x) AS x` and
  `max(x) AS x_max`, so a dashboard's `mean("x")` reads raw and downsampled data alike (the
  agent's `dropped_points`, a count per batch, as `sum(x) AS x`: the points lost); a
  cumulative counter as `last(x) AS x` (its value at the end of the window: differences of
  it stay exact); a boolean or string as `last(x) AS x` (the state the raw dashboards show).
- Filesystems (hourly): as I/O, but the forecasts (`time_to_full_sec`,
  `inodes_time_to_full_sec`) keep `min` beside `mean` (the soonest forecast in the hour).
- SMART (daily): every number as `max(x) AS x` (counters, temperature, verdict_code), but
  those where lower is worse (NVMe available spare, SSD life left) as `min(x) AS x`;
  strings and booleans as `last()`; `verdict` and `verdict_reasons` come from a second query
  that selects them with the day's worst `verdict_code` (`max()` as a selector).
- SMART attributes (daily): normalized `value` and `worst` as `min` (lower is worse), `raw` and
  `afr_percent` as `max`, the rest as `last`.
- A boolean whose one value matters (`fail_slow` true, a filesystem not `responsive`) is
  counted too: a query `WHERE x = <value>` writes `count(x)` as `<name>_intervals`, the
  number of collection intervals in the window in that state (absent: none). InfluxQL's
  `max()` takes no boolean, and `last()` alone would miss a state that came and went.

Not kept: diskprobe_process_io and diskprobe_cgroup_io (their tags, process names, pods and
containers, churn by the day: a year of them is a year of dead series; raw data covers an
incident for the raw retention).
"""

from __future__ import annotations

from dataclasses import dataclass

from dashgen.refs import quote
from diskprobe.schema import COUNTER, FieldSpec, measurement

DATABASE = "telegraf"
RAW_RP = "autogen"  # where Telegraf writes (the database's default policy)
RAW_DURATION = "14d"
LONG_RP = "diskprobe_1y"
LONG_DURATION = "365d"
LONG_SHARD = "7d"
NOT_KEPT = ("diskprobe_process_io", "diskprobe_cgroup_io")
NUMBER = ("float", "int")


@dataclass(frozen=True)
class Column:
    function: str  # mean, max, min, last, mode, count, or "" for a field beside a selector
    field: str
    alias: str

    def render(self) -> str:
        if not self.function:
            return f"{quote(self.field)} AS {quote(self.alias)}"
        return f"{self.function}({quote(self.field)}) AS {quote(self.alias)}"


@dataclass(frozen=True)
class ContinuousQuery:
    name: str
    measurement: str
    every: str  # GROUP BY time(every)
    resample_for: str
    columns: tuple[Column, ...]
    where: str = ""  # a field condition (flag counts)

    def select(self, database: str, time_range: str = "") -> str:
        """The SELECT ... INTO body; `time_range` (e.g. "time >= 0 AND time < 1") for a
        manual run: a continuous query adds its own."""
        source = f"{quote(database)}.{quote(RAW_RP)}.{quote(self.measurement)}"
        target = f"{quote(database)}.{quote(LONG_RP)}.{quote(self.measurement)}"
        conditions = [c for c in (self.where, time_range) if c]
        text = f"SELECT {', '.join(c.render() for c in self.columns)} INTO {target} FROM {source}"
        if conditions:
            text += " WHERE " + " AND ".join(conditions)
        return text + f" GROUP BY time({self.every}), *"

    def create(self, database: str) -> str:
        return (
            f"CREATE CONTINUOUS QUERY {quote(self.name)} ON {quote(database)} "
            f"RESAMPLE FOR {self.resample_for} BEGIN {self.select(database)} END"
        )


@dataclass(frozen=True)
class Flag:
    """A boolean state counted per window: `field` = `value` -> `alias` (intervals)."""

    field: str
    value: bool
    alias: str


@dataclass(frozen=True)
class Plan:
    measurement: str
    every: str
    resample_for: str
    flags: tuple[Flag, ...] = ()


PLANS = (
    Plan("diskprobe_io", "5m", "15m", (Flag("fail_slow", True, "fail_slow_intervals"),)),
    Plan("diskprobe_fs", "1h", "2h", (Flag("responsive", False, "unresponsive_intervals"),)),
    Plan("diskprobe_smart", "1d", "2d"),
    Plan("diskprobe_smart_attr", "1d", "2d"),
    Plan("diskprobe_pressure", "5m", "15m"),
    Plan("diskprobe_training", "5m", "15m"),
    Plan("diskprobe_agent", "1h", "2h"),
)
FORECASTS = ("time_to_full_sec", "inodes_time_to_full_sec")
SMART_VERDICT = ("verdict", "verdict_reasons")  # selected with the day's worst verdict_code
ATTR_MIN, ATTR_MAX = ("value", "worst"), ("raw", "afr_percent")
SMART_MIN = ("available_spare_percent", "ssd_life_left_percent")  # lower is worse
SUMMED = {("diskprobe_agent", "dropped_points")}  # a count per batch: the window's total
STRING_MODE = {("diskprobe_training", "bottleneck")}  # the verdict most windows had


def _columns(name: str, spec: FieldSpec) -> tuple[Column, ...]:
    """How field `spec` of measurement `name` is kept (see the module docstring)."""
    f = spec.name
    if spec.type not in NUMBER:
        return (Column("mode" if (name, f) in STRING_MODE else "last", f, f),)
    if name == "diskprobe_smart":
        return (Column("min" if f in SMART_MIN else "max", f, f),)
    if (name, f) in SUMMED:
        return (Column("sum", f, f),)
    if name == "diskprobe_smart_attr":
        function = "min" if f in ATTR_MIN else "max" if f in ATTR_MAX else "last"
        return (Column(function, f, f),)
    if spec.kind == COUNTER or f == "pid":
        return (Column("last", f, f),)
    if f in FORECASTS:
        return Column("mean", f, f), Column("min", f, f"{f}_min")
    return Column("mean", f, f), Column("max", f, f"{f}_max")


def continuous_queries() -> tuple[ContinuousQuery, ...]:
    queries: list[ContinuousQuery] = []
    for plan in PLANS:
        spec = measurement(plan.measurement)
        fields = [f for f in spec.fields
                  if not (plan.measurement == "diskprobe_smart" and f.name in SMART_VERDICT)]
        columns = tuple(c for f in fields for c in _columns(plan.measurement, f))
        base = f"{plan.measurement}_{plan.every}"
        queries.append(ContinuousQuery(base, plan.measurement, plan.every, plan.resample_for,
                                       columns))
        if plan.measurement == "diskprobe_smart":
            worst = (Column("max", "verdict_code", "verdict_code"),
                     *(Column("", f, f) for f in SMART_VERDICT))
            queries.append(ContinuousQuery(f"diskprobe_smart_verdict_{plan.every}",
                                           plan.measurement, plan.every, plan.resample_for,
                                           worst))
        for flag in plan.flags:
            value = "true" if flag.value else "false"
            queries.append(ContinuousQuery(
                f"{plan.measurement}_{flag.alias}_{plan.every}", plan.measurement, plan.every,
                plan.resample_for, (Column("count", flag.field, flag.alias),),
                where=f"{quote(flag.field)} = {value}"))
    return tuple(queries)


def kept_fields(name: str) -> dict[str, str]:
    """The fields of `name` in the long retention policy: alias -> the raw field it is from."""
    return {c.alias: c.field for q in continuous_queries() if q.measurement == name
            for c in q.columns}


def retention_statements(database: str) -> tuple[str, ...]:
    return (
        f"ALTER RETENTION POLICY {quote(RAW_RP)} ON {quote(database)} DURATION {RAW_DURATION} "
        "SHARD DURATION 1d DEFAULT",
        f"CREATE RETENTION POLICY {quote(LONG_RP)} ON {quote(database)} DURATION "
        f"{LONG_DURATION} REPLICATION 1 SHARD DURATION {LONG_SHARD}",
    )


def statements(database: str = DATABASE) -> tuple[str, ...]:
    """Every statement of the shipped file, in order, for `database`."""
    return (*retention_statements(database),
            *(query.create(database) for query in continuous_queries()))


IQL_HEADER = """\
# diskprobe: a year of history on InfluxDB 1.x (retention policies and continuous queries).
# Generated by dashboards/generate.py from dashboards/dashgen/downsample.py: do not edit.
#
# One statement per line; lines starting with # are comments. Apply them in order, e.g.:
#   grep -v '^#' influxdb-1x.iql | grep . | while IFS= read -r statement; do
#     influx -database {database} -execute "$statement" || break; done
# (or each line through curl: curl -XPOST http://localhost:8086/query --data-urlencode q=...)
# For another database, replace "{database}" first: sed 's/"{database}"/"mydb"/g'.
#
# CAUTION: the first statement makes raw data in "{database}" expire after {raw}: every
# measurement of the database, not only diskprobe's. Skip it to keep raw data longer.
# The continuous queries copy what they keep into "{long}" ({long_duration}); Telegraf keeps
# writing to the default policy. Continuous queries only compute windows from their creation
# on: to downsample history already stored, run each query's SELECT ... INTO once with a
# time range (WHERE time >= '...' AND time < '...'), as tests/test_downsampling_influx.py does.
"""


def iql_file(database: str = DATABASE) -> str:
    """The text of dashboards/downsampling/influxdb-1x.iql."""
    header = IQL_HEADER.format(database=database, raw=RAW_DURATION, long=LONG_RP,
                               long_duration=LONG_DURATION)
    return header + "\n".join(statements(database)) + "\n"
