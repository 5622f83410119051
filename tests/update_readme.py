"""Rewrite the README's generated blocks (metrics, sample config) from the code.

Run after changing the schema or the config spec: `.venv/bin/python tests/update_readme.py`,
then review the diff. tests/test_docs.py fails until the README matches.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from diskprobe.sample_config import render_sample_config
from diskprobe.schema import render_markdown
from diskprobe.smart.verdict import render_table

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Other documents with blocks generated from the code: (file, block, renderer).
GENERATED = (
    (ROOT / "telegraf" / "prometheus.md", "prometheus-names", "prometheus"),
    (ROOT / "telegraf" / "collectd" / "README.md", "collectd-mapping", "collectd"),
)


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(f"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README has no {name} block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text)


def dashboard_alert_table() -> str:
    """The alert table of the dashboards' generator (dashboards/dashgen)."""
    sys.path.insert(0, str(ROOT / "dashboards"))
    from dashgen.outputs import alert_table

    return str(alert_table())


def main() -> None:
    text = README.read_text()
    text = replace_block(text, "metrics", render_markdown().rstrip() + "\n")
    text = replace_block(text, "sample-config", "```toml\n" + render_sample_config() + "```\n")
    text = replace_block(text, "verdict-table", render_table())
    text = replace_block(text, "alert-table", dashboard_alert_table())
    README.write_text(text)
    from diskprobe.serializers import collectd, prometheus

    renderers = {"prometheus": prometheus.render_table, "collectd": collectd.render_mapping}
    for path, block, name in GENERATED:
        path.write_text(replace_block(path.read_text(), block, renderers[name]()))


if __name__ == "__main__":
    main()
