"""Golden SMART cases: every drive capture in tests/golden/smart-json and smart-text, read by
the real SmartCollector through the fake smartctl (a real process), gives its hand-reviewed
expected.out.

See tests/golden/README.md. A case is a folder; tests/smart_golden.py runs it as the folder
says (a `version` older than 7.0 makes the collector take the text path). Where expected.out
holds the reviewed correct value and today's plugin emits something else, KNOWN_PLUGIN_BUGS
names the exact line and fields; such a case is reported as xfail, every other line still has
to match, and an entry whose difference disappears fails the test so the entry gets removed.

Also: the schema and the smartctl calls of every case (one process per drive and read: none of
pySMART's own probes reaches smartctl on the text path); failing-* drives warn or fail for the
MANIFEST's reason and healthy ones are ok (tables in tests/smart_golden_verdicts.py); every
response is the corpus capture it names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smart_golden import (
    GoldenRun,
    case_id,
    corpus_root,
    expected_calls,
    golden_cases,
    run_golden_case,
)
from smart_golden_compare import KnownBug, compare_with_expected, known_bug
from smart_golden_verdicts import FAILING, NO_VERDICT, NOT_OK_BUT_HEALTHY_NAMED
from smart_harness import GOLDEN_JSON

from helpers import assert_schema, smart_verdict

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = pytest.mark.xdist_group("test_smart_golden")

CASES = golden_cases()
IDS = [case_id(case) for case in CASES]


# -- known plugin bugs ------------------------------------------------------------------------

BUG_SCSI_REVISION = (
    "json_parser.parse reads firmware from firmware_version/revision only; smartctl >= 7.3 "
    "calls the SCSI one scsi_revision"
)
BUG_SEAGATE_1_7 = (
    "rawvalues.PACKED_LOW_BITS: Seagate 1/7 keep the error count in the high 16 bits "
    "(raw >> 32, smartctl's raw24/raw32 'errors/operations'); the low 32 bits count operations"
)
BUG_MEDIA_GUESS = (
    "json_parser.media_from_attributes says 'hdd' with no evidence at all (no rotation rate, "
    "no attributes): a failed or health-only read gets a made-up media tag"
)
BUG_LIFE_LEFT = (
    "json_parser.life_left_percent takes the normalized value of 169/173 whatever it is: "
    "Apple's 169 (Unknown_Apple_Attrib, Unknown_Attribute) reads 253, no percentage of life left"
)


def _seagate_1_7() -> tuple[KnownBug, ...]:
    return (
        known_bug("diskprobe_smart_attr id=1", BUG_SEAGATE_1_7, "field:raw"),
        known_bug("diskprobe_smart_attr id=7", BUG_SEAGATE_1_7, "field:raw"),
    )


_SCSI_FIRMWARE = (known_bug("diskprobe_smart", BUG_SCSI_REVISION, "field:firmware"),)
_NO_MEDIA = (known_bug("diskprobe_smart", BUG_MEDIA_GUESS, "tag:media"),)
_LIFE_LEFT = (known_bug("diskprobe_smart", BUG_LIFE_LEFT, "field:ssd_life_left_percent"),)
# By case id: "smart-json/<name>": (_SCSI_FIRMWARE, ...). None today.
KNOWN_PLUGIN_BUGS: dict[str, tuple[KnownBug, ...]] = {}


class Runs:
    """Each case read once, on first use (real smartctl processes per case), then shared."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._runs: dict[Path, GoldenRun] = {}

    def __getitem__(self, case: Path) -> GoldenRun:
        if case not in self._runs:
            workdir = self._factory.mktemp(case.name)
            self._runs[case] = run_golden_case(case, workdir)
        return self._runs[case]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_case(case: Path, runs: Runs) -> None:
    known = KNOWN_PLUGIN_BUGS.get(case_id(case), ())
    compare_with_expected(case, runs[case].text, known, pytest.xfail)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden_case_conforms_to_schema_with_one_smartctl_call(case: Path, runs: Runs) -> None:
    run = runs[case]
    assert run.collection.metrics, "every drive gets a point, even a failed read"
    assert_schema(run.collection.metrics)
    # One smartctl process per drive and read, asking for everything (in JSON where smartctl
    # has it); the once-per-collector `--version` check and the scan aside. On the text path
    # none of pySMART's own probes (-d test, -l sataphy/sasphy/background) reaches smartctl.
    assert run.calls == expected_calls(case)
    assert not [line for line in run.log if "Traceback" in line]


def _by_id(name: str) -> Path:
    return next(case for case in CASES if case_id(case) == name)


@pytest.mark.parametrize("name", sorted(FAILING))
def test_failing_drives_warn_or_fail_for_the_right_reason(name: str, runs: Runs) -> None:
    run = runs[_by_id(name)]
    status, reasons = smart_verdict(run.collection.metrics)
    want_status, want_reasons = FAILING[name]
    assert status == want_status, (name, status, reasons)
    assert set(want_reasons) <= set(reasons), (name, reasons)
    assert run.collection.errors == 0


def test_every_failing_case_is_in_the_table() -> None:
    assert {case_id(case) for case in CASES if case.name.startswith("failing-")} == set(FAILING)


def test_every_table_entry_is_a_case() -> None:
    ids = set(IDS)
    for table in (FAILING, NOT_OK_BUT_HEALTHY_NAMED, NO_VERDICT, KNOWN_PLUGIN_BUGS):
        assert set(table) <= ids


@pytest.mark.parametrize(
    "case", [c for c in CASES if not c.name.startswith("failing-")], ids=case_id
)
def test_healthy_drives_are_ok(case: Path, runs: Runs) -> None:
    run, name = runs[case], case_id(case)
    status, reasons = smart_verdict(run.collection.metrics)
    if name in NO_VERDICT:
        assert status is None, (name, status)
        assert run.collection.errors == (1 if NO_VERDICT[name] == "problem" else 0)
        return
    assert run.collection.errors == 0
    if name in NOT_OK_BUT_HEALTHY_NAMED:
        assert (status, reasons) == NOT_OK_BUT_HEALTHY_NAMED[name]
        return
    assert (status, reasons) == ("ok", ()), name


# -- the corpus the cases were copied from ----------------------------------------------------

_COPY = re.compile(
    r"^# (response\.(?:json|txt)): byte-for-byte copy of \.\./shared/corpus/(\S+?);?( |$)"
)


def test_every_corpus_drive_capture_has_a_case() -> None:
    corpus = corpus_root() / "smartctl-json"
    drives = {p.stem for p in corpus.glob("*.json") if not p.name.startswith("scan-")}
    json_cases = {case.name for case in CASES if case.parent == GOLDEN_JSON}
    assert drives <= json_cases
    assert len(json_cases) >= 70


def test_every_response_is_the_corpus_capture_it_names() -> None:
    """PROVENANCE's first line names the corpus file the response is a byte-for-byte copy of."""
    corpus = corpus_root()
    differ = []
    for case in CASES:
        first = (case / "PROVENANCE").read_text(encoding="utf-8").splitlines()[0]
        match = _COPY.match(first)
        assert match, f"{case_id(case)}: PROVENANCE does not name its corpus file: {first}"
        response, source = match.group(1), match.group(2)
        if (case / response).read_bytes() != (corpus / source).read_bytes():
            differ.append(case_id(case))
    assert not differ
