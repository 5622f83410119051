"""The growth table and 10,000-host estimate from two printed bench_fleet.py outputs, for
runs done as separate processes (one size each, e.g. to overlap one size's generation with
the other's VictoriaMetrics pass):

    .venv/bin/python tests/bench/fleet_sim_growth.py n100.txt n1000.txt

Reads each output's "-- queries at N = ..." and "-- ingest at N = ..." tables back (the
medians are printed to the millisecond) and prints fleet_sim_report.print_growth's table.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: shared helpers
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_sim_ingest import Ingest
from fleet_sim_queries import Query
from fleet_sim_report import print_growth

SLOW_S = 1.0


@dataclass
class Parsed:
    hosts: int
    ingests: list[Ingest] = field(default_factory=list)
    disk: dict[str, int] = field(default_factory=dict)
    queries: list[Query] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fired: str = ""
    long_range: list[Query] = field(default_factory=list)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse(text: str) -> Parsed:
    hosts = int(re.search(r"-- queries at N = (\d+)", text).group(1))  # type: ignore[union-attr]
    parsed = Parsed(hosts)
    section = ""
    for line in text.splitlines():
        if line.startswith("-- "):
            section = line.split(" at N")[0]
            continue
        cells = [cell.strip() for cell in line.split(" | ")]
        if section == "-- ingest" and len(cells) == 7 and cells[1][:1].isdigit():
            parsed.ingests.append(Ingest(cells[0], int(_number(cells[1])),
                                         int(_number(cells[2])), _number(cells[3]),
                                         int(cells[6])))
        elif section == "-- queries" and len(cells) == 4 and cells[1] not in ("median s", "-"):
            query = Query(cells[0], "", True, [_number(cells[1])], int(cells[2]))
            query.timed_out = cells[3].startswith("TIMED OUT")
            parsed.queries.append(query)
    return parsed


def main(argv: list[str]) -> int:
    small, large = (parse(Path(name).read_text(encoding="utf-8")) for name in argv[1:3])
    print_growth(small, large, SLOW_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
