"""Output formats: each turns a batch of metrics into the text written out."""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol

from diskprobe.metric import Metric

FORMATS = ("influx", "collectd", "prometheus")


class Serializer(Protocol):
    def serialize(self, metrics: Iterable[Metric]) -> str: ...


def make_serializer(
    name: str, env: Mapping[str, str], interval: float, slowest_interval: float = 0.0
) -> Serializer:
    """The serializer for a format; `env` and `interval` serve collectd's identifiers,
    `slowest_interval` (the SMART cadence) how long Prometheus keeps a series between reads."""
    if name == "influx":
        from diskprobe.serializers.influx import InfluxSerializer

        return InfluxSerializer()
    if name == "collectd":
        from diskprobe.serializers.collectd import CollectdSerializer

        return CollectdSerializer.from_env(env, interval)
    if name == "prometheus":
        from diskprobe.serializers.prometheus import STALE_AFTER, PrometheusSerializer

        return PrometheusSerializer(stale_after=max(STALE_AFTER, 3 * slowest_interval))
    raise ValueError(f"unknown format {name!r}; known: {', '.join(FORMATS)}")
