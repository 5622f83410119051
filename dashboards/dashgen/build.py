"""Small constructors for the queries the boards repeat; every name goes through refs."""

from __future__ import annotations

from dashgen.model import Column, Target
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
) -> Target:
    """A time series per `by` tags: `function` of each (field, alias), GROUP BY time(auto)."""
    select = Select(
        columns=", ".join(agg(function, field, alias) for field, alias in fields),
        measurement=measurement.name,
        filters=tags(measurement, *filters),
        where=where,
        group_tags=tags(measurement, *by),
        group_time=AUTO,
        fill=fill,
    )
    unit = same_unit(*(field for field, _ in fields))
    return Target(select, unit, legend or " ".join(f"$tag_{t}" for t in by) + " $col")


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
