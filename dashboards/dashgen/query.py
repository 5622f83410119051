"""One InfluxQL SELECT, written once and rendered for Grafana, Chronograf or Kapacitor.

The flavours differ only in a few places: the time filter (`$timeFilter`,
`:dashboardTime:`, or none because Kapacitor adds it), the GROUP BY interval
(`$__interval`, `:interval:`), how a dashboard variable filters a tag, and whether the
measurement is qualified with database and retention policy (Chronograf and Kapacitor query
without a default database).
"""

from __future__ import annotations

from dataclasses import dataclass

from dashgen.refs import quote

AUTO = "auto"  # group_time: the dashboard's interval


@dataclass(frozen=True)
class Select:
    columns: str  # 'mean("util_percent") AS "util_percent"', built from refs.Field
    measurement: str = ""  # the measurement, or
    source: Select | None = None  # a subquery
    also: tuple[Select, ...] = ()  # more subqueries beside `source`: FROM (a), (b)
    where: tuple[str, ...] = ()  # further conditions, ANDed
    filters: tuple[str, ...] = ()  # tags filtered by the dashboard variable of that name
    # Grafana only: (tag, variable) filters by a variable of another name (model.Variable
    # .points_where); Chronograf has no such variable and reads every value, unless the
    # panel's Chronograf cell narrows them in its own query (model.Panel.chronograf_cells).
    grafana_filters: tuple[tuple[str, str], ...] = ()
    group_tags: tuple[str, ...] = ()
    group_time: str | None = None  # AUTO or a duration ("10s")
    fill: str | None = None  # with group_time: "none", "null", "0", "previous"

    def __post_init__(self) -> None:
        if bool(self.measurement) == (self.source is not None):
            raise ValueError("a Select reads a measurement or a subquery, not both")
        if self.also and self.source is None:
            raise ValueError("more subqueries go beside a first one")

    def innermost(self) -> Select:
        return self if self.source is None else self.source.innermost()


@dataclass(frozen=True)
class Flavor:
    name: str  # "grafana", "chronograf" or "kapacitor"
    database: str = "telegraf"
    retention_policy: str = "autogen"
    # Chronograf: template variables chosen from SHOW TAG VALUES (rendered quoted, exact match);
    # the others are free-text regexes that default to ".*" (Chronograf has no "All").
    exact_vars: tuple[str, ...] = ("host",)
    window: str = ""  # kapacitor: how far back a subquery reads (Kapacitor times the outer one)
    fixed_range: str = ""  # chronograf: a cell's own relative range (model.Panel.time_from)


def grafana(retention_policy: str = "") -> Flavor:
    """Grafana queries its data source's database; a `retention_policy` qualifies the
    measurement (`"diskprobe_1y"."diskprobe_io"`), none reads the default policy."""
    return Flavor("grafana", retention_policy=retention_policy)


def chronograf(database: str = "telegraf", retention_policy: str = "autogen") -> Flavor:
    return Flavor("chronograf", database, retention_policy)


def kapacitor(window: str, database: str = "telegraf", retention_policy: str = "autogen") -> Flavor:
    return Flavor("kapacitor", database, retention_policy, window=window)


def render(select: Select, flavor: Flavor, top: bool = True) -> str:
    """The InfluxQL text of `select` for `flavor`; `top` is False inside a subquery."""
    if select.source is not None:
        source = ", ".join("(" + render(one, flavor, top=False) + ")"
                           for one in (select.source, *select.also))
    elif flavor.name == "grafana":
        source = quote(select.measurement)
        if flavor.retention_policy:
            source = f"{quote(flavor.retention_policy)}.{source}"
    else:
        source = ".".join(
            quote(part) for part in (flavor.database, flavor.retention_policy, select.measurement)
        )
    conditions = _time_condition(select, flavor, top) + [_filter(t, flavor) for t in select.filters]
    if flavor.name == "grafana":
        conditions += [f"{quote(tag)} =~ /^${name}$/" for tag, name in select.grafana_filters]
    conditions += list(select.where)
    text = f"SELECT {select.columns} FROM {source}"
    if conditions:
        text += " WHERE " + " AND ".join(conditions)
    groups = [] if select.group_time is None else [f"time({_interval(select, flavor)})"]
    if not (flavor.name == "kapacitor" and top):  # Kapacitor: .groupBy() on the query node
        groups += [quote(tag) for tag in select.group_tags]
    elif select.group_time is not None:
        raise ValueError("a Kapacitor query groups by time with .groupBy(time(...)), not here")
    if groups:
        text += " GROUP BY " + ", ".join(groups)
    if select.fill is not None:
        if select.group_time is None:
            raise ValueError("fill() needs GROUP BY time()")
        text += f" fill({select.fill})"
    return text


def _time_condition(select: Select, flavor: Flavor, top: bool) -> list[str]:
    if select.source is not None:
        return []  # the subquery is timed; InfluxDB 1.x applies the outer range to it
    if flavor.name == "grafana":
        return ["$timeFilter"]
    if flavor.name == "chronograf":
        if flavor.fixed_range:
            return [f"time > now() - {flavor.fixed_range}"]
        return ["time > :dashboardTime: AND time < :upperDashboardTime:"]
    if top:
        return []  # Kapacitor ANDs `time >= start AND time < stop` onto the outer statement
    if not flavor.window:
        raise ValueError("a Kapacitor subquery needs a window")
    return [f"time > now() - {flavor.window}"]


def _filter(tag: str, flavor: Flavor) -> str:
    if flavor.name == "grafana":
        return f"{quote(tag)} =~ /^${tag}$/"
    if flavor.name == "chronograf":
        if tag in flavor.exact_vars:
            return f"{quote(tag)} = :{tag}:"
        return f"{quote(tag)} =~ /^:{tag}:$/"
    raise ValueError("alert queries do not filter by dashboard variables")


def _interval(select: Select, flavor: Flavor) -> str:
    if select.group_time != AUTO:
        assert select.group_time is not None
        return select.group_time
    if flavor.name == "grafana":
        return "$__interval"
    if flavor.name == "chronograf":
        return ":interval:"
    raise ValueError("alert queries group by a fixed duration")
