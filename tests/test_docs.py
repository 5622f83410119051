"""The docs are held to the code: generated blocks, example output, snippets, commands, and
every link, repository path and quoted log line in the Markdown files.

The generated blocks are rewritten by tests/update_generated.py; the checks of links, paths
and log lines live in docs_check.py, each with a planted case here that it must catch.
"""

from __future__ import annotations

import re
import sys

from diskprobe.config.sample import render_sample_config
from diskprobe.metric import Metric
from diskprobe.schema import MEASUREMENTS, TRAINING
from diskprobe.smart.verdict_table import render_afr_table, render_table
from docs_check import (
    DOC_FILES,
    dead_links,
    markdown_links,
    missing_paths,
    unprintable_log_lines,
)
from docs_text import ROOT, block, doc, readme
from update_generated import (
    BLOCKS,
    command_line,
    dashboard_alert_table,
    metric_overview,
    metric_tables,
)

from helpers import assert_schema
from lineproto import parse_lines

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

# Blocks generated elsewhere, each with its own test: (file, block).
OTHER_BLOCKS = {
    ("README.md", "example-output"),  # tests/example_output.py; the test below
    ("README.md", "example-training"),  # a training job's spool (by hand); the test below
    ("dashboards/README.md", "alert-table"),  # dashboards/generate.py; test_dashboards.py
    ("docs/filesystems.md", "influxql-fill-24h"),  # hand-written; test_readme_influxql.py
    ("docs/smart.md", "influxql-realloc-24h"),
    ("docs/smart.md", "influxql-nvme-wear"),
    ("docs/fail-slow.md", "influxql-fail-slow-last"),
    ("docs/fail-slow.md", "influxql-fail-slow-fleet"),
}


def _fenced(text: str) -> str:
    match = re.search(r"```[a-z]*\n(.*?)```", text, re.S)
    assert match
    return match.group(1)


# -- generated blocks -------------------------------------------------------------------------


def test_metric_overview_is_the_schema() -> None:
    overview = block(readme(), "metrics-overview")
    assert overview == metric_overview()
    for spec in MEASUREMENTS:
        assert f"[`{spec.name}`](docs/metrics.md#{spec.name})" in overview


def test_metrics_page_is_the_schema() -> None:
    page = doc("metrics")
    assert block(page, "metrics") == metric_tables()
    for spec in MEASUREMENTS:
        for field in spec.fields:
            assert f"| `{field.name}` | {field.type} | {field.unit} |" in page


def test_alert_table_is_the_generators() -> None:
    assert block(doc("dashboards"), "alert-table") == dashboard_alert_table()


def test_verdict_table_is_the_rules() -> None:
    assert block(doc("smart"), "verdict-table") == render_table()


def test_failure_rate_table_is_the_data() -> None:
    assert block(doc("smart"), "afr-table") == render_afr_table()


def test_configuration_section_is_the_sample_config() -> None:
    assert _fenced(block(readme(), "sample-config")) == render_sample_config()


def test_command_line_synopsis_is_the_parsers() -> None:
    """Every flag the parser knows is in the README's synopsis, with its choices."""
    synopsis = block(readme(), "command-line")
    assert synopsis == command_line()
    for flag in ("--listen ADDRESS:PORT", "--web.config.file FILE", "--version",
                 "--output stdout|textfile|influxdb|http", "[doctor|sudoers|diagnose]",
                 "--pid PID", "--cgroup PATH"):  # fmt: skip
        assert flag in synopsis


def test_every_generated_block_has_a_generator() -> None:
    known = {(path, name) for path, name, _ in BLOCKS} | OTHER_BLOCKS
    found = {
        (str(path.relative_to(ROOT)), name)
        for path in DOC_FILES()
        for name in re.findall(r"<!-- ([\w-]+):start -->", path.read_text(encoding="utf-8"))
    }
    assert found == known, f"unknown: {found - known}; gone: {known - found}"


def test_example_output_parses_and_fits_the_schema() -> None:
    points = parse_lines(_fenced(block(readme(), "example-output")))
    job_made = {TRAINING.name}  # sent by training jobs, not by the agent: their own example
    assert {p.measurement for p in points} == {spec.name for spec in MEASUREMENTS} - job_made
    training = parse_lines(_fenced(block(readme(), "example-training")))
    assert {p.measurement for p in training} == job_made
    assert_schema([Metric(p.measurement, p.tags, p.fields, p.time_ns)
                   for p in [*points, *training]])  # fmt: skip


# -- snippets and commands --------------------------------------------------------------------


def test_execd_snippet_is_valid_telegraf_toml() -> None:
    snippet = next(
        block for block in re.findall(r"```toml\n(.*?)```", readme(), re.S)
        if "inputs.execd" in block
    )  # fmt: skip
    execd = tomllib.loads(snippet)["inputs"]["execd"][0]
    assert execd["signal"] == "none" and execd["data_format"] == "influx"
    assert execd["restart_delay"] == "10s" and execd["command"][0].endswith("/diskprobe")


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", readme(), re.S)
    assert len(commands) >= 2 and commands[1] == "./tests/run.sh"
    assert "exec ./tests/run.sh" in (ROOT / ".ci" / "run").read_text()
    assert "diskprobe --once" in commands[0]


def test_readme_names_the_regeneration_command() -> None:
    assert "`.venv/bin/python tests/update_generated.py`" in readme()
    assert "tests/golden/regenerate.py" in readme()  # the goldens: separate on purpose


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    """Linked from the README, or from a docs page the README links."""
    from_readme = set(markdown_links(ROOT / "README.md"))
    reachable = {target.removeprefix("docs/").partition("#")[0] for target in from_readme}
    for name in sorted(reachable):
        if (ROOT / "docs" / name).is_file():
            reachable |= {t.partition("#")[0] for t in markdown_links(ROOT / "docs" / name)}
    pages = {page.name for page in (ROOT / "docs").glob("*.md")}
    assert not pages - reachable, f"not linked from README.md: {sorted(pages - reachable)}"


# -- links, paths, log lines ------------------------------------------------------------------


def test_links_and_anchors_resolve() -> None:
    problems = [problem for path in DOC_FILES() for problem in dead_links(path)]
    assert not problems, "\n".join(problems)


def test_repository_paths_exist() -> None:
    problems = [problem for path in DOC_FILES() for problem in missing_paths(path)]
    assert not problems, "\n".join(problems)


def test_quoted_log_lines_are_printed_by_the_code() -> None:
    problems = [problem for path in DOC_FILES() for problem in unprintable_log_lines(path)]
    assert not problems, "\n".join(problems)


def test_the_checks_catch_planted_mistakes() -> None:
    """Each check fails on a planted mistake (a page that is never written to disk)."""
    planted = ROOT / "docs" / "planted.md"
    text = (
        "# Planted\n\nSee [metrics](metrics.md#no-such-anchor), [gone](gone.md), "
        "[here](#planted), `tests/no_such_file.py`, `docs/metrics.md`.\n\n"
        "A log line `D! diskstats: skipping line <text>` and `E! config: <file>: <key>`.\n"
    )
    assert dead_links(planted, text) == [
        "docs/planted.md: metrics.md#no-such-anchor: no such anchor",
        "docs/planted.md: gone.md: no such file",
    ]
    assert missing_paths(planted, text) == ["docs/planted.md: tests/no_such_file.py: no such path"]
    assert unprintable_log_lines(planted, text) == [
        "docs/planted.md: D! diskstats: skipping line <text>: no message of plugin/ starts so"
    ]
