"""Schema types: a measurement with its tags and typed, unit-carrying fields."""

from __future__ import annotations

from dataclasses import dataclass

FIELD_TYPES = {"float": float, "int": int, "bool": bool, "str": str}


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str  # float | int | bool | str
    unit: str
    description: str
    kind: str = "gauge"  # "counter": cumulative, only ever grows (until a reset)


@dataclass(frozen=True)
class TagSpec:
    name: str
    description: str


@dataclass(frozen=True)
class MeasurementSpec:
    name: str
    description: str
    tags: tuple[TagSpec, ...]
    fields: tuple[FieldSpec, ...]

    def field(self, name: str) -> FieldSpec | None:
        return next((spec for spec in self.fields if spec.name == name), None)


def field_spec(name: str, type_: str, unit: str, description: str) -> FieldSpec:
    # Raw cumulative counters say so in their description, which the README shows too.
    kind = "counter" if "(counters = true)" in description else "gauge"
    return FieldSpec(name, type_, unit, description, kind)
