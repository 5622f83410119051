"""HOST_PROC/pressure/io: the kernel's I/O pressure stall information (PSI, 4.20+)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from diskprobe.roots import HostRoots
from diskprobe.sources.u64 import parse_u64


@dataclass(frozen=True)
class PsiLine:
    """One line: running averages (percent) and the cumulative stall time (microseconds)."""

    avg10: float
    avg60: float
    avg300: float
    total: int


@dataclass(frozen=True)
class Pressure:
    some: PsiLine
    full: PsiLine | None  # only "some" on kernels that print a single line
    rejected: tuple[str, ...] = ()  # kinds whose line was there but unusable ("full")


# The format, one line per kind (older kernels and some resources print only "some"):
#   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
#   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
_KEYS = ("avg10", "avg60", "avg300", "total")
_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # "%lu.%02lu", in ASCII


def _parse_line(words: list[str]) -> PsiLine | None:
    values: dict[str, str] = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if sep:
            values[key] = value
    try:
        texts, total = [values[key] for key in _KEYS[:3]], values["total"]
    except KeyError:
        return None
    if not all(_PERCENT.fullmatch(text) for text in texts):  # float() takes other digits, "1_0"
        return None
    averages = [float(text) for text in texts]
    # The kernel prints "%lu.%02lu" percentages and a u64 of microseconds: "avg10=nan",
    # "total=1e400" or 400 digits (whose rate would overflow) are no PSI line.
    if not all(0.0 <= value <= 100.0 for value in averages):  # also False for NaN
        return None
    stall_us = parse_u64(total)
    if stall_us is None:
        return None
    return PsiLine(averages[0], averages[1], averages[2], stall_us)


def parse_pressure(text: str) -> Pressure | None:
    """The parsed file, or None when it has no valid "some" line."""
    lines: dict[str, PsiLine | None] = {}
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in ("some", "full"):
            lines[words[0]] = _parse_line(words)
    some = lines.get("some")
    if some is None:
        return None
    rejected = tuple(kind for kind, parsed in lines.items() if parsed is None)
    return Pressure(some, lines.get("full"), rejected)


def pressure_path(roots: HostRoots) -> str:
    return roots.proc_path("pressure", "io")


def read_pressure(roots: HostRoots) -> Pressure | None:
    """Parsed HOST_PROC/pressure/io; OSError (missing file, EOPNOTSUPP) is the caller's."""
    with open(pressure_path(roots), encoding="ascii", errors="replace") as file:
        return parse_pressure(file.read())
