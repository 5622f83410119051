"""diskprobe fleet: the drives at risk of the selected hosts in one table, worst first, and one
drive's failure-rate estimate and defect counters over time; the training jobs by bottleneck
(boards_jobs.py)."""

from __future__ import annotations

from dataclasses import replace

from dashgen.boards_jobs import disk_bound_count, jobs_table
from dashgen.build import LAST_READ_RANGE, agg, right_axis_panel, series, tags
from dashgen.failslow import fleet_table
from dashgen.model import Column, Dashboard, Panel, Target, Variable
from dashgen.query import Select
from dashgen.refs import SMART, quote
from dashgen.risk import DRIVE, afr_fail_percent, afr_warn_percent, growth_fields

HOURS_PER_DAY = 24
AGE = "age_days"  # the table's column of power-on time in days
HISTORY_BY = ("host", "device", "serial")
HISTORY_FILTERS = ("host", "serial")
HISTORY_LEGEND = "$tag_host $tag_device $tag_serial $col"


def _at_risk(code: str, afr: str) -> str:
    """A drive at risk: a warn or fail verdict, or an estimated failure rate from diskprobe's
    warn limit; `code` and `afr` name the verdict_code and afr_percent read."""
    return f"({code} > 0 OR {afr} >= {afr_warn_percent():g})"


# The drives the table lists: one field read per drive over the table's day picks them, then
# the table reads its eleven fields for those drives only (at 1,000 hosts 0.3 s, against 2.6 s
# for every drive); the day, not the board's range, keeps it so over a year.
(SERIAL,) = tags(SMART, "serial")
AT_RISK = Variable(
    SERIAL, SMART.name, ("host",), name="at_risk", points_field="verdict_code",
    points_range=LAST_READ_RANGE,
    points_where=_at_risk(str(SMART.f("verdict_code")), str(SMART.f("afr_percent"))),
)
# Chronograf has no such variable: its cell reads the table's fields with each drive's worst
# read of the day beside them (under these names) and keeps the drives AT_RISK would list.
WORST_CODE, WORST_AFR = "worst_verdict_code", "worst_afr_percent"


def _growth_title(name: str) -> str:
    """reallocated_sectors_per_day -> "reallocated /d" (a narrow column header)."""
    return name.removesuffix("_per_day").replace("_sectors", "").replace("_", " ") + " /d"


def _afr_steps() -> tuple[tuple[float, str], ...]:
    """The AFR cell's colours: orange from diskprobe's warn limit, red from its fail limit."""
    steps: tuple[tuple[float, str], ...] = ((afr_warn_percent(), "orange"),)
    if afr_fail_percent() > 0:  # 0 turns diskprobe's AFR fail rule off
        steps += ((afr_fail_percent(), "red"),)
    return steps


def _last_reads(age: str) -> list[str]:
    """Each drive's last read of the table's fields, its age as the column `age`."""
    f = SMART.f
    return [
        agg("last", f("verdict_code")), agg("last", f("verdict")), agg("last", f("afr_percent")),
        age, *(agg("last", field) for field in growth_fields()), agg("last", f("verdict_reasons")),
    ]


def _age_days(hours: str) -> str:
    """The drive's age: power-on hours in days (Grafana shows weeks or years past 7 d)."""
    return f"{hours} / {HOURS_PER_DAY} AS {quote(AGE)}"


def _replace_select() -> Select:
    """Each drive's last read of the table's fields; Grafana reads the drives at risk only."""
    return Select(
        columns=", ".join(_last_reads(_age_days(f"last({SMART.f('power_on_hours')})"))),
        measurement=SMART.name,
        filters=tags(SMART, "host"),
        grafana_filters=((AT_RISK.tag, AT_RISK.variable),),
        group_tags=tags(SMART, *DRIVE),
    )


def _replace_columns() -> tuple[Column, ...]:
    f = SMART.f
    code, verdict, afr, reasons = (f("verdict_code"), f("verdict"), f("afr_percent"),
                                   f("verdict_reasons"))
    return (
        Column(code.name, code.unit, "code"),
        Column(verdict.name, verdict.unit, "verdict"),
        Column(afr.name, afr.unit, "AFR %/year", _afr_steps()),
        Column(AGE, "d", "age"),
        *(Column(field.name, field.unit, _growth_title(field.name)) for field in growth_fields()),
        Column(reasons.name, reasons.unit, "reasons"),
    )


def _replace_description() -> str:
    return (
        "The drives at risk in the last day (a warn or fail verdict, or afr_percent "
        f"from {afr_warn_percent():g} in any read; Chronograf: of its one host), each by its "
        "last SMART read in the last day, sorted by verdict "
        "(2 fail, 1 warn, 0 ok), then by afr_percent, the estimated annualized failure "
        f"rate (hard drives only; orange from diskprobe's warn limit {afr_warn_percent():g}, "
        f"red from its fail limit {afr_fail_percent():g}). The /d columns are each defect "
        "counter's net growth per day over diskprobe's growth_window: above 0 the drive "
        "is losing media now. Age is power-on time."
    )


def _chronograf_replace_select() -> Select:
    """The table's rows of the drives at risk, the list narrowed inside the query: each
    drive's last read, kept where its worst read of the day is at risk (as AT_RISK's list).
    The age is divided out here: InfluxDB 1.x truncates an integer division in a subquery
    (12798 h / 24 gives 533 days there, 533.25 at the top)."""
    f = SMART.f
    hours = f("power_on_hours")
    worst = (agg("max", f("verdict_code"), WORST_CODE), agg("max", f("afr_percent"), WORST_AFR))
    every_drive = replace(_replace_select(),
                          columns=", ".join((*_last_reads(agg("last", hours)), *worst)))
    return Select(
        columns=", ".join(_age_days(str(hours)) if column.name == AGE else quote(column.name)
                          for column in _replace_columns()),
        source=every_drive,
        where=(_at_risk(quote(WORST_CODE), quote(WORST_AFR)),),
        group_tags=every_drive.group_tags,
    )


def _replace_table() -> Panel:
    code = SMART.f("verdict_code")
    grafana = Panel(
        title="Drives to replace, worst first",
        description=_replace_description(),
        kind="table",
        targets=(Target(_replace_select(), code.unit),),
        width=24,
        height=12,
        columns=_replace_columns(),
        sort_by=code.name,
        sort_desc=True,
        then_by=(SMART.f("afr_percent").name,),
        verdict_mapping=True,
        time_from=LAST_READ_RANGE,
    )
    chronograf = Target(_chronograf_replace_select(), code.unit)
    return replace(grafana, chronograf_cells=(replace(grafana, targets=(chronograf,)),))


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
    return right_axis_panel(
        "Drive $serial: failure rate and defects", description,
        (_afr_target(), _sectors_target()),
        right_unit=SMART.f("reallocated_sectors").unit, right_match=".*_sectors$", height=10,
        cells=(("Failure rate estimate (afr_percent)", (_afr_target(),)),
               ("Reallocated and pending sectors", (_sectors_target(),))),
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
