"""Schema types: a measurement with its tags and typed, unit-carrying fields."""

from __future__ import annotations

from dataclasses import dataclass, field

FIELD_TYPES = {"float": float, "int": int, "bool": bool, "str": str}
GAUGE = "gauge"  # a value as of the sample: a rate, a level, a reading
COUNTER = "counter"  # cumulative: only ever grows, until a wrap or a reset
FIELD_KINDS = (GAUGE, COUNTER)
MEASUREMENT_PREFIX = "diskprobe_"  # every measurement's name starts with it


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str  # float | int | bool | str
    unit: str
    description: str
    kind: str = GAUGE  # GAUGE | COUNTER; Prometheus exposes counters as `_total` counters

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(
                f"field {self.name}: type {self.type!r} is not one of {list(FIELD_TYPES)}"
            )
        if self.kind not in FIELD_KINDS:
            raise ValueError(f"field {self.name}: kind {self.kind!r} is not one of {FIELD_KINDS}")


@dataclass(frozen=True)
class TagSpec:
    name: str
    description: str


@dataclass(frozen=True)
class MeasurementSpec:
    """One measurement. `series_tags` are the tags whose values tell its series apart (one
    device, one mount, one attribute of one drive); the other tags describe that series
    (model, fstype, ...) and do not change while it lives. collectd names its plugin
    instances by them."""

    name: str
    description: str
    tags: tuple[TagSpec, ...]
    fields: tuple[FieldSpec, ...]
    series_tags: tuple[str, ...] = ()
    # name -> spec, for field(): a lookup per field of every point (serializers, checks)
    _by_name: dict[str, FieldSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {spec.name: spec for spec in self.fields})
        if not self.name.startswith(MEASUREMENT_PREFIX):
            raise ValueError(f"measurement {self.name!r} does not start with {MEASUREMENT_PREFIX}")
        tag_names = {tag.name for tag in self.tags}
        unknown = [name for name in self.series_tags if name not in tag_names]
        if unknown:
            raise ValueError(f"{self.name}: series tags {unknown} are not among its tags")

    def field(self, name: str) -> FieldSpec | None:
        return self._by_name.get(name)


def field_spec(name: str, type_: str, unit: str, description: str) -> FieldSpec:
    """A gauge field (the common case)."""
    return FieldSpec(name, type_, unit, description, GAUGE)


def counter_spec(name: str, type_: str, unit: str, description: str) -> FieldSpec:
    """A cumulative counter field: Prometheus exposes it as a `_total` counter."""
    return FieldSpec(name, type_, unit, description, COUNTER)
