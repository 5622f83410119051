"""Test helpers: fixture paths, a fake /proc + /sys tree, a controllable clock."""

from __future__ import annotations

import os
from pathlib import Path

from diskprobe.metric import Metric
from diskprobe.schema import FIELD_TYPES, measurement

FIXTURES = Path(__file__).parent / "fixtures"


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def write_diskstats(proc: Path, lines: list[str]) -> None:
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "diskstats").write_text("".join(line + "\n" for line in lines))


def add_sys_block(sys_root: Path, name: str, parent: str | None = None, **files: str) -> Path:
    """A /sys/class/block entry; partitions live inside their disk's directory, as in sysfs."""
    devices = sys_root / "devices" / "virtual" / "block"
    target = devices / parent / name if parent else devices / name
    target.mkdir(parents=True, exist_ok=True)
    if parent:
        (target / "partition").write_text("1\n")
    for relative, text in files.items():
        path = target / relative.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    link = sys_root / "class" / "block" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        os.symlink(target, link)
    return target


def assert_schema(metrics: list[Metric]) -> None:
    """Every field is declared for its measurement, with the declared type; tags declared."""
    for metric in metrics:
        spec = measurement(metric.measurement)
        tag_names = {tag.name for tag in spec.tags}
        assert set(metric.tags) <= tag_names, (metric.measurement, set(metric.tags) - tag_names)
        for name, value in metric.fields.items():
            field = spec.field(name)
            assert field is not None, f"{metric.measurement}.{name} not in schema"
            assert type(value) is FIELD_TYPES[field.type], (name, value, field.type)
