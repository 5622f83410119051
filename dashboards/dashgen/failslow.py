"""Fail-slow: a device that still answers, only slower than its peers at the same load
(docs/fail-slow.md). Two panels on the I/O dashboard, a table on the fleet dashboard and the
diskprobe-fail-slow alert, all on the two fields diskprobe sends on diskprobe_io:
`slowdown_ratio` (this interval's await over its peers' at the same load; only when there is
a comparison) and `fail_slow` (a state with hysteresis, on every point of a judged device).

The line on the graph is diskprobe's own default `[io] fail_slow_ratio`, read from its config
code like risk.py reads the AFR limits: a fleet that sets another ratio sets FAIL_SLOW_RATIO
below to it and regenerates.
"""

from __future__ import annotations

from dashgen.build import agg, last_value, series, tags
from dashgen.model import Alert, Column, Level, Panel, Target
from dashgen.query import AUTO, Select
from dashgen.refs import IO, quote
from dashgen.risk import DRIVE
from diskprobe.config.sections import IoConfig

FAIL_SLOW_RATIO = IoConfig().fail_slow_ratio
WINDOW_TEXT = f"{IoConfig().fail_slow_window / 60:g} min"  # for the descriptions
STATES = (("true", "fail-slow", "red"), ("false", "ok", "green"))
ALERT_WINDOW = "15m"  # fail_slow is on every point (every 10 s): the last one falls in it
RATIO_TEXT = (
    "slowdown_ratio is the device's await in an interval over the await its peers (same "
    "model and media, or [io] peer_groups) showed at the same load: 1 is as fast as they are"
)


def _ratio_target() -> Target:
    ratio = IO.f("slowdown_ratio")
    return series(IO, "mean", ((ratio, "slowdown"),), ("host", "device"), ("host", "device"))


def _limit_target() -> Target:
    """Chronograf has no threshold line: a series at the ratio wherever there are ratios.
    (x * 0 + 2: InfluxDB refuses a constant, `SELECT 2`: "field must contain at least one
    variable".)"""
    ratio = IO.f("slowdown_ratio")
    select = Select(
        columns=f"max({ratio}) * 0 + {FAIL_SLOW_RATIO:g} AS {quote('fail_slow_ratio')}",
        measurement=IO.name,
        filters=tags(IO, "host", "device"),
        group_time=AUTO,
        fill="none",
    )
    return Target(select, ratio.unit, "fail_slow_ratio")


def slowdown_panel() -> Panel:
    description = (
        f"Mean slowdown_ratio per device and interval. {RATIO_TEXT}. A device that stays "
        f"above the dashed line ([io] fail_slow_ratio, {FAIL_SLOW_RATIO:g}) for most of "
        f"fail_slow_window ({WINDOW_TEXT} by default) turns fail_slow. Gaps: idle intervals, "
        "which have nothing to compare."
    )
    return Panel(
        title="Slowdown vs peers",
        description=description,
        kind="timeseries",
        targets=(_ratio_target(),),
        threshold=FAIL_SLOW_RATIO,
        chronograf_cells=(
            Panel("Slowdown vs peers", description, "timeseries",
                  (_ratio_target(), _limit_target())),
        ),
    )


def state_select(filters: tuple[str, ...]) -> Select:
    """Each judged device's last point: its fail_slow, the slowdown_ratio of that same point
    and (as the row's time) when it was sent. One selector beside a plain field returns that
    point: "time": 1796161577944009251, "fail_slow": true, "slowdown_ratio": 5. A second
    selector, last("slowdown_ratio"), would give the start of the time range as the time."""
    fail_slow, ratio = IO.f("fail_slow"), IO.f("slowdown_ratio")
    return Select(
        columns=f"{agg('last', fail_slow)}, {ratio}",
        measurement=IO.name,
        filters=tags(IO, *filters),
        group_tags=tags(IO, *DRIVE),
    )


def _columns() -> tuple[Column, ...]:
    fail_slow, ratio = IO.f("fail_slow"), IO.f("slowdown_ratio")
    return (Column(fail_slow.name, fail_slow.unit, "fail-slow", states=STATES),
            Column(ratio.name, ratio.unit, "slowdown"))


def device_table() -> Panel:
    return Panel(
        title="Fail-slow devices",
        description=(
            "Every judged device of the selected hosts (whole disks and peer_groups members) "
            "with its last fail_slow state, the slowdown_ratio of that last point (empty: "
            "that interval was idle, nothing to compare) and its time, slowest first. "
            f"{RATIO_TEXT}."
        ),
        kind="table",
        targets=(Target(state_select(("host", "device")), IO.f("fail_slow").unit),),
        columns=_columns(),
        sort_by=IO.f("slowdown_ratio").name,
        sort_desc=True,
    )


def fleet_table() -> Panel:
    # InfluxQL 1.x cannot filter on a selector's result in the same statement (no HAVING):
    # the outer query keeps the rows whose last fail_slow is true.
    select = Select(
        columns=", ".join(quote(name) for name in ("fail_slow", "slowdown_ratio")),
        source=state_select(("host",)),
        where=(f"{IO.f('fail_slow')} = true",),
        group_tags=DRIVE,
    )
    return Panel(
        title="Fail-slow devices across the fleet",
        description=(
            "The devices of the selected hosts whose last fail_slow is true: slower than "
            f"their peers (slowdown_ratio >= {FAIL_SLOW_RATIO:g}) for most of "
            f"fail_slow_window. The slowdown is that of the device's last point (empty: "
            "idle then), the time is when it was sent. Take such a drive out of its array or "
            "pool like a failing one, then check its cabling, firmware and SMART."
        ),
        kind="table",
        targets=(Target(select, IO.f("fail_slow").unit),),
        width=24,
        height=8,
        columns=_columns(),
        sort_by=IO.f("slowdown_ratio").name,
        sort_desc=True,
    )


def fail_slow_alert() -> Alert:
    fail_slow, ratio = IO.f("fail_slow"), IO.f("slowdown_ratio")
    return Alert(
        uid="diskprobe-fail-slow",
        group="diskprobe-io",
        title="Fail-slow device",
        # No subquery: Kapacitor's batch queries take none (influxdata/kapacitor#1198).
        query=last_value(IO, fail_slow, DRIVE),
        window=ALERT_WINDOW,
        levels=(Level("warning", "is_true", ()),),
        pending="0s",
        every="1m",
        measure="last fail_slow per device (host, device, model, serial) in 15 min",
        summary="{host}: {device} ({model}, serial {serial}) is fail-slow: its await is "
        "{slowdown} x its peers' at the same load",
        why=f"{RATIO_TEXT}; fail_slow turns on when it stays at or above fail_slow_ratio "
        f"({FAIL_SLOW_RATIO:g}) for most of fail_slow_window ({WINDOW_TEXT}) and off with "
        "hysteresis. Such a drive passes every health check while it drags its RAID set, "
        "pool or data loader down to its speed.",
        runbook="Take the drive out of its array or pool (or fail it over) like a failing "
        "one, then check its cabling, HBA port, firmware and SMART; compare its await with "
        "its peers' on the I/O dashboard (Slowdown vs peers).",
        extra_values=(("slowdown", f"last({ratio})"),),
    )
