"""diskprobe_pressure: how long tasks waited for I/O (PSI)."""

from __future__ import annotations

from diskprobe.schema.types import MeasurementSpec
from diskprobe.schema.types import field_spec as _f

PRESSURE = MeasurementSpec(
    name="diskprobe_pressure",
    description="Host I/O pressure stall information from HOST_PROC/pressure/io (kernel 4.20+, CONFIG_PSI): the share of time tasks were stalled waiting for I/O.",
    tags=(),
    fields=(
        _f(
            "some_avg10",
            "float",
            "%",
            "Share of the last 10 s in which at least one task was stalled on I/O.",
        ),
        _f("some_avg60", "float", "%", "Same over 60 s."),
        _f("some_avg300", "float", "%", "Same over 300 s."),
        _f(
            "full_avg10",
            "float",
            "%",
            "Share of the last 10 s in which all non-idle tasks were stalled on I/O at once.",
        ),
        _f("full_avg60", "float", "%", "Same over 60 s."),
        _f("full_avg300", "float", "%", "Same over 300 s."),
        _f(
            "some_stall_us_per_sec",
            "float",
            "us/s",
            "Stall time (some) per second of the interval, from the total= counter.",
        ),
        _f(
            "full_stall_us_per_sec",
            "float",
            "us/s",
            "Stall time (full) per second of the interval, from the total= counter.",
        ),
    ),
)
