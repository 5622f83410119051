"""Schema coverage both ways, over the whole session (like DataDog's assert_all_metrics_covered).

Every Metric a real collector returns in this process is recorded (measurement, tag keys,
field keys with the value's type): each `collect()` of the classes in diskprobe.collectors,
with the `agent_fields` of its Collection, which the runtime adds to the collector's
diskprobe_agent point, and the diskprobe_agent points `Runtime.gather` builds (its own
fields, for whatever collectors a test gives it). Collectors and runtime are observed, not
replaced: the wrapper calls the original and records what it returned.

At the end of the session:
(a) every recorded measurement, tag and field is in the schema, with the schema's type
    (always checked: one test run is enough to emit a name the schema lacks);
(b) every schema measurement, tag and field was recorded at least once (checked only when
    the whole suite ran: all test files collected, nothing deselected, no -k/-m, no node
    ids, every selected test run; a partial run cannot emit everything).
A failure sets the exit status to 1 and lists the names in a "schema coverage" section,
as pytest-cov's --cov-fail-under does. DISKPROBE_SCHEMA_COVERAGE=list lists the names (b)
would report in a partial run too, without failing it: which names a subset of files emits.

Under pytest-xdist each worker records what its own tests emitted and hands it, with what
it collected and deselected, to the controller (xdist's `workeroutput`), which merges the
workers' records and runs the same checks once, over the whole session; a worker that
crashed makes the run partial.

Also recorded: the diskprobe_training points of the training-job integrations
(training_output.training_metric), which no collector makes.

Not recorded: points the installed command prints in a subprocess, and metrics tests build
themselves (serializer tests feed made-up names on purpose). So a name only the subprocess
tests emit counts as never emitted: cover it in process.

Size: one pytest plugin (conftest.py registers it): the record, the observing wrappers and the
session hooks that judge it share the session's state; the hooks (SchemaCoverage, 150 lines)
are mostly bookkeeping of what a partial run did (xdist workers, deselection, skips).
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import inspect
import os
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pytest

from diskprobe.metric import Metric
from diskprobe.schema import AGENT, FIELD_TYPES, MEASUREMENTS, MeasurementSpec

PLUGIN_NAME = "diskprobe-schema-coverage"


@dataclass
class Emitted:
    """What collectors emitted: tags as (measurement, tag), fields as (measurement, field, type)."""

    measurements: set[str] = field(default_factory=set)
    tags: set[tuple[str, str]] = field(default_factory=set)
    fields: set[tuple[str, str, str]] = field(default_factory=set)

    def merge(self, other: dict[str, list[Any]]) -> None:
        """Add a worker's record (as_data() of its Emitted)."""
        self.measurements.update(other["measurements"])
        self.tags.update((m, t) for m, t in other["tags"])
        self.fields.update((m, f, t) for m, f, t in other["fields"])

    def as_data(self) -> dict[str, list[Any]]:
        """Plain lists, which xdist's channel can carry to the controller."""
        return {
            "measurements": sorted(self.measurements),
            "tags": [list(tag) for tag in sorted(self.tags)],
            "fields": [list(item) for item in sorted(self.fields)],
        }

    def record(self, metric: Metric) -> None:
        self.measurements.add(metric.measurement)
        self.tags.update((metric.measurement, key) for key in metric.tags)
        self.fields.update(
            (metric.measurement, key, type(value).__name__) for key, value in metric.fields.items()
        )


def unknown_names(emitted: Emitted, schema: Sequence[MeasurementSpec] = MEASUREMENTS) -> list[str]:
    """(a): emitted names the schema does not declare, or fields of another type."""
    specs = {spec.name: spec for spec in schema}
    problems = [f"measurement {name}" for name in sorted(emitted.measurements - set(specs))]
    for measurement, tag in sorted(emitted.tags):
        spec = specs.get(measurement)
        if spec is not None and tag not in {t.name for t in spec.tags}:
            problems.append(f"tag {measurement}.{tag}")
    for measurement, name, type_name in sorted(emitted.fields):
        spec = specs.get(measurement)
        declared = spec.field(name) if spec is not None else None
        if spec is not None and declared is None:
            problems.append(f"field {measurement}.{name}")
        elif declared is not None and FIELD_TYPES[declared.type].__name__ != type_name:
            problems.append(f"field {measurement}.{name}: {type_name}, schema {declared.type}")
    return problems


def unemitted_names(
    emitted: Emitted, schema: Sequence[MeasurementSpec] = MEASUREMENTS
) -> list[str]:
    """(b): schema names no collector emitted."""
    tags = emitted.tags
    fields = {(measurement, name) for measurement, name, _ in emitted.fields}
    problems: list[str] = []
    for spec in schema:
        if spec.name not in emitted.measurements:
            problems.append(f"measurement {spec.name}")
        problems += [
            f"tag {spec.name}.{t.name}" for t in spec.tags if (spec.name, t.name) not in tags
        ]
        problems += [
            f"field {spec.name}.{f.name}" for f in spec.fields if (spec.name, f.name) not in fields
        ]
    return problems


def collector_classes(broken: list[str]) -> list[type]:
    """Every class in diskprobe.collectors that defines `collect` itself (no Protocols).
    A module that does not import is named in `broken` (its own tests fail on it): one
    collector being edited must not stop every other test file from running."""
    found: list[type] = []
    package = importlib.import_module("diskprobe.collectors")
    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        try:
            module = importlib.import_module(info.name)
        except Exception as error:
            broken.append(f"{info.name}: {type(error).__name__}: {error}")
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and "collect" in vars(cls)
                and not getattr(cls, "_is_protocol", False)
            ):
                found.append(cls)
    return found


def _observing_collect(collect: Callable[..., Any], emitted: Emitted) -> Callable[..., Any]:
    @functools.wraps(collect)
    def observed(self: object, *args: Any, **kwargs: Any) -> Any:
        result = collect(self, *args, **kwargs)
        for metric in getattr(result, "metrics", ()):
            emitted.record(metric)
        agent_fields = getattr(result, "agent_fields", None)
        if agent_fields:
            emitted.record(Metric(AGENT.name, {}, dict(agent_fields), 0))
        return result

    return observed


def _observing_gather(
    gather: Callable[..., list[Metric]], emitted: Emitted
) -> Callable[..., list[Metric]]:
    """The runtime's own diskprobe_agent points (the collectors' points are recorded by
    their collect(); tests also hand the runtime collectors of their own)."""

    @functools.wraps(gather)
    def observed(self: object, *args: Any, **kwargs: Any) -> list[Metric]:
        metrics = gather(self, *args, **kwargs)
        for metric in metrics:
            if metric.measurement == AGENT.name:
                emitted.record(metric)
        return metrics

    return observed


def expected_test_files(config: pytest.Config) -> set[Path]:
    """The test files a run without arguments collects (testpaths, python_files)."""
    root = config.rootpath
    skip_dirs = config.getini("norecursedirs")
    files: set[Path] = set()
    for testpath in config.getini("testpaths") or ["."]:
        for pattern in config.getini("python_files"):
            for path in (root / testpath).rglob(pattern):
                parts = path.relative_to(root).parts[:-1]
                if not any(fnmatch.fnmatch(part, skip) for part in parts for skip in skip_dirs):
                    files.add(path.resolve())
    return files


class SchemaCoverage:
    """The pytest plugin: observes collectors for the session, checks at its end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.emitted = Emitted()
        self.patch = pytest.MonkeyPatch()
        self.collected_files: set[Path] = set()
        self.deselected = 0
        self.selected = 0
        self.finished = 0
        self.skipped = 0
        self.broken: list[str] = []  # modules that could not be observed
        self.crashed: list[str] = []  # xdist workers that went down with an error
        self.report: list[str] = []
        self.failed = False
        self.worker = hasattr(config, "workerinput")  # an xdist worker: the controller judges

    def observe(self) -> None:
        classes = collector_classes(self.broken)
        for cls in classes:
            collect = _observing_collect(vars(cls)["collect"], self.emitted)
            self.patch.setattr(cls, "collect", collect)
        try:
            from diskprobe.runtime import Runtime
        except Exception as error:
            self.broken.append(f"diskprobe.runtime: {type(error).__name__}: {error}")
            return
        gather = _observing_gather(Runtime.gather, self.emitted)
        self.patch.setattr(Runtime, "gather", gather)
        self._observe_training()

    def _observe_training(self) -> None:
        """diskprobe_training: made by the training-job integrations, not by a collector."""
        try:
            from diskprobe.integrations import training_output
        except Exception as error:
            self.broken.append(f"diskprobe.integrations.training_output: {error}")
            return
        make = training_output.training_metric

        @functools.wraps(make)
        def observed(*args: Any, **kwargs: Any) -> Metric:
            metric = make(*args, **kwargs)
            self.emitted.record(metric)
            return metric

        self.patch.setattr(training_output, "training_metric", observed)

    def partial_because(self, session: pytest.Session) -> str | None:
        """Why this run cannot cover every schema name; None for the whole suite."""
        option = self.config.option
        missing = expected_test_files(self.config) - self.collected_files
        reasons = [
            (getattr(option, "keyword", ""), "-k"),
            (getattr(option, "markexpr", ""), "-m"),
            (self.deselected, f"{self.deselected} tests deselected"),
            (any("::" in arg for arg in self.config.args), "node ids given"),
            (missing, f"{len(missing)} test files not collected"),
            (self.finished < self.selected, f"{self.selected - self.finished} tests not run"),
            (self.crashed, f"xdist workers crashed: {', '.join(self.crashed)}"),
            (session.shouldstop or session.shouldfail, "stopped early"),
        ]
        said = [why for present, why in reasons if present]
        return ", ".join(said) if said else None

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        path = report.nodeid.split("::")[0]
        if path.endswith(".py") and "::" not in report.nodeid:
            self.collected_files.add((self.config.rootpath / path).resolve())

    @pytest.hookimpl
    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.deselected += len(items)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.selected = len(items)

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.finished += 1

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and report.when in ("setup", "call"):
            self.skipped += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """xdist controller: a worker is done; merge what it recorded."""
        output = getattr(node, "workeroutput", {}).get(PLUGIN_NAME)
        if error is not None or output is None:
            self.crashed.append(str(getattr(node.gateway, "id", node)))
            return
        self.emitted.merge(output["emitted"])
        self.collected_files.update(Path(path) for path in output["collected_files"])
        self.deselected = max(self.deselected, output["deselected"])
        self.selected = max(self.selected, output["selected"])
        self.broken += [name for name in output["broken"] if name not in self.broken]

    def _hand_to_controller(self) -> None:
        self.config.workeroutput[PLUGIN_NAME] = {  # type: ignore[attr-defined]
            "emitted": self.emitted.as_data(),
            "collected_files": sorted(str(path) for path in self.collected_files),
            "deselected": self.deselected,
            "selected": self.selected,
            "broken": self.broken,
        }

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.patch.undo()
        if self.worker:
            self._hand_to_controller()
            return
        if self.selected == 0:
            return
        unknown = unknown_names(self.emitted)
        partial = self.partial_because(session)
        listing = os.environ.get("DISKPROBE_SCHEMA_COVERAGE") == "list"
        unemitted = unemitted_names(self.emitted) if listing or not partial else []
        if self.broken:
            self.report += ["could not observe (import failed):", *_bullets(self.broken)]
        if unknown:
            self.report.append("emitted, but not in the schema (or of another type):")
            self.report += _bullets(unknown)
        if unemitted:
            self.report.append(
                f"in the schema, but no collector emitted it in this run ({self.skipped} tests "
                "skipped; subprocess output does not count, see tests/schema_coverage.py):"
            )
            self.report += _bullets(unemitted)
        if partial:
            self.report.append(f"unemitted schema names not checked: partial run ({partial})")
        self.failed = bool(unknown or (unemitted and not partial))
        if not partial and not self.failed and not self.broken:
            names = sum(1 + len(spec.tags) + len(spec.fields) for spec in MEASUREMENTS)
            self.report.append(f"every one of the schema's {names} names was emitted, and "
                               "nothing outside it")  # fmt: skip
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report:
            terminalreporter.section("schema coverage", red=self.failed, bold=self.failed)
            for line in self.report:
                terminalreporter.write_line(line)


def _bullets(names: Iterable[str]) -> list[str]:
    return [f"  {name}" for name in names]


def register(config: pytest.Config) -> None:
    """Called from tests/conftest.py's pytest_configure."""
    if config.pluginmanager.has_plugin(PLUGIN_NAME) or config.pluginmanager.is_blocked(PLUGIN_NAME):
        return  # -p no:diskprobe-schema-coverage turns it off
    coverage = SchemaCoverage(config)
    coverage.observe()
    config.pluginmanager.register(coverage, PLUGIN_NAME)
