"""Dashboards and alerts as plain data, independent of Grafana, Chronograf and Kapacitor."""

from __future__ import annotations

from dataclasses import dataclass

from dashgen.query import Select


@dataclass(frozen=True)
class Target:
    """One query of a panel."""

    select: Select
    unit: str  # schema unit of the values (refs.same_unit of the fields it reads)
    legend: str = ""  # Grafana alias: $tag_device, $col


@dataclass(frozen=True)
class Column:
    """A value column of a table panel: the alias in the SELECT and its unit."""

    name: str
    unit: str
    title: str = ""
    # Grafana: colour the cell from these (value, colour) steps up, e.g. the AFR warn and fail
    # limits; below the first step the cell stays green.
    steps: tuple[tuple[float, str], ...] = ()
    # Grafana: show these (value, text, colour) in place of the values, on a coloured cell,
    # e.g. a boolean's "true" as "fail-slow" in red.
    states: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Panel:
    title: str
    description: str
    # "timeseries", "table", "state-timeline", "heatmap" (Grafana: a series per bucket, named
    # by its upper bound); "bar" in Chronograf cells only (it has no heatmap).
    kind: str
    targets: tuple[Target, ...]
    width: int = 12  # of Grafana's 24 columns (Chronograf: half that)
    height: int = 8
    columns: tuple[Column, ...] = ()  # tables
    sort_by: str = ""  # tables: the column to sort by
    sort_desc: bool = False
    then_by: tuple[str, ...] = ()  # tables: ties broken by these (Grafana), in `then_desc`'s
    then_desc: bool | None = None  # direction (None: sort_desc's)
    verdict_mapping: bool = False  # 0 ok, 1 warn, 2 fail with colours
    # Grafana, graphs: show these (value, text, colour) in place of the values (a state
    # timeline of bottleneck_code as the verdicts' names).
    states: tuple[tuple[str, str, str], ...] = ()
    min_interval: str = ""  # Grafana: the smallest $__interval ("1m"), whatever the range
    repeat: str = ""  # Grafana: one copy of the panel per selected value of this variable
    # A second y axis (Grafana): series whose name matches `right_match` use `right_unit`.
    right_unit: str = ""
    right_match: str = ""
    # The panel's cells in Chronograf, where it cannot be drawn as in Grafana: Chronograf draws
    # one y axis (a panel with a right axis becomes two cells) and has no hidden list variable
    # (the fleet table narrows its drives in its own query there).
    chronograf_cells: tuple[Panel, ...] = ()
    # Grafana: a dashed red line across the graph at this value (a limit of diskprobe's own).
    threshold: float | None = None
    # A relative range of its own ("1d"), whatever the board's: Grafana's panel timeFrom,
    # Chronograf's `now() - 1d`. The "now" tables read a day, not the board's week: the last
    # read is at most [smart] interval old, and a week of every drive's reads is 7x the points.
    time_from: str = ""
    # Heatmaps: the unit of the buckets' bounds (the y axis), e.g. "s" for `le`.
    rows_unit: str = ""

    @property
    def unit(self) -> str:
        """The unit of the left axis (tables: of the first column)."""
        if self.columns:
            return self.columns[0].unit
        return self.targets[0].unit


@dataclass(frozen=True)
class Variable:
    """A dashboard variable filtering tag `tag`, its values from SHOW TAG VALUES."""

    tag: str
    measurement: str
    depends_on: tuple[str, ...] = ()  # variables whose selection narrows this one's values
    multi: bool = True  # Grafana: multi-select; False picks one value (one drive)
    # Grafana: offer "All" (sent as the regex `.*`, not a list of every value) and open on it.
    # Without it a board opens on the first value: a per-host board at 1,000 hosts opening on
    # all of them reads millions of rows per panel (docs/fleet.md: Query times).
    offers_all: bool = True
    # Chronograf: open on every value too. There a tag of query.Flavor.exact_vars (host) is
    # one value picked from SHOW TAG VALUES, as Chronograf has no "All"; this makes it a
    # free-text regex defaulting to `.*`, as device, path and serial are there.
    chronograf_all: bool = False
    # Grafana only: values from the points matching this field condition (a raw SELECT of the
    # tag and `points_field`; Grafana takes each row's first value), not from every series,
    # under the name `name`, hidden. The fleet table lists only the drives at risk through it:
    # one field read per drive instead of eleven (docs/fleet.md: Query times).
    points_where: str = ""
    points_field: str = ""
    points_range: str = ""  # a relative range of its own ("1d"), else the board's
    name: str = ""

    @property
    def variable(self) -> str:
        """The dashboard variable's name: `name`, else the tag's."""
        return self.name or self.tag


@dataclass(frozen=True)
class Dashboard:
    slug: str
    title: str
    description: str
    variables: tuple[Variable, ...]
    panels: tuple[Panel, ...]
    time_from: str = "now-6h"  # Grafana relative time; Chronograf uses the same duration
    refresh: str = "1m"


WARN, CRIT = "warning", "critical"  # Level severities


@dataclass(frozen=True)
class Level:
    """One severity of an alert: fires when the value satisfies `op` with `params`.

    The operators are Grafana's threshold expression: gt (v > a), lt (v < a),
    within_range (a < v < b), outside_range (v < a or v > b); and is_true (no params) for a
    boolean value: Grafana reads true as 1 (gt 0.5), Kapacitor compares it with TRUE.
    """

    severity: str  # "warning" or "critical"
    op: str
    params: tuple[float, ...]


@dataclass(frozen=True)
class Alert:
    uid: str
    group: str
    title: str
    query: Select  # one column named "value"; group_tags are the alert's labels
    window: str  # how far back the query reads
    levels: tuple[Level, ...]
    pending: str  # Grafana `for:`
    every: str  # evaluation interval (Grafana group interval, Kapacitor .every)
    measure: str  # what "value" is, for the alert table of docs/dashboards.md
    summary: str  # with {host}, {serial}, {path}, {device}, {value} placeholders
    why: str
    runbook: str
    # More values for the summary, each (name, InfluxQL expression over the query's source,
    # e.g. 'last("slowdown_ratio")') shown as {name}: Kapacitor selects them beside "value",
    # Grafana queries and reduces each on its own (an expression reads one column per query).
    extra_values: tuple[tuple[str, str], ...] = ()
    # Alerts judging one thing from two sources (a training rank: its meter, the agent) share
    # `dedup`: Grafana's label `dedup` and Kapacitor's topic, and an alert ID made of
    # `dedup` and `dedup_labels` only, so a route or topic handler sends one notification.
    dedup: str = ""
    dedup_labels: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return self.query.group_tags
