"""HOST_PROC/pressure/io: the kernel's I/O pressure stall information (PSI, 4.20+)."""

from __future__ import annotations

from dataclasses import dataclass

from diskprobe.roots import HostRoots


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


# The format, one line per kind (older kernels and some resources print only "some"):
#   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
#   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
_KEYS = ("avg10", "avg60", "avg300", "total")


def _parse_line(words: list[str]) -> PsiLine | None:
    values: dict[str, str] = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if sep:
            values[key] = value
    try:
        return PsiLine(
            float(values["avg10"]),
            float(values["avg60"]),
            float(values["avg300"]),
            int(values["total"]),
        )
    except (KeyError, ValueError):
        return None


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
    return Pressure(some, lines.get("full"))


def pressure_path(roots: HostRoots) -> str:
    return roots.proc_path("pressure", "io")


def read_pressure(roots: HostRoots) -> Pressure | None:
    """Parsed HOST_PROC/pressure/io; OSError (missing file, EOPNOTSUPP) is the caller's."""
    with open(pressure_path(roots), encoding="ascii", errors="replace") as file:
        return parse_pressure(file.read())
