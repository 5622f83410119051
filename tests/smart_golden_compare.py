"""A golden SMART case's run against its reviewed expected.out (tests/test_smart_golden.py):
lines paired by drive and attribute id, every tag and field equal (type included), except
exactly the differences a KnownBug names; the run itself: smart_golden.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn

from diskprobe.schema.smart import SMART_ATTR
from smart_golden import case_id

from lineproto import Point, parse_lines


@dataclass(frozen=True)
class KnownBug:
    line: str  # "diskprobe_smart" or "diskprobe_smart_attr id=7"
    differs: frozenset[str]  # exactly these differ: "field:firmware", "tag:media"
    bug: str


def known_bug(line: str, bug: str, *differs: str) -> KnownBug:
    return KnownBug(line, frozenset(differs), bug)


def golden_key(point: Point) -> str:
    """How golden lines are paired: the drive point, and each attribute by its id."""
    if point.measurement == SMART_ATTR.name:
        return f"{SMART_ATTR.name} id={point.tags.get('id')}"
    return point.measurement


def golden_by_key(points: list[Point]) -> dict[str, Point]:
    keyed = {golden_key(point): point for point in points}
    assert len(keyed) == len(points), "two lines with the same measurement and attribute id"
    return keyed


def golden_differences(expected: Point, actual: Point) -> frozenset[str]:
    """The tags and fields that differ; type() as well: 1, 1.0 and True are not equal here."""
    out = set()
    for kind, want, got in (
        ("tag", expected.tags, actual.tags),
        ("field", expected.fields, actual.fields),
    ):
        for name in set(want) | set(got):
            missing = name not in want or name not in got
            if missing or (type(want[name]), want[name]) != (type(got[name]), got[name]):
                out.add(f"{kind}:{name}")
    if expected.time_ns != actual.time_ns:
        out.add("timestamp")
    return frozenset(out)


def compare_with_expected(
    case: Path, text: str, known: tuple[KnownBug, ...], xfail: Callable[[str], NoReturn]
) -> None:
    """The run's lines against the reviewed expected.out: the same lines, every tag and field
    equal, except exactly the differences a KnownBug names (then `xfail` with its bug); a
    KnownBug whose difference is gone fails, so that its entry gets removed."""
    name = case_id(case)
    expected_file = case / "expected.out"
    assert expected_file.is_file(), (
        f"{name}: no expected.out; run tests/golden/regenerate.py {name}, review the lines "
        "against the response, then write it with --write"
    )
    expected = golden_by_key(parse_lines(expected_file.read_text(encoding="utf-8")))
    actual = golden_by_key(parse_lines(text))
    assert list(actual) == list(expected), f"{name}: lines differ\n{text}"
    by_line = {bug.line: bug for bug in known}
    differing = {key: golden_differences(expected[key], actual[key]) for key in expected}
    differing = {key: names for key, names in differing.items() if names}
    unexpected = {
        key: sorted(names)
        for key, names in differing.items()
        if key not in by_line or names != by_line[key].differs
    }
    assert not unexpected, (
        f"{name}: output differs from the reviewed expected.out in {unexpected}\ngot:\n{text}"
    )
    fixed = sorted(line for line in by_line if line not in differing)
    assert not fixed, (
        f"{name}: {fixed} now match expected.out: the bug is fixed, remove the entry "
        "from KNOWN_PLUGIN_BUGS"
    )
    if differing:
        xfail("; ".join(sorted({by_line[key].bug for key in differing})))
