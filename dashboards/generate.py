#!/usr/bin/env python3
"""Write diskprobe's dashboards and alert rules from dashboards/dashgen (see its README).

    python dashboards/generate.py            # rewrite every generated file
    python dashboards/generate.py --check    # exit 1 and list the files that differ
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from dashgen import prometheus_rules  # noqa: E402
from dashgen.rendered import Options, alert_table, render_all  # noqa: E402

GENERATED_DIRS = ("grafana", "chronograf", "alerts", "downsampling")
GENERATED_SUFFIXES = (".json", ".yaml", ".tick", ".iql", ".flux")
README = "README.md"
TABLE_START, TABLE_END = "<!-- alert-table:start -->\n", "<!-- alert-table:end -->"


def with_alert_table(readme: str) -> str:
    """dashboards/README.md with its alert table block regenerated."""
    start, end = readme.index(TABLE_START) + len(TABLE_START), readme.index(TABLE_END)
    return readme[:start] + alert_table() + readme[end:]


def stale(files: dict[str, str], root: Path = HERE) -> list[str]:
    """Generated files that differ from the output, are missing, or are left over."""
    differ = [path for path, text in files.items() if _read(root / path) != text]
    readme = _read(root / README)
    if readme is None or TABLE_START not in readme or with_alert_table(readme) != readme:
        differ.append(README)
    present = {
        str(path.relative_to(root))
        for directory in GENERATED_DIRS
        for path in (root / directory).rglob("*")
        if path.is_file() and path.suffix in GENERATED_SUFFIXES
    }
    return sorted(set(differ) | (present - set(files)))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    parser.add_argument("--database", default=Options.database,
                        help="database Chronograf and Kapacitor queries name (default telegraf)")
    parser.add_argument("--retention-policy", default=Options.retention_policy)
    parser.add_argument("--datasource-uid", default=Options.datasource_uid,
                        help="uid of the InfluxDB data source the Grafana alert rules query")
    args = parser.parse_args(argv)
    files = render_all(Options(args.database, args.retention_policy, args.datasource_uid))
    files.update(prometheus_rules.render())  # dashboards/prometheus/*.yaml
    if args.check:
        out_of_date = stale(files)
        for path in out_of_date:
            print(f"out of date: dashboards/{path}", file=sys.stderr)
        if out_of_date:
            print("run: python dashboards/generate.py", file=sys.stderr)
        return 1 if out_of_date else 0
    for path, text in files.items():
        target = HERE / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    readme = HERE / README
    readme.write_text(with_alert_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
    for path in stale(files):  # files no longer generated
        if path == README:
            raise SystemExit("dashboards/README.md lacks the alert-table markers")
        (HERE / path).unlink()
        print(f"removed dashboards/{path}")
    print(f"wrote {len(files)} files under dashboards/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
