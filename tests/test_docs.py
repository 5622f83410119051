"""The README is held to the code: metrics, sample config, example output, snippets, commands."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from diskprobe.metric import Metric
from diskprobe.sample_config import render_sample_config
from diskprobe.schema import MEASUREMENTS, render_markdown
from diskprobe.smart.verdict import render_table

from helpers import assert_schema
from lineproto import parse_lines

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _block(name: str) -> str:
    match = re.search(f"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", README, re.S)
    assert match, f"README has no {name} block"
    return match.group(1)


def _fenced(text: str) -> str:
    match = re.search(r"```[a-z]*\n(.*?)```", text, re.S)
    assert match
    return match.group(1)


def test_metrics_section_is_the_schema() -> None:
    assert _block("metrics") == render_markdown().rstrip() + "\n"
    for spec in MEASUREMENTS:
        for field in spec.fields:
            assert f"| `{field.name}` | {field.type} |" in README


def test_alert_table_is_the_generators() -> None:
    from update_readme import dashboard_alert_table

    assert _block("alert-table") == dashboard_alert_table()


def test_verdict_table_is_the_rules() -> None:
    assert _block("verdict-table") == render_table()


def test_configuration_section_is_the_sample_config() -> None:
    assert _fenced(_block("sample-config")) == render_sample_config()


def test_example_output_parses_and_fits_the_schema() -> None:
    points = parse_lines(_fenced(_block("example-output")))
    assert {p.measurement for p in points} == {"diskprobe_io", "diskprobe_agent"}
    assert_schema([Metric(p.measurement, p.tags, p.fields, p.time_ns) for p in points])


def test_execd_snippet_is_valid_telegraf_toml() -> None:
    snippet = next(
        block for block in re.findall(r"```toml\n(.*?)```", README, re.S) if "inputs.execd" in block
    )
    execd = tomllib.loads(snippet)["inputs"]["execd"][0]
    assert execd["signal"] == "none" and execd["data_format"] == "influx"
    assert execd["restart_delay"] == "10s" and execd["command"][0].endswith("/diskprobe")


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) >= 2 and commands[1] == "./tests/run.sh"
    assert "exec ./tests/run.sh" in (ROOT / ".ci" / "run").read_text()
    assert "diskprobe --once" in commands[0]
