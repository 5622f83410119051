"""Rewrite everything in the docs that is generated from the code, and the dashboards.

Run after changing the schema, the config spec, the verdict rules or the dashboards:

    .venv/bin/python tests/update_generated.py [--skip-example-output]

then review the diff; tests/test_docs.py (and the tests of each generated file) fail until
the files match. It rewrites the generated blocks of README.md, docs/*.md,
telegraf/prometheus.md and telegraf/collectd/README.md, the README's example output (a real
`diskprobe --once` on this machine, see example_output.py), telegraf/diskprobe.toml with the
ConfigMap that embeds it, and calls dashboards/generate.py (dashboards, alert files and the
alert table of dashboards/README.md).

Not the SMART golden cases: tests/golden/regenerate.py rewrites those, and a golden case is
reviewed case by case, never regenerated along with the docs.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

from diskprobe.config.sample import render_sample_config
from diskprobe.schema import MEASUREMENTS, MeasurementSpec, render_markdown
from diskprobe.smart.verdict_table import render_afr_table, render_table

ROOT = Path(__file__).resolve().parent.parent
DASHBOARDS = ROOT / "dashboards"

# The README's metric overview: what one point stands for, and the fields most queries use
# (an editorial choice; every field is in docs/metrics.md). A measurement missing here shows
# its first fields; a key field missing from the schema stops the generator.
OVERVIEW: dict[str, tuple[str, tuple[str, ...]]] = {
    "diskprobe_io": (
        "block device",
        ("reads_per_sec", "writes_per_sec", "read_bytes_per_sec", "write_bytes_per_sec",
         "await_ms", "queue_size", "util_percent"),
    ),
    "diskprobe_fs": (
        "mounted filesystem",
        ("used_percent", "avail_bytes", "inodes_used_percent", "responsive",
         "fill_rate_bytes_per_sec", "time_to_full_sec"),
    ),
    "diskprobe_smart": (
        "drive and SMART read",
        ("verdict", "verdict_reasons", "health_ok", "temperature_c", "reallocated_sectors",
         "pending_sectors", "percentage_used", "exit_status"),
    ),
    "diskprobe_smart_attr": ("ATA attribute and read", ("value", "worst", "threshold", "raw")),
    "diskprobe_pressure": ("host", ("some_avg10", "full_avg10", "some_stall_us_per_sec")),
    "diskprobe_process_io": (
        "busy or waiting process name and user",
        ("read_bytes_per_sec", "write_bytes_per_sec", "blkio_wait_ratio", "pid", "cmdline"),
    ),
    "diskprobe_cgroup_io": (
        "busy cgroup and device",
        ("read_bytes_per_sec", "write_bytes_per_sec", "some_avg10"),
    ),
    "diskprobe_training": (
        "window of steps of a training job's rank (sent by the job)",
        ("input_wait_ratio", "step_time_sec", "bottleneck", "checkpoint_ratio"),
    ),
    "diskprobe_agent": (
        "collector and batch",
        ("duration_ms", "errors", "items", "dropped_points"),
    ),
}


def _synopsis_item(action: argparse.Action) -> str:
    """One bracketed item of the synopsis: `[doctor|sudoers]`, `[--once]`, `[--url URL]`."""
    choices = "|".join(str(choice) for choice in action.choices or ())
    if not action.option_strings:
        return f"[{choices}]"
    flag = max(action.option_strings, key=len)
    if action.nargs == 0:
        return f"[{flag}]"
    return f"[{flag} {choices or action.metavar or action.dest.upper()}]"


def command_line() -> str:
    """The README's command-line synopsis and option table, from the parser itself."""
    from diskprobe.cli import build_parser

    actions = [a for a in build_parser()._actions if not isinstance(a, argparse._HelpAction)]
    lines, current = [], "diskprobe"
    for item in map(_synopsis_item, actions):
        if len(current) + 1 + len(item) > 92:
            lines.append(current)
            current = " " * len("diskprobe")
        current += " " + item
    rows = ["| argument | what it does |", "| --- | --- |"]
    for action in actions:
        item = _synopsis_item(action)[1:-1].replace("|", "\\|")
        what = (action.help or "").replace("|", "\\|")
        rows.append(f"| `{item}` | {what} |")
    return "```text\n" + "\n".join([*lines, current]) + "\n```\n\n" + "\n".join(rows) + "\n"


def _code_list(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names) if names else "none"


def _overview_row(spec: MeasurementSpec) -> str:
    point_per, key_fields = OVERVIEW.get(spec.name, ("", ()))
    names = [field.name for field in spec.fields]
    unknown = [name for name in key_fields if name not in names]
    if unknown:
        raise SystemExit(f"update_generated: OVERVIEW names fields {spec.name} lacks: {unknown}")
    shown = list(key_fields) or names[:4]
    link = f"[`{spec.name}`](docs/metrics.md#{spec.name})"
    tags = _code_list([tag.name for tag in spec.tags])
    return f"| {link} | {point_per} | {tags} | {_code_list(shown)} | {len(names)} |"


def metric_overview() -> str:
    """The README's Metrics table: one row per measurement of the schema."""
    lines = [
        "| measurement | one point per | tags | key fields | fields |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [_overview_row(spec) for spec in MEASUREMENTS]
    return "\n".join(lines) + "\n"


def metric_tables() -> str:
    """docs/metrics.md's body: every field of every measurement, with type and unit."""
    return render_markdown().rstrip() + "\n"


def sample_config_block() -> str:
    return "```toml\n" + render_sample_config() + "```\n"


def _dashboards_generator() -> ModuleType:
    """dashboards/generate.py, imported (it puts dashboards/ on sys.path for dashgen)."""
    if str(DASHBOARDS) not in sys.path:
        sys.path.insert(0, str(DASHBOARDS))
    import generate

    return generate


def dashboard_alert_table() -> str:
    """The alert table of the dashboards' generator, as dashboards/README.md carries it."""
    return str(_dashboards_generator().alert_table())


def _prometheus_names() -> str:
    from diskprobe.serializers import prometheus

    return str(prometheus.render_table())


def _collectd_mapping() -> str:
    from diskprobe.serializers import collectd

    return str(collectd.render_mapping())


# Every generated block of the Markdown files: (file, block name, renderer).
BLOCKS: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("README.md", "command-line", command_line),
    ("README.md", "sample-config", sample_config_block),
    ("README.md", "metrics-overview", metric_overview),
    ("docs/metrics.md", "metrics", metric_tables),
    ("docs/smart.md", "verdict-table", render_table),
    ("docs/smart.md", "afr-table", render_afr_table),
    ("docs/dashboards.md", "alert-table", dashboard_alert_table),
    ("telegraf/prometheus.md", "prometheus-names", _prometheus_names),
    ("telegraf/collectd/README.md", "collectd-mapping", _collectd_mapping),
)


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(f"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"update_generated: no {name} block")
    return pattern.sub(lambda match: match.group(1) + body + match.group(3), text)


def rewrite_blocks() -> list[str]:
    """Rewrite every block of BLOCKS; the files that changed."""
    changed = []
    for relative, name, render in BLOCKS:
        path = ROOT / relative
        text = path.read_text(encoding="utf-8")
        new = replace_block(text, name, render())
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(relative)
    return changed


def rewrite_example_output() -> None:
    from example_output import example_block

    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    readme.write_text(replace_block(text, "example-output", example_block()), encoding="utf-8")


def rewrite_deployment_files() -> None:
    """telegraf/diskprobe.toml and the ConfigMap copies (tests/test_deploy_files.py's own)."""
    from test_deploy_files import regenerate

    regenerate()


def rewrite_dashboards() -> None:
    status = _dashboards_generator().main([])
    if status:
        raise SystemExit(f"dashboards/generate.py exited {status}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-example-output", action="store_true",
                        help="keep the README's example output (its run needs root)")
    args = parser.parse_args(argv)
    rewrite_dashboards()
    rewrite_deployment_files()
    for relative in rewrite_blocks():
        print(f"rewrote generated blocks in {relative}")
    if not args.skip_example_output:
        rewrite_example_output()
        print("rewrote the example output in README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
