"""diskprobe fleet: every drive of the selected hosts in one table, worst first, and one
drive's failure-rate estimate and defect counters over time; the training jobs by bottleneck
(boards_jobs.py)."""

from __future__ import annotations

from dashgen.boards_jobs import disk_bound_count, jobs_table
from dashgen.build import LAST_READ_RANGE, agg, series, tags
from dashgen.failslow import fleet_table
from dashgen.model import Column, Dashboard, Panel, Target, Variable
from dashgen.query import Select
from dashgen.refs import SMART, quote
from dashgen.risk import DRIVE, afr_fail_percent, afr_warn_percent, growth_fields

HOURS_PER_DAY = 24
HISTORY_BY = ("host", "device", "serial")
HISTORY_FILTERS = ("host", "serial")
HISTORY_LEGEND = "$tag_host $tag_device $tag_serial $col"


# The drives the table lists: one field read per drive over the table's day picks them, then
# the table reads its eleven fields for those drives only (at 1,000 hosts 0.3 s, against 2.6 s
# for every drive); the day, not the board's range, keeps it so over a year.
(SERIAL,) = tags(SMART, "serial")
AT_RISK = Variable(
    SERIAL, SMART.name, ("host",), name="at_risk", points_field="verdict_code",
    points_range=LAST_READ_RANGE,
    points_where=(f'({SMART.f("verdict_code")} > 0 OR '
                  f'{SMART.f("afr_percent")} >= {afr_warn_percent():g})'),
)


def _growth_title(name: str) -> str:
    """reallocated_sectors_per_day -> "reallocated /d" (a narrow column header)."""
    return name.removesuffix("_per_day").replace("_sectors", "").replace("_", " ") + " /d"


def _replace_table() -> Panel:
    f = SMART.f
    code, verdict, afr = f("verdict_code"), f("verdict"), f("afr_percent")
    hours, reasons = f("power_on_hours"), f("verdict_reasons")
    growth = growth_fields()
    afr_steps: tuple[tuple[float, str], ...] = ((afr_warn_percent(), "orange"),)
    if afr_fail_percent() > 0:  # 0 turns diskprobe's AFR fail rule off
        afr_steps += ((afr_fail_percent(), "red"),)
    select = Select(
        columns=", ".join([
            agg("last", code), agg("last", verdict), agg("last", afr),
            # The drive's age: power-on hours in days (Grafana shows weeks or years past 7 d).
            f"last({hours}) / {HOURS_PER_DAY} AS {quote('age_days')}",
            *(agg("last", field) for field in growth),
            agg("last", reasons),
        ]),
        measurement=SMART.name,
        filters=tags(SMART, "host"),
        grafana_filters=((AT_RISK.tag, AT_RISK.variable),),
        group_tags=tags(SMART, *DRIVE),
    )
    columns = (
        Column(code.name, code.unit, "code"),
        Column(verdict.name, verdict.unit, "verdict"),
        Column(afr.name, afr.unit, "AFR %/year", afr_steps),
        Column("age_days", "d", "age"),
        *(Column(field.name, field.unit, _growth_title(field.name)) for field in growth),
        Column(reasons.name, reasons.unit, "reasons"),
    )
    return Panel(
        title="Drives to replace, worst first",
        description=(
            "The drives at risk in the last day (a warn or fail verdict, or afr_percent "
            f"from {afr_warn_percent():g}; Chronograf: every drive of its host), each by its "
            "last SMART read in the last day, sorted by verdict "
            "(2 fail, 1 warn, 0 ok), then by afr_percent, the estimated annualized failure "
            f"rate (hard drives only; orange from diskprobe's warn limit {afr_warn_percent():g}, "
            f"red from its fail limit {afr_fail_percent():g}). The /d columns are each defect "
            "counter's net growth per day over diskprobe's growth_window: above 0 the drive "
            "is losing media now. Age is power-on time."
        ),
        kind="table",
        targets=(Target(select, code.unit),),
        width=24,
        height=12,
        columns=columns,
        sort_by=code.name,
        sort_desc=True,
        then_by=(afr.name,),
        verdict_mapping=True,
        time_from=LAST_READ_RANGE,
    )


def _afr_target() -> Target:
    return series(SMART, "last", ((SMART.f("afr_percent"), ""),), HISTORY_BY, HISTORY_FILTERS,
                  legend=HISTORY_LEGEND)


def _sectors_target() -> Target:
    f = SMART.f
    return series(SMART, "last", ((f("reallocated_sectors"), ""), (f("pending_sectors"), "")),
                  HISTORY_BY, HISTORY_FILTERS, legend=HISTORY_LEGEND)


def _history() -> Panel:
    description = (
        "The drive chosen in `serial`: its estimated failure rate (left axis, %/year) and "
        "its reallocated and pending sectors (right axis, dashed). A rate that steps up with "
        "the counters is the table's bucket for the new count."
    )
    sectors = SMART.f("reallocated_sectors").unit
    return Panel(
        title="Drive $serial: failure rate and defects",
        description=description,
        kind="timeseries",
        targets=(_afr_target(), _sectors_target()),
        width=24,
        height=10,
        right_unit=sectors,
        right_match=".*_sectors$",
        chronograf_cells=(
            Panel("Failure rate estimate (afr_percent)", description, "timeseries",
                  (_afr_target(),)),
            Panel("Reallocated and pending sectors", description, "timeseries",
                  (_sectors_target(),)),
        ),
    )


def fleet() -> Dashboard:
    return Dashboard(
        slug="diskprobe-fleet",
        title="diskprobe: drives to replace",
        description=(
            f"Drive risk across hosts from {SMART.name}: verdict, estimated failure rate, "
            "defect growth and age per drive; the drives slower than their peers "
            "(fail-slow); one drive's history; and the training jobs by bottleneck, as the "
            "agent judges them (diskprobe_job)."
        ),
        variables=(
            Variable("host", SMART.name),
            Variable("serial", SMART.name, ("host",), multi=False),
            AT_RISK,
        ),
        panels=(_replace_table(), fleet_table(), _history(), jobs_table(), disk_bound_count()),
        time_from="now-7d",
        refresh="5m",
    )
