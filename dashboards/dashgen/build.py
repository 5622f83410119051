"""Small constructors for the queries and panels the boards and alerts repeat; every name goes
through refs."""

from __future__ import annotations

from dashgen.model import Column, Panel, Target
from dashgen.query import AUTO, Select
from dashgen.refs import Field, Measurement, quote, same_unit

# The range of the tables of every drive's last read (Panel.time_from): diskprobe reads each
# drive every [smart] interval (30 min by default), so a day holds every live drive's last read.
LAST_READ_RANGE = "1d"


def agg(function: str, field: Field, alias: str = "") -> str:
    """`function("field") AS "alias"` (alias defaults to the field name)."""
    return f"{function}({field}) AS {quote(alias or field.name)}"


def tags(measurement: Measurement, *names: str) -> tuple[str, ...]:
    """Tag names, each checked to exist on `measurement`."""
    for name in names:
        measurement.tag(name)
    return names


def where_tag(measurement: Measurement, tag: str, value: str) -> str:
    return f"{measurement.tag(tag)} = '{value}'"


def series(
    measurement: Measurement,
    function: str,
    fields: tuple[tuple[Field, str], ...],
    by: tuple[str, ...],
    filters: tuple[str, ...],
    where: tuple[str, ...] = (),
    fill: str = "none",
    legend: str = "",
    right_axis: bool = False,
) -> Target:
    """A time series per `by` tags: `function` of each (field, alias), GROUP BY time(auto).
    The fields share one unit, or with `right_axis` two (a graph whose right axis takes the
    second, right_axis_panel): then the target's unit is the first field's, the left axis's."""
    select = Select(
        columns=", ".join(agg(function, field, alias) for field, alias in fields),
        measurement=measurement.name,
        filters=tags(measurement, *filters),
        where=where,
        group_tags=tags(measurement, *by),
        group_time=AUTO,
        fill=fill,
    )
    unit = fields[0][0].unit if right_axis else same_unit(*(field for field, _ in fields))
    return Target(select, unit, legend or " ".join(f"$tag_{t}" for t in by) + " $col")


def right_axis_panel(
    title: str,
    description: str,
    targets: tuple[Target, ...],
    right_unit: str,
    right_match: str,
    height: int,
    cells: tuple[tuple[str, tuple[Target, ...]], ...],
) -> Panel:
    """A full-width graph whose series matching `right_match` go on a right axis in
    `right_unit`. Chronograf draws one y axis: there it is `cells`, a (title, targets) each."""
    return Panel(
        title=title,
        description=description,
        kind="timeseries",
        targets=targets,
        width=24,
        height=height,
        right_unit=right_unit,
        right_match=right_match,
        chronograf_cells=tuple(Panel(cell_title, description, "timeseries", cell_targets)
                               for cell_title, cell_targets in cells),
    )


def alert_query(measurement: Measurement, value: str, labels: tuple[str, ...],
                where: tuple[str, ...] = ()) -> Select:
    """An alert's query: the expression `value` as the column "value", per `labels` tags (the
    alert's labels, model.Alert.labels) over the alert's window."""
    return Select(
        columns=f"{value} AS {quote('value')}",
        measurement=measurement.name,
        where=where,
        group_tags=tags(measurement, *labels),
    )


def last_value(measurement: Measurement, field: Field, labels: tuple[str, ...]) -> Select:
    """An alert's query on the last value of `field` per `labels` tags in the window."""
    return alert_query(measurement, f"last({field})", labels)


def table(
    measurement: Measurement,
    cells: tuple[tuple[str, Field, str, str], ...],
    by: tuple[str, ...],
    filters: tuple[str, ...],
    where: tuple[str, ...] = (),
) -> tuple[Target, tuple[Column, ...]]:
    """One row per `by` tags: (function, field, alias, title) per column, over the range."""
    select = Select(
        columns=", ".join(agg(function, field, alias) for function, field, alias, _ in cells),
        measurement=measurement.name,
        filters=tags(measurement, *filters),
        where=where,
        group_tags=tags(measurement, *by),
    )
    columns = tuple(
        Column(alias or field.name, field.unit, title) for _, field, alias, title in cells
    )
    return Target(select, columns[0].unit), columns
