"""The package's shape, held by tests: every module sits in one layer and imports only from its
own layer, the layers before it (README's order) and the foundation; modules and functions
stay small unless a module says why.

The layer order is read from README.md's Architecture section, so the README and this test
cannot disagree. Every module is placed in LAYERS below: a new module fails until it is placed.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from typing import Iterator, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "plugin" / "diskprobe"
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

CHAIN = re.compile(r"^`(\w+(?: (?:→|->) \w+)+)`$", re.M)
MAX_FILE_LINES = 250
MAX_FUNCTION_LINES = 50


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


def imports(package: Path) -> Iterator[Import]:
    """Every diskprobe import of every module, function-level ones included.

    `from diskprobe.smart import json_parser` is an import of the submodule smart.json_parser.
    """
    known = modules(package)
    for importer, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node, importer, is_package)
                submodules = [f"{source}.{alias.name}" for alias in node.names]
                names = [name for name in submodules if _relative(name) in known] or [source]
            for name in names:
                imported = _relative(name)
                if imported is not None:
                    yield Import(importer, imported, node.lineno)


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


def size_problems(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        where = path.relative_to(package.parent)
        lines = len(text.splitlines())
        docstring = ast.get_docstring(tree) or ""
        said_why = any(line.strip().startswith("Size:") for line in docstring.splitlines())
        if lines > MAX_FILE_LINES and not said_why:
            problems.append(f"{where}: {lines} lines, and no 'Size:' line in its docstring")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1  # decorators not
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return problems


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
    """Over 250 lines a module says why in a `Size:` docstring line; no function over 50."""
    problems = size_problems(PACKAGE)
    assert not problems, "\n".join(problems)
