"""The package's shape, held by tests: every module sits in one layer and imports only from its
own layer, the layers before it (README's order) and the foundation; the dashboard generator
(dashboards/dashgen) imports only diskprobe's schema and pure modules, and diskprobe never
imports it; modules and functions stay small: in plugin/ and dashboards/dashgen/ always, in the
tests' helper modules (tests/**, not test_*.py) unless a module says why in a `Size:` line.

The layer order is read from README.md's Architecture section, so the README and this test
cannot disagree. Every module is placed in LAYERS below: a new module fails until it is placed.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "plugin" / "diskprobe"
DASHGEN = ROOT / "dashboards" / "dashgen"
TESTS = ROOT / "tests"
README = ROOT / "README.md"

FOUNDATION = "foundation"  # every layer may import it; it imports no layer
ENTRY = "entry points"  # above every layer: what a user runs or imports
ROOT_MODULE = "__init__"  # diskprobe/__init__.py (__version__)

# Module (relative to diskprobe) -> layer. "pkg.*" places a package and every module in it:
# used only for packages named after their layer (or all foundation / all entry points).
LAYERS = {
    # The foundation: the data model, logging, paths, files and the configuration.
    ROOT_MODULE: FOUNDATION,
    "metric": FOUNDATION,
    "schema.*": FOUNDATION,
    "log": FOUNDATION,
    "roots": FOUNDATION,
    "files": FOUNDATION,
    "durations": FOUNDATION,
    "state": FOUNDATION,
    "state_sections": FOUNDATION,
    "config.*": FOUNDATION,  # the sections, their checks, the file, --sample-config
    # A drive spec is configuration vocabulary (like a duration): the config checks them.
    "smart.devices": FOUNDATION,
    "smart.thresholds": FOUNDATION,  # the verdict's limits: [smart.thresholds] names them
    # Sources: the kernel's files and child programs, read and parsed into records.
    "sources.*": "sources",
    "smart": "sources",  # the package's docstring only
    "smart.child": "sources",
    "smart.runner": "sources",
    "smart.workers": "sources",
    "smart.reader": "sources",
    "smart.text_path": "sources",
    "smart.pysmart_adapter": "sources",
    "smart.nvme_cli": "sources",
    "smart.json_parser": "sources",
    "smart.json_protocols": "sources",
    "smart.json_values": "sources",
    "smart.nvme_smart_log": "sources",
    "smart.text_parser": "sources",
    "smart.text_logs": "sources",
    "smart.json_logs": "sources",
    "smart.rawvalues": "sources",
    "smart.model": "sources",  # the record every read produces, as sources.diskstats' records
    # Compute: arithmetic on what the sources read.
    "compute.*": "compute",
    "smart.verdict": "compute",
    "smart.afr": "compute",  # the failure-rate table (package data) and the estimate from it
    "smart.verdict_table": "compute",  # the docs' verdict and failure-rate tables, from the rules
    "smart.memory": "compute",  # baselines across reads, as compute.forecast's windows
    # Collectors: sources and compute into points of the schema.
    "collectors.*": "collectors",
    "smart.metrics": "collectors",
    "serializers.*": "serializers",
    "outputs.*": "outputs",
    # The loop that drives them all; how the process meets its supervisor.
    "runtime": "runtime",
    "lifecycle": "runtime",
    # Entry points: the command line and the library API; they may wire any layer.
    "__main__": ENTRY,
    "cli": ENTRY,
    "doctor": ENTRY,
    "doctor_latency": ENTRY,  # doctor's [latency] check
    "sudoers": ENTRY,
    "guard": ENTRY,
    "guard_units": ENTRY,  # DiskGuard's sizes and percentages
    "integrations.*": ENTRY,
    "diagnose.*": ENTRY,  # `diskprobe diagnose`: a watch of one job, its report
}

# What dashgen may import from diskprobe (relative names; "x.*": every module of package x):
# the schema, and modules that only name or compute things (no I/O, no process, no state), so
# that the dashboards and alerts take the plugin's own names, limits and text and cannot
# disagree with it. Nothing that reads a host, runs, or writes output.
DASHGEN_MAY_IMPORT = (
    "schema",  # the data model: measurements, tags, fields, units (refs, downsample, rules)
    "schema.*",
    # arithmetic on records: the bottleneck verdicts' names (boards_training) and each
    # verdict's advice, as text (compute.bottleneck_advice: alerts_job, alerts_training)
    "compute.*",
    "metric",  # the point type and its value types
    "durations",  # duration text <-> seconds
    "config.sections",  # the sections as dataclasses: their defaults (failslow: IoConfig)
    "smart.thresholds",  # the verdict's limits, as data
    "smart.verdict",  # VerdictRules, GROWTH_COUNTERS: the verdict's limits (risk)
    "smart.afr",  # the failure-rate table (package data, read only) and its lookup (risk)
    "serializers.prometheus",  # Prometheus naming: family(), LABEL_RENAMES (prom_flavor)
    "serializers.prometheus_histogram",  # NAME, the latency histogram's family (alerts_latency)
)
GENERATOR_NAMES = ("dashgen", "dashboards")  # what diskprobe may never import

CHAIN = re.compile(r"^`(\w+(?: (?:→|->) \w+)+)`$", re.M)
MAX_FILE_LINES = 250
MAX_FUNCTION_LINES = 50
# Test helpers held to the limits with no `Size:` line (issue 38: split by responsibility).
STRICT_HELPERS = ("bench/budget_host.py",)


class Import(NamedTuple):
    importer: str
    imported: str
    line: int


def readme_layer_order() -> list[str]:
    """The layers in README.md's one-line order (`sources → compute → ... → outputs`)."""
    chains = CHAIN.findall(README.read_text(encoding="utf-8"))
    assert len(chains) == 1, f"README.md needs exactly one `a → b → c` layer line: {chains}"
    return re.split(r" (?:→|->) ", chains[0])


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package by its name relative to diskprobe (ROOT_MODULE for root)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts) or ROOT_MODULE] = path
    return found


def layer_of(module: str) -> str | None:
    if module in LAYERS:
        return LAYERS[module]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        placed = LAYERS.get(".".join(parts[:end]) + ".*")
        if placed is not None:
            return placed
    return None


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = ["diskprobe", *([] if importer == ROOT_MODULE else importer.split("."))]
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _relative(name: str) -> str | None:
    """diskprobe.x.y -> x.y; diskprobe -> ROOT_MODULE; anything else -> None."""
    if name == "diskprobe":
        return ROOT_MODULE
    return name[len("diskprobe.") :] if name.startswith("diskprobe.") else None


def _imported(node: ast.Import | ast.ImportFrom, source: str, known: dict[str, Path]) -> list[str]:
    """The modules an import statement imports (absolute names); `source`: an ImportFrom's
    absolute module. `from diskprobe.smart import json_parser` imports smart.json_parser."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    submodules = [f"{source}.{alias.name}" for alias in node.names]
    return [name for name in submodules if _relative(name) in known] or [source]


def imports(package: Path) -> Iterator[Import]:
    """Every diskprobe import of every module, function-level ones included."""
    known = modules(package)
    for importer, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            source = ""
            if isinstance(node, ast.ImportFrom):
                source = _absolute(node, importer, is_package)
            for name in _imported(node, source, known):
                imported = _relative(name)
                if imported is not None:
                    yield Import(importer, imported, node.lineno)


def _absolute_imports(path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Each absolute import statement of a module, with the module an ImportFrom names ("" for
    an Import); a relative one stays inside the module's own package."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield node, ""
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node, node.module or ""


def generator_imports(dashgen: Path, package: Path) -> Iterator[Import]:
    """Every diskprobe import of every dashgen module (importer: its path in dashboards/)."""
    known = modules(package)
    for path in sorted(dashgen.rglob("*.py")):
        for node, source in _absolute_imports(path):
            for name in _imported(node, source, known):
                imported = _relative(name)
                if imported is not None:
                    yield Import(path.relative_to(dashgen.parent).as_posix(), imported, node.lineno)


def may_import(allowed: Iterable[str], module: str) -> bool:
    return any(module == entry or (entry.endswith(".*") and module.startswith(entry[:-1]))
               for entry in allowed)  # fmt: skip


def generator_import_problems(dashgen: Path, package: Path) -> list[str]:
    """dashgen importing what DASHGEN_MAY_IMPORT does not list, and diskprobe importing dashgen."""
    problems = [
        f"{found.importer}:{found.line} imports diskprobe.{found.imported}: not in "
        "DASHGEN_MAY_IMPORT (the schema and pure modules)"
        for found in generator_imports(dashgen, package)
        if not may_import(DASHGEN_MAY_IMPORT, found.imported)
    ]
    for importer, path in modules(package).items():
        for node, source in _absolute_imports(path):
            for name in _imported(node, source, {}):
                if name.split(".")[0] in GENERATOR_NAMES:
                    where = f"diskprobe/{path.relative_to(package)}:{node.lineno}"
                    problems.append(f"{importer} imports {name}, the dashboard generator ({where})")
    return problems


def rank(layer: str, order: list[str]) -> int:
    """Foundation 0, README's layers 1..n, entry points above them all."""
    if layer == FOUNDATION:
        return 0
    return len(order) + 1 if layer == ENTRY else order.index(layer) + 1


def layer_violations(package: Path, order: list[str]) -> list[str]:
    problems = [f"{name}: not placed in LAYERS" for name in modules(package) if not layer_of(name)]
    for found in imports(package):
        low, high = layer_of(found.importer), layer_of(found.imported)
        if low and high and rank(high, order) > rank(low, order):
            problems.append(
                f"{found.importer} ({low}) imports {found.imported} ({high}), a layer above it "
                f"(diskprobe/{modules(package)[found.importer].relative_to(package)}:{found.line})"
            )
    return problems


def size_reason(tree: ast.Module) -> str | None:
    """What the module docstring's `Size:` line says ("": nothing); None: it has none."""
    for line in (ast.get_docstring(tree) or "").splitlines():
        if line.strip().startswith("Size:"):
            return line.strip()[len("Size:") :].strip()
    return None


def size_problems(files: Iterable[Path], base: Path, size_line: bool) -> list[str]:
    """Modules over MAX_FILE_LINES and functions over MAX_FUNCTION_LINES (decorators not
    counted), each named by its path under `base`. With `size_line`, a module whose docstring
    has a line `Size: <why>` may be longer and so may its functions (a `Size:` line that says
    nothing is a problem); without, no `Size:` line excuses anything."""
    problems = []
    for path in sorted(files):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        where, lines, reason = path.relative_to(base), len(text.splitlines()), size_reason(tree)
        over = [f"{where}: {lines} lines"] if lines > MAX_FILE_LINES else []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over.append(f"{where}:{node.lineno} {node.name}: {length} lines")
        if not size_line:
            problems += over
            if reason is not None:
                problems.append(f"{where}: a 'Size:' line, which excuses nothing here")
        elif reason is None:
            problems += [f"{problem}, and no 'Size:' line in its docstring" for problem in over]
        elif not reason:
            problems.append(f"{where}: its 'Size:' line does not say why")
    return problems


def helper_modules(tests: Path) -> list[Path]:
    """Every module under tests/ not named test_*.py: helpers, benchmarks, conftest.py."""
    return [path for path in sorted(tests.rglob("*.py")) if not path.name.startswith("test_")]


def helper_size_problems(tests: Path) -> list[str]:
    strict = {tests / name for name in STRICT_HELPERS}
    return (size_problems(set(helper_modules(tests)) - strict, tests.parent, size_line=True)
            + size_problems(strict, tests.parent, size_line=False))  # fmt: skip


# -- the tests --------------------------------------------------------------------------------


def test_readme_order_names_exactly_the_layers_modules_are_placed_in() -> None:
    order = readme_layer_order()
    assert len(set(order)) == len(order), order
    assert set(LAYERS.values()) - {FOUNDATION, ENTRY} == set(order)


def test_every_module_is_placed_and_imports_no_layer_above_its_own() -> None:
    problems = layer_violations(PACKAGE, readme_layer_order())
    assert not problems, "\n".join(problems)


def test_every_placement_names_an_existing_module() -> None:
    known = modules(PACKAGE)
    stale = [
        key
        for key in LAYERS
        if not (key in known or any(name.startswith(key[:-1]) for name in known))
    ]
    assert stale == [], "LAYERS places modules that no longer exist"


def test_a_planted_upward_import_and_an_unplaced_module_are_caught(tmp_path: Path) -> None:
    copy = tmp_path / "diskprobe"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    u64 = copy / "sources" / "u64.py"
    u64.write_text(u64.read_text() + "\n\ndef _late():\n    from ..collectors import base\n")
    (copy / "sources" / "unplaced_probe.py").write_text("import diskprobe.outputs.base\n")
    (copy / "misc.py").write_text('"""Nowhere yet."""\n')
    problems = layer_violations(copy, readme_layer_order())
    assert "misc: not placed in LAYERS" in problems
    assert any(p.startswith("sources.u64 (sources) imports collectors.base (collectors)")
               for p in problems), problems  # fmt: skip
    assert any(p.startswith("sources.unplaced_probe (sources) imports outputs.base (outputs)")
               for p in problems), problems  # fmt: skip


def test_modules_and_functions_stay_small() -> None:
    """No module over 250 lines, no function over 50: a `Size:` line excuses nothing here."""
    problems = size_problems(PACKAGE.rglob("*.py"), PACKAGE.parent, size_line=False)
    assert not problems, "\n".join(problems)


def test_the_dashboard_generator_stays_small() -> None:
    """The plugin's limits, in dashboards/dashgen: no exemption either."""
    problems = size_problems(DASHGEN.rglob("*.py"), DASHGEN.parent, size_line=False)
    assert not problems, "\n".join(problems)


def test_test_helpers_stay_small_or_say_why() -> None:
    """Modules under tests/ not named test_*.py: the same limits, or a `Size:` docstring line
    saying why (it covers the module's functions too); STRICT_HELPERS without one."""
    problems = helper_size_problems(TESTS)
    assert not problems, "\n".join(problems)


def test_dashgen_imports_only_the_schema_and_pure_modules_and_never_the_reverse() -> None:
    known = modules(PACKAGE)
    stale = [entry for entry in DASHGEN_MAY_IMPORT if not any(may_import([entry], name)
                                                              for name in known)]  # fmt: skip
    assert stale == [], "DASHGEN_MAY_IMPORT names modules that no longer exist"
    assert list(generator_imports(DASHGEN, PACKAGE)), "no diskprobe import found in dashgen"
    problems = generator_import_problems(DASHGEN, PACKAGE)
    assert not problems, "\n".join(problems)


def _pad(path: Path, lines: int, docstring: str = "") -> None:
    """`path` rewritten to `lines` lines: a docstring, then comments."""
    head = f'"""{docstring}"""\n' if docstring else ""
    path.write_text(head + "# padding\n" * (lines - head.count("\n")))


def _long_function(path: Path, lines: int) -> int:
    """A function of `lines` lines appended to `path`; the line it starts on."""
    text = path.read_text()
    start = len(text.splitlines()) + 3
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    path.write_text(text + f"\n\ndef planted():\n{body}")
    return start


def test_planted_sizes_are_caught_in_the_plugin_and_the_generator(tmp_path: Path) -> None:
    for source in (PACKAGE, DASHGEN):
        copy = tmp_path / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
        _pad(copy / "planted_long.py", 251, "Long.\n\nSize: one table, read whole.\n")
        _pad(copy / "planted_short.py", 3, "Short.\n\nSize: one function, read whole.\n")
        start = _long_function(copy / "planted_short.py", 51)
        problems = size_problems(copy.rglob("*.py"), tmp_path, size_line=False)
        name = source.name
        assert f"{name}/planted_long.py: 251 lines" in problems, problems
        assert f"{name}/planted_short.py:{start} planted: 51 lines" in problems, problems
        assert f"{name}/planted_long.py: a 'Size:' line, which excuses nothing here" in problems
        assert f"{name}/planted_short.py: a 'Size:' line, which excuses nothing here" in problems


def test_planted_helper_sizes_are_caught(tmp_path: Path) -> None:
    copy = tmp_path / "tests"
    for path in helper_modules(TESTS):
        (copy / path.relative_to(TESTS)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, copy / path.relative_to(TESTS))
    start = _long_function(copy / "helpers.py", 51)
    _pad(copy / "faults" / "conftest.py", 251, "Fixtures.")
    _pad(copy / "bench" / "budget_host.py", 260, "A host.\n\nSize: it is a whole host.\n")
    _pad(copy / "bench" / "planted_said.py", 300, "Data.\n\nSize: one table, read whole.\n")
    _pad(copy / "planted_blank.py", 300, "Data.\n\nSize:\n")
    _pad(copy / "test_planted.py", 400, "A test module: not a helper.")
    _long_function(copy / "test_planted.py", 60)
    problems = helper_size_problems(copy)
    planted = [
        f"tests/helpers.py:{start} planted: 51 lines, and no 'Size:' line in its docstring",
        "tests/faults/conftest.py: 251 lines, and no 'Size:' line in its docstring",
        "tests/bench/budget_host.py: 260 lines",
        "tests/bench/budget_host.py: a 'Size:' line, which excuses nothing here",
        "tests/planted_blank.py: its 'Size:' line does not say why",
    ]
    assert [problem for problem in planted if problem not in problems] == [], problems
    assert not [problem for problem in problems if "planted_said" in problem or
                "test_planted" in problem]  # fmt: skip


def test_planted_generator_imports_are_caught(tmp_path: Path) -> None:
    package, dashgen = tmp_path / "diskprobe", tmp_path / "dashgen"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(DASHGEN, dashgen, ignore=shutil.ignore_patterns("__pycache__"))
    (dashgen / "planted.py").write_text(
        "from diskprobe.schema import IO\nfrom diskprobe.outputs import influxdb\n\n\n"
        "def late():\n    import diskprobe.sources.diskstats\n"
    )
    (package / "sources" / "planted.py").write_text(
        "import dashgen.model\n\n\ndef late():\n    from dashgen import refs\n"
    )
    problems = generator_import_problems(dashgen, package)
    assert sorted(problems) == [
        "dashgen/planted.py:2 imports diskprobe.outputs.influxdb: not in DASHGEN_MAY_IMPORT "
        "(the schema and pure modules)",
        "dashgen/planted.py:6 imports diskprobe.sources.diskstats: not in DASHGEN_MAY_IMPORT "
        "(the schema and pure modules)",
        "sources.planted imports dashgen, the dashboard generator (diskprobe/sources/planted.py:5)",
        "sources.planted imports dashgen.model, the dashboard generator "
        "(diskprobe/sources/planted.py:1)",
    ], problems
