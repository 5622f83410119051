"""The one value type that flows from collectors to serializers."""

from __future__ import annotations

from typing import Union

FieldValue = Union[float, int, bool, str]


class Metric:
    """One point: a measurement, its tags, its typed fields and the sample time."""

    __slots__ = ("fields", "measurement", "tags", "time_ns")

    def __init__(
        self,
        measurement: str,
        tags: dict[str, str],
        fields: dict[str, FieldValue],
        time_ns: int,
    ) -> None:
        self.measurement = measurement
        self.tags = tags
        self.fields = fields
        self.time_ns = time_ns

    def __repr__(self) -> str:
        return f"Metric({self.measurement!r}, {self.tags!r}, {self.fields!r}, {self.time_ns})"
