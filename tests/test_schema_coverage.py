"""The session-wide schema coverage check (tests/schema_coverage.py) can fail, both ways."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from diskprobe.collectors.io import IoCollector
from diskprobe.metric import FieldValue, Metric
from diskprobe.runtime import Runtime
from diskprobe.schema import FS, MEASUREMENTS, FieldSpec, MeasurementSpec

from schema_coverage import PLUGIN_NAME, Emitted, collector_classes, unemitted_names, unknown_names

TESTS = Path(__file__).resolve().parent


def _everything() -> Emitted:
    """A record in which every schema name was emitted once, with its declared type."""
    emitted = Emitted()
    samples: dict[str, FieldValue] = {"float": 1.0, "int": 1, "bool": True, "str": "x"}
    for spec in MEASUREMENTS:
        tags = {tag.name: "t" for tag in spec.tags}
        emitted.record(Metric(spec.name, tags, {f.name: samples[f.type] for f in spec.fields}, 1))
    return emitted


def _with_fields(spec: MeasurementSpec, fields: tuple[FieldSpec, ...]) -> list[MeasurementSpec]:
    changed = dataclasses.replace(spec, fields=fields)
    return [changed if m.name == spec.name else m for m in MEASUREMENTS]


def test_full_coverage_passes_both_ways() -> None:
    assert unknown_names(_everything()) == []
    assert unemitted_names(_everything()) == []


def test_a_field_removed_from_the_schema_but_emitted_fails() -> None:
    schema = _with_fields(FS, tuple(f for f in FS.fields if f.name != "avail_bytes"))
    assert unknown_names(_everything(), schema) == [f"field {FS.name}.avail_bytes"]


def test_a_made_up_schema_field_that_nothing_emits_fails() -> None:
    made_up = FieldSpec("made_up_bytes", "int", "B", "Nothing emits this.")
    schema = _with_fields(FS, (*FS.fields, made_up))
    assert unemitted_names(_everything(), schema) == [f"field {FS.name}.made_up_bytes"]


def test_unknown_measurements_tags_and_types_fail() -> None:
    emitted = _everything()
    emitted.record(Metric("diskprobe_nope", {}, {"x": 1}, 1))
    emitted.record(Metric(FS.name, {"made_up_tag": "v"}, {"used_bytes": 1.5}, 1))
    assert unknown_names(emitted) == [
        "measurement diskprobe_nope",
        f"tag {FS.name}.made_up_tag",
        f"field {FS.name}.used_bytes: float, schema int",
    ]


def test_a_missing_tag_or_measurement_is_unemitted() -> None:
    emitted = Emitted()
    emitted.record(Metric(FS.name, {}, {f.name: 0 for f in FS.fields}, 1))
    missing = unemitted_names(emitted, [FS])
    assert missing == [f"tag {FS.name}.{tag.name}" for tag in FS.tags]
    assert unemitted_names(Emitted(), [FS])[0] == f"measurement {FS.name}"


def test_every_collector_and_the_runtime_are_observed(pytestconfig: pytest.Config) -> None:
    """The recorder watches what it claims to: a collect() it misses would hide names."""
    assert pytestconfig.pluginmanager.get_plugin(PLUGIN_NAME) is not None
    classes = collector_classes([])
    names = {getattr(cls, "name", None) for cls in classes}
    assert {"io", "filesystems", "smart", "pressure", "process_io", "cgroup_io", "output"} <= names
    for cls in classes:
        assert hasattr(vars(cls)["collect"], "__wrapped__"), cls
    assert hasattr(IoCollector.collect, "__wrapped__")
    assert hasattr(Runtime.gather, "__wrapped__")


# -- the whole check, in a pytest run of its own, with and without xdist workers ----------------

CONFTEST = """
import sys
sys.path.insert(0, {tests!r})
import schema_coverage

def pytest_configure(config):
    schema_coverage.register(config)
"""
EMITTING_TEST = """
from diskprobe.metric import Metric
from diskprobe.schema import MEASUREMENTS
from schema_coverage import PLUGIN_NAME

SAMPLES = {{"float": 1.0, "int": 1, "bool": True, "str": "x"}}
LEFT_OUT = {left_out!r}


def test_emits_its_share(pytestconfig):
    emitted = pytestconfig.pluginmanager.get_plugin(PLUGIN_NAME).emitted
    for spec in MEASUREMENTS[{share}::2]:
        fields = {{f.name: SAMPLES[f.type] for f in spec.fields if f.name != LEFT_OUT}}
        emitted.record(Metric(spec.name, {{t.name: "t" for t in spec.tags}}, fields, 1))
"""


def _suite(tmp_path: Path, left_out: str) -> Path:
    """A suite of two files, each emitting every name of half the measurements (all the
    schema together, but `left_out`): with two workers each half is on its own worker."""
    (tmp_path / "tests").mkdir(parents=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (tmp_path / "tests" / "conftest.py").write_text(CONFTEST.format(tests=str(TESTS)))
    for share in (0, 1):
        text = EMITTING_TEST.format(left_out=left_out, share=share)
        (tmp_path / "tests" / f"test_half_{share}.py").write_text(text)
    return tmp_path


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


XDIST = ["-n", "2", "--dist", "loadfile"]


def test_the_session_check_passes_on_everything_and_fails_on_a_name_never_emitted(
    tmp_path: Path,
) -> None:
    """With two xdist workers, each emitting half of the schema: the controller merges them."""
    complete = _run(_suite(tmp_path / "complete", left_out=""), *XDIST, "-v")
    assert complete.returncode == 0, complete.stdout
    assert "every one of the schema's" in complete.stdout
    assert "[gw0]" in complete.stdout and "[gw1]" in complete.stdout, complete.stdout
    missing = _run(_suite(tmp_path / "missing", left_out="avail_bytes"), *XDIST)
    assert missing.returncode == 1, missing.stdout
    assert f"field {FS.name}.avail_bytes" in missing.stdout
    assert "no collector emitted it" in missing.stdout
    partial = _run(_suite(tmp_path / "partial", left_out="avail_bytes"), *XDIST, "-k", "half")
    assert partial.returncode == 0 and "partial run (-k)" in partial.stdout, partial.stdout


def test_without_xdist_a_name_never_emitted_fails_the_run(tmp_path: Path) -> None:
    missing = _run(_suite(tmp_path, left_out="avail_bytes"))
    assert missing.returncode == 1, missing.stdout
    assert f"field {FS.name}.avail_bytes" in missing.stdout
