"""Output formats: each turns a batch of metrics into the text written to stdout."""

from __future__ import annotations

from typing import Iterable, Protocol

from diskprobe.metric import Metric


class Serializer(Protocol):
    def serialize(self, metrics: Iterable[Metric]) -> str: ...


def make_serializer(name: str) -> Serializer:
    from diskprobe.serializers.influx import InfluxSerializer

    serializers = {"influx": InfluxSerializer}
    try:
        return serializers[name]()
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(serializers)}") from None
