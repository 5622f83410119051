"""diskprobe_pressure: host I/O pressure (PSI) averages and stall time per second."""

from __future__ import annotations

import errno

from diskprobe.collectors.base import BaseCollector, Collection, CollectorContext
from diskprobe.config import PressureConfig
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema.pressure import PRESSURE
from diskprobe.sources.pressure import Pressure, PsiLine, pressure_path, read_pressure

MEASUREMENT = PRESSURE.name
# No PSI: the file is missing (kernel < 4.20, CONFIG_PSI=n) or reads fail with EOPNOTSUPP
# (psi=0 on the kernel command line); neither changes while the host runs.
ABSENT_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EOPNOTSUPP, errno.ENOTSUP})


# Stall time is wall time (some: at least one task stalled), so it cannot grow faster than
# the clock; the tolerance covers the gap between the kernel's read and our timestamp.
STALL_TOLERANCE = 1.25


def stall_rate(before: PsiLine, now: PsiLine, elapsed: float) -> float | None:
    """Microseconds stalled per second of the interval, or None (no interval, a reset, or
    a jump more than the interval's wall time: not one the kernel makes)."""
    delta = now.total - before.total
    if elapsed <= 0 or delta < 0 or delta > elapsed * 1e6 * STALL_TOLERANCE:
        return None
    return delta / elapsed


def pressure_fields(
    now: Pressure, before: Pressure | None, elapsed: float
) -> dict[str, FieldValue]:
    fields: dict[str, FieldValue] = {}
    kinds: list[tuple[str, PsiLine, PsiLine | None]] = [
        ("some", now.some, before.some if before else None)
    ]
    if now.full is not None:
        kinds.append(("full", now.full, before.full if before else None))
    for kind, line, previous in kinds:
        fields[f"{kind}_avg10"] = line.avg10
        fields[f"{kind}_avg60"] = line.avg60
        fields[f"{kind}_avg300"] = line.avg300
        rate = stall_rate(previous, line, elapsed) if previous else None
        if rate is not None:
            fields[f"{kind}_stall_us_per_sec"] = rate
    return fields


class PressureCollector(BaseCollector[PressureConfig]):
    """Reads HOST_PROC/pressure/io each interval; turns itself off for good without PSI."""

    name = "pressure"
    needs_prime = True

    def __init__(self, config: PressureConfig, context: CollectorContext) -> None:
        super().__init__(config, context)
        self._previous: tuple[Pressure, float] | None = None
        self.disabled = False

    def collect(self) -> Collection:
        if self.disabled:
            return Collection()
        try:
            pressure = read_pressure(self._roots)
        except OSError as error:
            return self._failed(error)
        now, time_ns = self._clock.monotonic(), self._clock.wall_ns()
        if pressure is None:
            self._log.warn_once("pressure-parse", f"pressure: cannot parse {self._path()}")
            return Collection(errors=1)
        for kind in pressure.rejected:  # "full" unusable: "some" is still reported
            message = f"pressure: {self._path()}: unusable '{kind}' line; left out"
            self._log.warn_once(f"pressure-bad:{kind}", message)
        before, elapsed = None, 0.0
        if self._previous is not None:
            before, elapsed = self._previous[0], now - self._previous[1]
        self._previous = (pressure, now)
        fields = pressure_fields(pressure, before, elapsed)
        return Collection(metrics=[Metric(MEASUREMENT, {}, fields, time_ns)], items=1)

    def _path(self) -> str:
        return pressure_path(self._roots)

    def _failed(self, error: OSError) -> Collection:
        if error.errno in ABSENT_ERRNOS:
            self.disabled = True
            self._log.info(
                f"pressure: no I/O pressure information at {self._path()} "
                f"({error.strerror or error}: kernel older than 4.20, CONFIG_PSI off or psi=0 "
                f"on the kernel command line); {MEASUREMENT} is off"
            )
            return Collection()
        self._log.warn_once("pressure-read", f"pressure: cannot read {self._path()}: {error}")
        return Collection(errors=1)
